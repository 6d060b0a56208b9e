// The trace store: a launch written and read back (record, contents, findings, per-program accesses
// and loop trips checked against values computed by hand from the kernels), the budget's sample rule,
// independence from the thread count, and clear errors for files that are not this version's traces.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "src/trace/contents.h"
#include "src/trace/recorder.h"
#include "src/trace/sqlite.h"
#include "tilescope/ir/diag.h"
#include "tilescope/report/report.h"
#include "tilescope/trace/query.h"
#include "tilescope/trace/trace.h"

namespace tilescope::trace {
namespace {
namespace fs = std::filesystem;

// out[i] = x[i] for i < n, 32 lanes per program; the load has no mask (reads past x when n % 32 != 0:
// an out-of-bounds finding), the store is masked by i < n.
const char* kCopy = R"(module {
  tt.func public @copy_kernel(%x_ptr: !tt.ptr<f32>, %out_ptr: !tt.ptr<f32>, %n: i32) attributes {noinline = false} {
    %c32_i32 = arith.constant 32 : i32
    %pid = tt.get_program_id x : i32
    %base = arith.muli %pid, %c32_i32 : i32
    %r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %bs = tt.splat %base : i32 -> tensor<32xi32>
    %offs = arith.addi %bs, %r : tensor<32xi32>
    %xs = tt.splat %x_ptr : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
    %x = tt.load %xp : tensor<32x!tt.ptr<f32>>
    %ns = tt.splat %n : i32 -> tensor<32xi32>
    %m = arith.cmpi slt, %offs, %ns : tensor<32xi32>
    %os = tt.splat %out_ptr : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
    %op = tt.addptr %os, %offs : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
    tt.store %op, %x, %m : tensor<32x!tt.ptr<f32>>
    tt.return
  }
})";

// out[pid] = sum of x[0 .. pid + 1): program p runs p + 1 loop iterations, one scalar load each.
const char* kLoop = R"(module {
  tt.func public @prefix_kernel(%x_ptr: !tt.ptr<f32>, %out_ptr: !tt.ptr<f32>) attributes {noinline = false} {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %zero = arith.constant 0.000000e+00 : f32
    %pid = tt.get_program_id x : i32
    %k = arith.addi %pid, %c1 : i32
    %s = scf.for %i = %c0 to %k step %c1 iter_args(%acc = %zero) -> (f32)  : i32 {
      %p = tt.addptr %x_ptr, %i : !tt.ptr<f32>, i32
      %v = tt.load %p : !tt.ptr<f32>
      %a = arith.addf %acc, %v : f32
      scf.yield %a : f32
    }
    %o = tt.addptr %out_ptr, %pid : !tt.ptr<f32>, i32
    tt.store %o, %s : !tt.ptr<f32>
    tt.return
  }
})";

// out[pid] = pid, counted up by an scf.while: program p runs p iterations.
const char* kWhile = R"(module {
  tt.func public @count_kernel(%out_ptr: !tt.ptr<i32>) attributes {noinline = false} {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %pid = tt.get_program_id x : i32
    %r = scf.while (%i = %c0) : (i32) -> i32 {
      %cond = arith.cmpi slt, %i, %pid : i32
      scf.condition(%cond) %i : i32
    } do {
    ^bb0(%j: i32):
      %n = arith.addi %j, %c1 : i32
      scf.yield %n : i32
    }
    %o = tt.addptr %out_ptr, %pid : !tt.ptr<i32>, i32
    tt.store %o, %r : !tt.ptr<i32>
    tt.return
  }
})";

struct Copy {
  std::vector<float> x, out;
  launch::LaunchRecord rec;
  explicit Copy(int64_t n) : x(static_cast<size_t>(n)), out(static_cast<size_t>(n), 0.0f) {
    for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i) * 0.5f;
    rec.ttir = kCopy;
    rec.ttir_file = "copy.ttir";
    rec.grid = {(n + 31) / 32, 1, 1};
    rec.args = {launch::ArgRecord::buffer("x_ptr", ir::Elem::f32, reinterpret_cast<std::byte*>(x.data()),
                                          n * 4, {n}, {1}),
                launch::ArgRecord::buffer("out_ptr", ir::Elem::f32, reinterpret_cast<std::byte*>(out.data()),
                                          n * 4, {n}, {1}),
                launch::ArgRecord::scalar("n", n)};
    rec.stack = {"prog.py:3 in main"};
  }
};

launch::RunOptions sanitize(int threads = 0) {
  launch::RunOptions o;
  o.analyses.push_back({"sanitizer", nullptr});
  o.threads = threads;
  return o;
}

class TempTrace : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ =
        (fs::temp_directory_path() / fmt::format("tilescope-trace-test-{}-{}.tstrace", getpid(), counter_++))
            .string();
    fs::remove(path_);
  }
  void TearDown() override {
    fs::remove(path_);
    fs::remove(path_ + "-journal");
  }
  std::string path_;
  static inline int counter_ = 0;
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST_F(TempTrace, RoundTripOfALaunch) {
  Copy c(100);  // 4 programs; program 3 reads offsets 100..127 out of bounds, stores 96..99
  auto k = launch::compile(c.rec.ttir, c.rec.ttir_file);
  launch::RunResult r;
  {
    Writer w(path_);
    r = w.run(*k, c.rec, sanitize());
  }
  ASSERT_EQ(r.findings.size(), 1u);
  Reader rd(path_);
  ASSERT_EQ(rd.launches(), std::vector<int64_t>{1});
  StoredLaunch s = rd.launch(1);
  EXPECT_EQ(s.record.ttir, kCopy);
  EXPECT_EQ(s.record.grid, (std::array<int64_t, 3>{4, 1, 1}));
  ASSERT_EQ(s.record.args.size(), 3u);
  EXPECT_EQ(s.record.args[0].name, "x_ptr");
  EXPECT_EQ(s.record.args[1].shape, std::vector<int64_t>{100});
  EXPECT_EQ(s.record.stack, c.rec.stack);
  ASSERT_EQ(s.analyses.size(), 1u);
  EXPECT_EQ(s.analyses[0].name, "sanitizer");
  EXPECT_EQ(s.findings, report::to_json(r.findings));
  EXPECT_EQ(s.findings[0]["kind"], "out-of-bounds-load");
  // Contents before: x as given, out all zeros.
  ASSERT_TRUE(s.before[0] && s.before[1]);
  ASSERT_EQ(s.before[0]->size(), 400u);
  EXPECT_EQ(std::memcmp(s.before[0]->data(), c.x.data(), 400), 0);
  for (std::byte b : *s.before[1]) ASSERT_EQ(b, std::byte{0});
  EXPECT_FALSE(s.before[2]);  // a scalar
  EXPECT_EQ(s.dropped, nlohmann::json::object());

  Db db(path_, false);
  // Per program: the load reads 32 consecutive elements from 32p (program 3: 96..99 in bounds, 28 lanes
  // out); the store writes the active lanes (program 3: 4).
  Stmt acc(
      db,
      "SELECT a.pid_x, s.op, a.arg, a.lanes, a.active, a.oob, a.runs, a.oob_runs FROM accesses a JOIN "
      "launches l ON "
      "l.id = a.launch JOIN sites s ON s.kernel = l.kernel AND s.site = a.site ORDER BY a.pid_x, a.site");
  int n = 0;
  while (acc.step()) {
    const int64_t p = acc.i64(0);
    const bool load = acc.text(1) == "tt.load";
    const bool last = p == 3;
    auto runs = acc.bytes(6);
    ASSERT_EQ(runs.size(), 16u) << n;
    int64_t run[2];
    std::memcpy(run, runs.data(), 16);
    EXPECT_EQ(acc.i64(2), load ? 0 : 1);
    EXPECT_EQ(acc.i64(3), 32);
    EXPECT_EQ(acc.i64(4), load ? 32 : (last ? 4 : 32));
    EXPECT_EQ(acc.i64(5), load && last ? 28 : 0);
    EXPECT_EQ(run[0], 32 * p);
    EXPECT_EQ(run[1], last ? 4 : 32);
    auto oob = acc.bytes(7);
    if (load && last) {  // lanes 4..31 read elements 100..127 of x, past its end
      ASSERT_EQ(oob.size(), 16u);
      std::memcpy(run, oob.data(), 16);
      EXPECT_EQ(run[0], 100);
      EXPECT_EQ(run[1], 28);
    } else {
      EXPECT_EQ(oob.size(), 0u);
    }
    ++n;
  }
  EXPECT_EQ(n, 8);
  // Every element of x read once and of out written once.
  Stmt cnt(db, "SELECT arg, loads, stores FROM element_counts ORDER BY arg");
  ASSERT_TRUE(cnt.step());
  auto pairs = cnt.bytes(1);
  ASSERT_EQ(pairs.size(), 16u);
  int64_t rle[2];
  std::memcpy(rle, pairs.data(), 16);
  EXPECT_EQ(rle[0], 1);
  EXPECT_EQ(rle[1], 100);
  // The after contents: out == x.
  Stmt after(
      db, "SELECT data FROM content_chunks WHERE launch = 1 AND arg = 1 AND phase = 'after' AND chunk = 0");
  ASSERT_TRUE(after.step());
  ASSERT_EQ(after.bytes(0).size(), 400u);
  EXPECT_EQ(std::memcmp(after.bytes(0).data(), c.x.data(), 400), 0);
  // The summary names the kernel and the finding.
  const std::string sum = rd.summary();
  EXPECT_NE(sum.find("copy_kernel"), std::string::npos) << sum;
  EXPECT_NE(sum.find("out-of-bounds"), std::string::npos) << sum;
}

// Contents larger than a chunk (kChunkBytes) are split into rows of at most that many bytes, in order,
// and read back whole by both readers; a missing chunk is a damaged trace, not short or zero bytes.
TEST_F(TempTrace, LargeContentsAreChunked) {
  const int64_t n = int64_t{1} << 19;  // 2 MiB of f32, 32 lanes per program: no out-of-bounds lane
  Copy c(n + 64);
  auto k = launch::compile(c.rec.ttir, "copy.ttir");
  {
    Writer w(path_);
    EXPECT_TRUE(w.run(*k, c.rec, sanitize()).findings.empty());
  }
  const uint64_t bytes = static_cast<uint64_t>(n + 64) * 4;
  {
    Db db(path_, false);
    Stmt rows(
        db,
        "SELECT chunk, length(data) FROM content_chunks WHERE launch = 1 AND arg = 0 AND phase = 'before' "
        "ORDER BY chunk");
    const std::vector<std::pair<int64_t, int64_t>> expect = {
        {0, int64_t{1} << 20}, {1, int64_t{1} << 20}, {2, static_cast<int64_t>(bytes - (2u << 20))}};
    for (const auto& [chunk, len] : expect) {
      ASSERT_TRUE(rows.step());
      EXPECT_EQ(rows.i64(0), chunk);
      EXPECT_EQ(rows.i64(1), len);
    }
    EXPECT_FALSE(rows.step());
  }
  {
    Reader rd(path_);
    StoredLaunch s = rd.launch(1);
    ASSERT_TRUE(s.before[0]);
    ASSERT_EQ(s.before[0]->size(), bytes);
    EXPECT_EQ(std::memcmp(s.before[0]->data(), c.x.data(), bytes), 0);
    Query q(path_);
    const std::string after = q.contents(1, 1, "after");  // out = x
    ASSERT_EQ(after.size(), bytes);
    EXPECT_EQ(std::memcmp(after.data(), c.x.data(), bytes), 0);
  }
  {
    Db db(path_, true);
    db.exec("DELETE FROM content_chunks WHERE launch = 1 AND arg = 0 AND phase = 'before' AND chunk = 1");
  }
  EXPECT_NE(error_of([&] { Reader(path_).launch(1); }).find("miss a chunk: the trace is damaged"),
            std::string::npos);
  EXPECT_NE(error_of([&] { Query(path_).contents(1, 0, "before"); }).find("miss a chunk"), std::string::npos);
}

TEST_F(TempTrace, LoopTripsAndLaunchesAppend) {
  std::vector<float> x(8, 1.0f), out(8, 0.0f);
  launch::LaunchRecord rec;
  rec.ttir = kLoop;
  rec.grid = {8, 1, 1};
  rec.args = {
      launch::ArgRecord::buffer("x_ptr", ir::Elem::f32, reinterpret_cast<std::byte*>(x.data()), 32, {8}, {1}),
      launch::ArgRecord::buffer("out_ptr", ir::Elem::f32, reinterpret_cast<std::byte*>(out.data()), 32, {8},
                                {1})};
  auto k = launch::compile(rec.ttir, "loop.ttir");
  {
    Writer w(path_);
    w.run(*k, rec, sanitize());
  }
  {
    Writer w(path_);  // a second process of the run opens the same file and appends
    w.run(*k, rec, sanitize());
  }
  EXPECT_EQ(out[7], 8.0f);
  Reader rd(path_);
  EXPECT_EQ(rd.launches(), (std::vector<int64_t>{1, 2}));
  Db db(path_, false);
  Stmt loops(db, "SELECT pid_x, executions, trips FROM loops WHERE launch = 2 ORDER BY pid_x");
  for (int p = 0; p < 8; ++p) {
    ASSERT_TRUE(loops.step());
    EXPECT_EQ(loops.i64(0), p);
    EXPECT_EQ(loops.i64(1), 1);
    EXPECT_EQ(loops.i64(2), p + 1);
  }
  // x[j] is read by programs j..7: 8 - j times.
  Stmt cnt(db, "SELECT loads FROM element_counts WHERE launch = 1 AND arg = 0");
  ASSERT_TRUE(cnt.step());
  auto b = cnt.bytes(0);
  ASSERT_EQ(b.size(), 8u * 16u);
  std::vector<int64_t> pairs(16);
  std::memcpy(pairs.data(), b.data(), b.size());
  for (int j = 0; j < 8; ++j) {
    EXPECT_EQ(pairs[2 * j], 8 - j);
    EXPECT_EQ(pairs[2 * j + 1], 1);
  }
  // The kernel's text is stored once.
  Stmt kernels(db, "SELECT count(*) FROM kernels");
  ASSERT_TRUE(kernels.step());
  EXPECT_EQ(kernels.i64(0), 1);
}

TEST_F(TempTrace, WhileLoopTripsPerProgram) {
  std::vector<int32_t> out(6, -1);
  launch::LaunchRecord rec;
  rec.ttir = kWhile;
  rec.grid = {6, 1, 1};
  rec.args = {launch::ArgRecord::buffer("out_ptr", ir::Elem::i32, reinterpret_cast<std::byte*>(out.data()),
                                        24, {6}, {1})};
  auto k = launch::compile(rec.ttir, "while.ttir");
  {
    Writer w(path_);
    w.run(*k, rec, sanitize());
  }
  for (int p = 0; p < 6; ++p) EXPECT_EQ(out[p], p);
  Db db(path_, false);
  Stmt loops(db,
             "SELECT l.pid_x, l.executions, l.trips, s.op FROM loops l JOIN sites s ON s.site = l.site "
             "WHERE l.launch = 1 ORDER BY l.pid_x");
  for (int p = 0; p < 6; ++p) {
    ASSERT_TRUE(loops.step());
    EXPECT_EQ(loops.i64(0), p);
    EXPECT_EQ(loops.i64(1), 1);
    EXPECT_EQ(loops.i64(2), p);
    EXPECT_EQ(loops.text(3), "scf.while");
  }
  EXPECT_FALSE(loops.step());
}

// An empty tensor (0 bytes, possibly a null pointer) is stored as an empty blob, not as dropped: the
// launch replays. A directory is not a trace file.
TEST_F(TempTrace, EmptyArgumentsAreStoredAndDirectoriesRefused) {
  std::vector<int32_t> out(3, -1);
  launch::LaunchRecord rec;
  rec.ttir = kWhile;
  rec.grid = {3, 1, 1};
  rec.args = {launch::ArgRecord::buffer("out_ptr", ir::Elem::i32, reinterpret_cast<std::byte*>(out.data()),
                                        12, {3}, {1})};
  auto k = launch::compile(rec.ttir, "while.ttir");
  {
    Writer w(path_);
    launch::LaunchRecord empty = rec;
    // The same kernel with its output empty: every store is out of bounds, the launch still records.
    empty.args[0] = launch::ArgRecord::buffer("out_ptr", ir::Elem::i32, nullptr, 0, {0}, {1});
    w.run(*k, empty, sanitize());
  }
  Reader rd(path_);
  StoredLaunch l = rd.launch(1);
  ASSERT_TRUE(l.before[0].has_value());
  EXPECT_TRUE(l.before[0]->empty());
  EXPECT_EQ(l.dropped, nlohmann::json::object());
  ReplayMemory memory(l, "test");  // no "dropped by the budget" error
  EXPECT_EQ(error_of([&] { Writer w(fs::temp_directory_path().string()); }),
            fs::temp_directory_path().string() + ": is a directory, not a trace file");
  EXPECT_EQ(error_of([&] { create(fs::temp_directory_path().string()); }),
            fs::temp_directory_path().string() + ": is a directory, not a trace file");
}

// The sample rule: the programs whose linear id is a multiple of the smallest power-of-two stride whose
// detail fits; the same whatever the thread count.
TEST(Recorder, SamplesProgramsByTheDocumentedRule) {
  for (int threads : {1, 4}) {
    Copy c(32 * 64);  // 64 programs, each with a load row and a store row of one run each
    auto k = launch::compile(c.rec.ttir, c.rec.ttir_file);
    const int64_t per_program = 2 * row_bytes(2);
    Recorder rec(k->module(), per_program * 17);  // 16 programs fit, 32 do not: stride 4
    launch::RunOptions o = sanitize(threads);
    o.observers.push_back(&rec);
    launch::run_launch(*k, c.rec, o);
    EXPECT_EQ(rec.stride(), 4) << threads;
    auto d = rec.take_detail();
    ASSERT_EQ(d.size(), 16u) << threads;
    for (size_t i = 0; i < d.size(); ++i) EXPECT_EQ(d[i]->linear, static_cast<int64_t>(4 * i));
    // The aggregates cover every program.
    int64_t executions = 0;
    for (const SiteStats& s : rec.site_stats()) executions += s.executions;
    EXPECT_EQ(executions, 128);
  }
  Copy c(32 * 64);
  auto k = launch::compile(c.rec.ttir, c.rec.ttir_file);
  Recorder none(k->module(), 10);  // program 0 alone does not fit: no detail
  launch::RunOptions o = sanitize();
  o.observers.push_back(&none);
  launch::run_launch(*k, c.rec, o);
  EXPECT_EQ(none.stride(), 0);
  EXPECT_TRUE(none.take_detail().empty());
}

TEST_F(TempTrace, BudgetDropsContentsAndDetailAndSaysSo) {
  Copy c(32 * 64);  // 8 KiB per argument
  auto k = launch::compile(c.rec.ttir, c.rec.ttir_file);
  create(path_, 6000);
  {
    Writer w(path_);
    w.run(*k, c.rec, sanitize());
  }
  Reader rd(path_);
  StoredLaunch s = rd.launch(1);
  EXPECT_FALSE(s.before[0]);
  ASSERT_TRUE(s.dropped.contains("contents_before")) << s.dropped.dump();
  EXPECT_EQ(s.dropped["contents_before"], (nlohmann::json{"x_ptr", "out_ptr"}));
  EXPECT_EQ(s.dropped["contents_after"], (nlohmann::json{"x_ptr", "out_ptr"}));
  ASSERT_TRUE(s.dropped.contains("detail")) << s.dropped.dump();
  const int64_t stride = s.dropped["detail"]["stride"].get<int64_t>();
  EXPECT_GT(stride, 1);
  Db db(path_, false);
  Stmt kept(db, "SELECT count(DISTINCT pid_x), max(pid_x % ?) FROM accesses");
  kept.bind(1, stride);
  ASSERT_TRUE(kept.step());
  EXPECT_EQ(kept.i64(0), s.dropped["detail"]["programs_kept"].get<int64_t>());
  EXPECT_EQ(kept.i64(1), 0);
  // Aggregates still cover all 64 programs.
  Stmt agg(db, "SELECT sum(executions) FROM site_stats WHERE launch = 1");
  ASSERT_TRUE(agg.step());
  EXPECT_EQ(agg.i64(0), 128);
}

TEST_F(TempTrace, RecordsTheSameWhateverTheThreadCount) {
  std::string dump[2];
  for (int i = 0; i < 2; ++i) {
    Copy c(32 * 40 + 5);
    auto k = launch::compile(c.rec.ttir, c.rec.ttir_file);
    create(path_, 20000);  // a budget that samples
    {
      Writer w(path_);
      w.run(*k, c.rec, sanitize(i == 0 ? 1 : 4));
    }
    Db db(path_, false);
    Stmt s(db,
           "SELECT site, pid_x, seq, arg, kind, lanes, active, oob, hex(runs) FROM accesses ORDER BY rowid");
    while (s.step())
      for (int col = 0; col < 9; ++col) dump[i] += s.text(col) + (col == 8 ? "\n" : "|");
    Stmt d(db, "SELECT dropped FROM launches");
    ASSERT_TRUE(d.step());
    dump[i] += d.text(0);
  }
  EXPECT_FALSE(dump[0].empty());
  EXPECT_EQ(dump[0], dump[1]);
}

TEST_F(TempTrace, ThreadsOfOneProcessShareAWriter) {
  Writer w(path_);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) {
        if (t == 0) {
          Copy c(64 + i);
          w.run(*launch::compile(c.rec.ttir, c.rec.ttir_file), c.rec, sanitize(1));
        } else {
          std::vector<float> x(8, 1.0f), out(8);
          launch::LaunchRecord rec;
          rec.ttir = kLoop;
          rec.grid = {8, 1, 1};
          rec.args = {launch::ArgRecord::buffer("x_ptr", ir::Elem::f32,
                                                reinterpret_cast<std::byte*>(x.data()), 32, {8}, {1}),
                      launch::ArgRecord::buffer("out_ptr", ir::Elem::f32,
                                                reinterpret_cast<std::byte*>(out.data()), 32, {8}, {1})};
          w.run(*launch::compile(rec.ttir, "loop.ttir"), rec, sanitize(1));
        }
      }
    });
  for (auto& t : threads) t.join();
  Reader rd(path_);
  EXPECT_EQ(rd.launches().size(), 10u);
  Db db(path_, false);
  Stmt s(db, "SELECT name, count(*) FROM launches GROUP BY name ORDER BY name");
  ASSERT_TRUE(s.step());
  EXPECT_EQ(s.text(0), "copy_kernel");
  EXPECT_EQ(s.i64(1), 5);
  ASSERT_TRUE(s.step());
  EXPECT_EQ(s.text(0), "prefix_kernel");
  EXPECT_EQ(s.i64(1), 5);
}

TEST_F(TempTrace, DotSitesHoldTheirTileShapes) {
  const char* dot = R"(module {
  tt.func public @dot_kernel(%out_ptr: !tt.ptr<f32>) attributes {noinline = false} {
    %a = arith.constant dense<1.000000e+00> : tensor<16x8xf32>
    %b = arith.constant dense<1.000000e+00> : tensor<8x32xf32>
    %c = arith.constant dense<0.000000e+00> : tensor<16x32xf32>
    %d = tt.dot %a, %b, %c : tensor<16x8xf32> * tensor<8x32xf32> -> tensor<16x32xf32>
    tt.return
  }
})";
  launch::LaunchRecord rec;
  rec.ttir = dot;
  std::vector<float> out(1);
  rec.args = {launch::ArgRecord::buffer("out_ptr", ir::Elem::f32, reinterpret_cast<std::byte*>(out.data()), 4,
                                        {1}, {1})};
  auto k = launch::compile(rec.ttir, "dot.ttir");
  {
    Writer w(path_);
    w.run(*k, rec, sanitize());
  }
  Db db(path_, false);
  Stmt s(db, "SELECT op, dot FROM sites WHERE dot IS NOT NULL");
  ASSERT_TRUE(s.step());
  EXPECT_EQ(s.text(0), "tt.dot");
  EXPECT_EQ(nlohmann::json::parse(s.text(1)), (nlohmann::json{16, 32, 8}));  // [M, N, K]
  EXPECT_FALSE(s.step());
}

TEST_F(TempTrace, VersionMismatchIsAClearError) {
  create(path_);
  auto set_meta = [&](const std::string& key, const std::string& value) {
    Db db(path_, true);
    db.exec(fmt::format("UPDATE meta SET value = '{}' WHERE key = '{}'", value, key).c_str());
  };
  const int v = kFormatVersion;
  set_meta("version", std::to_string(v + 1));
  EXPECT_EQ(error_of([&] { Reader r(path_); }),
            fmt::format(
                "{}: trace format version {} is newer than this tilescope reads ({}); use a newer tilescope",
                path_, v + 1, v));
  EXPECT_NE(error_of([&] { Writer w(path_); }).find("newer than this tilescope reads"), std::string::npos);
  set_meta("version", std::to_string(v) + ".0");  // digits only: not read as version v
  EXPECT_EQ(
      error_of([&] { Reader r(path_); }),
      fmt::format("{}: unknown trace format version '{}.0' (this tilescope reads version {})", path_, v, v));
  set_meta("version", "x");
  EXPECT_EQ(error_of([&] { Reader r(path_); }),
            fmt::format("{}: unknown trace format version 'x' (this tilescope reads version {})", path_, v));
  // Older versions (1: before 'after' contents could be marked unchanged; 2: contents in one row) are
  // refused, not misread.
  for (const char* old : {"1", "2"}) {
    set_meta("version", old);
    EXPECT_EQ(
        error_of([&] { Reader r(path_); }),
        fmt::format("{}: unknown trace format version {} (this tilescope reads version {})", path_, old, v));
  }
  set_meta("version", std::to_string(v));
  set_meta("budget", "12k");
  EXPECT_EQ(error_of([&] { Writer w(path_); }),
            path_ + ": the trace is damaged (meta 'budget' is '12k', not a byte count)");
}

TEST_F(TempTrace, FilesThatAreNotTracesAreClearErrors) {
  EXPECT_EQ(error_of([&] { Reader r(path_); }), path_ + ": no such trace file");
  { std::ofstream(path_) << "x_ptr,out_ptr\n1,2\n"; }
  EXPECT_EQ(error_of([&] { Reader r(path_); }), path_ + ": not a tilescope trace (not an SQLite database)");
  EXPECT_EQ(error_of([&] { Writer w(path_); }), path_ + ": not a tilescope trace (not an SQLite database)");
  // create() never overwrites a file that is not a trace.
  EXPECT_EQ(error_of([&] { create(path_); }), path_ + ": not a tilescope trace (not an SQLite database)");
  fs::remove(path_);
  {
    Db db(path_, true);
    db.exec("CREATE TABLE t(x)");
  }
  EXPECT_EQ(error_of([&] { Reader r(path_); }),
            path_ + ": not a tilescope trace (an SQLite database without tilescope's meta table)");
}

TEST_F(TempTrace, TruncatedOrCorruptedFilesAreClearErrors) {
  Copy c(32 * 256);  // a file of many pages
  auto k = launch::compile(c.rec.ttir, c.rec.ttir_file);
  {
    Writer w(path_);
    w.run(*k, c.rec, sanitize());
  }
  const auto size = fs::file_size(path_);
  ASSERT_GT(size, 64u * 1024u);
  std::string bytes;
  {
    std::ifstream in(path_, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  fs::resize_file(path_, size / 2);
  std::string e = error_of([&] { Reader r(path_); });
  EXPECT_EQ(e.rfind(path_ + ": the trace is truncated or corrupted", 0), 0u) << e;
  // Garbage over pages in the middle (the header intact): two pages' worth (32 KiB pages), so that at
  // least one whole page is garbage.
  std::string bad = bytes;
  for (size_t i = size / 3; i < size / 3 + 65536 && i < size; ++i) bad[i] = static_cast<char>(i * 31 + 7);
  {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out << bad;
  }
  e = error_of([&] { Reader r(path_); });
  EXPECT_EQ(e.rfind(path_ + ": the trace is truncated or corrupted", 0), 0u) << e;
}

// Per-element counts from runs, against counting every element: few runs (kept as runs) and many
// (dense), with overlapping, repeated and empty-gap runs, added from several threads.
TEST(ElementCounts, EqualCountingEveryElement) {
  std::mt19937 rng(7);
  for (int runs : {3, 40, 5000, 60000}) {
    const int64_t n = 10000;
    ElementCounts counts;
    counts.init(n);
    std::vector<int64_t> expect(n, 0);
    std::vector<std::vector<ElementCounts::Run>> batches(4);
    for (int i = 0; i < runs; ++i) {
      const auto start = static_cast<uint32_t>(rng() % n);
      const auto len = static_cast<uint32_t>(1 + rng() % std::min<uint32_t>(300, n - start));
      batches[i % 4].push_back({start, len});
      for (uint32_t e = start; e < start + len; ++e) ++expect[e];
    }
    std::vector<std::thread> threads;
    for (const auto& b : batches)
      threads.emplace_back([&counts, &b] {
        for (size_t i = 0; i < b.size(); i += 7)
          counts.add(std::vector<ElementCounts::Run>(b.begin() + i, b.begin() + std::min(b.size(), i + 7)));
      });
    for (auto& t : threads) t.join();
    const std::vector<int64_t> rle = counts.rle();
    std::vector<int64_t> got;
    for (size_t i = 0; i + 1 < rle.size(); i += 2) {
      EXPECT_GT(rle[i + 1], 0);
      if (i > 0) {
        EXPECT_NE(rle[i], rle[i - 2]) << "adjacent pairs of equal count are merged";
      }
      got.insert(got.end(), static_cast<size_t>(rle[i + 1]), rle[i]);
    }
    EXPECT_EQ(got, expect) << runs << " runs";
  }
  ElementCounts none;
  none.init(5);
  EXPECT_EQ(none.rle(), (std::vector<int64_t>{0, 5}));
}

TEST(Contents, PeriodOfRepeatingBytes) {
  auto period = [](const std::string& s) {
    return period_of(reinterpret_cast<const std::byte*>(s.data()), s.size());
  };
  EXPECT_EQ(period(std::string(1000, '\0')), 1u);
  std::string pattern = "0123456789abcdef", sixteen;
  for (int i = 0; i < 64; ++i) sixteen += pattern;
  EXPECT_EQ(period(sixteen), 16u);
  std::string broken = sixteen;
  broken.back() = 'x';
  EXPECT_EQ(period(broken), 0u);
  EXPECT_EQ(period("abcabcabcabc"), 0u);  // 3 is not a period looked for
  EXPECT_EQ(period("a"), 0u);             // one byte: nothing repeats
  const std::string one = "ab";
  auto full = expand_contents(std::as_bytes(std::span(one)), 2, 8);
  ASSERT_TRUE(full.has_value());
  EXPECT_EQ(*full, "abababab");
  EXPECT_FALSE(expand_contents(std::as_bytes(std::span(one)), 4, 8).has_value());  // damaged
  EXPECT_FALSE(expand_contents(std::as_bytes(std::span(one)), 0, 8).has_value());
}

// The contents after a launch: an argument nothing was stored into is marked unchanged and reads as
// its before bytes; one that shares memory with an argument stored into is stored, though the
// launch never stored through it.
TEST_F(TempTrace, AfterContentsOfArgumentsNotStoredInto) {
  Copy c(64);
  auto k = launch::compile(c.rec.ttir, c.rec.ttir_file);
  {
    Writer w(path_);
    w.run(*k, c.rec, sanitize());
    // In place: out_ptr is x_ptr shifted by one element, n = 63 (the stores stay inside x).
    launch::LaunchRecord in_place = c.rec;
    in_place.args[1] = launch::ArgRecord::buffer(
        "out_ptr", ir::Elem::f32, reinterpret_cast<std::byte*>(c.x.data() + 1), 63 * 4, {63}, {1});
    in_place.args[2] = launch::ArgRecord::scalar("n", int64_t{63});
    w.run(*k, in_place, sanitize(1));
  }
  Db db(path_, false);
  Stmt s(
      db,
      "SELECT launch, arg, unchanged, chunks = 0 FROM contents WHERE phase = 'after' ORDER BY launch, arg");
  const std::vector<std::array<int64_t, 4>> expect = {{1, 0, 1, 1}, {1, 1, 0, 0}, {2, 0, 0, 0}, {2, 1, 0, 0}};
  for (const auto& e : expect) {
    ASSERT_TRUE(s.step());
    EXPECT_EQ((std::array<int64_t, 4>{s.i64(0), s.i64(1), s.i64(2), s.i64(3)}), e);
  }
  EXPECT_FALSE(s.step());
  Query q(path_);
  const std::string before = q.contents(1, 0, "before"), after = q.contents(1, 0, "after");
  ASSERT_EQ(after.size(), 64u * 4);
  EXPECT_EQ(after, before);
  // Launch 2 shifted x by one: its after bytes are x now.
  const std::string shifted = q.contents(2, 0, "after");
  ASSERT_EQ(shifted.size(), 64u * 4);
  EXPECT_EQ(std::memcmp(shifted.data(), c.x.data(), shifted.size()), 0);
  EXPECT_NE(q.contents(2, 0, "before"), shifted);
  // out was zeros before launch 1: stored as one byte and its period, read back whole.
  Stmt z(db,
         "SELECT c.period, length(k.data) FROM contents c JOIN content_chunks k USING (launch, arg, phase) "
         "WHERE launch = 1 AND arg = 1 AND phase = 'before'");
  ASSERT_TRUE(z.step());
  EXPECT_EQ(z.i64(0), 1);
  EXPECT_EQ(z.i64(1), 1);
  EXPECT_EQ(q.contents(1, 1, "before"), std::string(64 * 4, '\0'));
  // Python's reader agrees (tests/python/test_trace.py); the budget never drops an unchanged row.
  Stmt d(db, "SELECT dropped FROM launches WHERE id = 1");
  ASSERT_TRUE(d.step());
  EXPECT_EQ(d.text(0), "{}");
}

// A launch that ends its process is in the trace: its inputs (the first transaction, before the launch
// runs) and an error saying so; the file stays readable and the launch replays.
class ExitDuringLaunch : public exec::Observer {
 public:
  exec::Subscription on_launch_begin(const exec::LaunchContext&) override {
    exec::Subscription s;
    s.kinds = exec::kAccess;
    return s;
  }
  void on_access(const exec::AccessEvent&, void*) override { _exit(3); }
};

TEST(Trace, ALaunchThatEndsTheProcessKeepsItsInputs) {
  // The child is a fresh run of this test binary ("threadsafe": no fork of a process with threads,
  // which the sanitizers' builds refuse); it writes the trace named after its parent, this process.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto trace_of = [](pid_t p) {
    return (fs::temp_directory_path() / fmt::format("tilescope-exit-test-{}.tstrace", p)).string();
  };
  const std::string path = trace_of(getpid());
  fs::remove(path);
  Copy c(64);
  auto k = launch::compile(c.rec.ttir, c.rec.ttir_file);
  EXPECT_EXIT(
      {
        ExitDuringLaunch exit_now;
        launch::RunOptions o = sanitize(1);
        o.observers.push_back(&exit_now);
        Writer w(trace_of(getppid()));
        w.run(*k, c.rec, o);
      },
      ::testing::ExitedWithCode(3), "");
  {
    Reader rd(path);
    ASSERT_EQ(rd.launches(), (std::vector<int64_t>{1}));
    StoredLaunch l = rd.launch(1);
    EXPECT_NE(l.error.find("the process ended during this launch"), std::string::npos) << l.error;
    ASSERT_TRUE(l.before[0].has_value());
    ASSERT_EQ(l.before[0]->size(), 64u * 4);
    EXPECT_EQ(std::memcmp(l.before[0]->data(), c.x.data(), 64 * 4), 0);
    EXPECT_NE(rd.summary().find("the process ended during this launch"), std::string::npos);
  }
  fs::remove(path);
  fs::remove(path + "-journal");
}

}  // namespace
}  // namespace tilescope::trace
