// The race detector on small kernels compiled by Triton (tests/cpp/analysis/kernels.py -> *.ttir, see
// generate.py). True negatives that naive detectors flag (atomics-only accumulation, a spin lock with
// acquire / release, neighbouring f16 elements, disjoint slices, the "last program reduces" counter) and
// true positives (two programs storing one address, load-add-store scatter with duplicate indices, a lock
// released with sem="relaxed", duplicate addresses in one store, cross-lane RAW without a barrier).
// Expected lines are found by searching the Python source; lanes and offsets computed by hand.
#include "tilescope/analysis/races.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "tests/cpp/harness.h"
#include "tilescope/exec/engine.h"
#include "tilescope/ir/reader.h"
#include "tilescope/ir/verify.h"

namespace tilescope::analysis {
namespace {

namespace fs = std::filesystem;

const fs::path kHere = fs::path(__FILE__).parent_path();
const fs::path kRoot = kHere.parent_path().parent_path().parent_path();

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// 1-based line in kernels.py of the first line containing `needle` after the line containing `after`.
int kline(const std::string& needle, const std::string& after = "") {
  std::ifstream in(kHere / "kernels.py");
  int n = 0;
  bool on = after.empty();
  for (std::string s; std::getline(in, s);) {
    ++n;
    on = on || s.find(after) != std::string::npos;
    if (on && s.find(needle) != std::string::npos) return n;
  }
  ADD_FAILURE() << needle << " not in kernels.py";
  return -1;
}

/// Accesses the engine sent as rows of a 2-D tile (AccessEvent::row_lanes) or as an active prefix
/// (AccessEvent::prefix_lanes), seen by LaneByLane.
std::atomic<int64_t> g_row_events{0}, g_prefix_events{0};

/// The race detector behind an observer that clears AccessEvent::dense, row_lanes and prefix_lanes: the
/// detector then finds the runs of a contiguous tile, of a tile's rows or of its active prefix lane by
/// lane (the reference for those paths).
struct LaneByLane : exec::Observer {
  Races& r;
  explicit LaneByLane(Races& races) : r(races) {}
  exec::Subscription on_launch_begin(const exec::LaunchContext& c) override { return r.on_launch_begin(c); }
  void on_launch_end(const exec::LaunchContext& c, const exec::LaunchStats& s) override {
    r.on_launch_end(c, s);
  }
  void* on_program_begin(exec::ProgramId pid) override { return r.on_program_begin(pid); }
  void on_program_end(exec::ProgramId pid, void* st) override { r.on_program_end(pid, st); }
  void on_op_begin(const exec::OpEvent& e, void* st) override { r.on_op_begin(e, st); }
  void on_access(const exec::AccessEvent& e, void* st) override {
    if (e.row_lanes > 0) ++g_row_events;
    if (e.prefix_lanes > 0) ++g_prefix_events;
    exec::AccessEvent lanes = e;
    lanes.dense = false;
    lanes.row_lanes = 0;
    lanes.prefix_lanes = 0;
    r.on_access(lanes, st);
  }
};

std::vector<Finding> detect(const char* file, const std::vector<exec::Arg>& args, exec::Memory& mem,
                            int64_t programs, int threads = 1, RacesOptions ro = {}, bool dense = true) {
  const std::string text = slurp(kHere / file);
  fs::path old = fs::current_path();
  fs::current_path(kRoot);
  ir::Module m = ir::read(text, std::string("tests/cpp/analysis/") + file);
  ir::verify(m);
  exec::Engine e(m);
  Races r(m, ro);
  LaneByLane lanes(r);
  exec::LaunchOptions o;
  o.grid = {programs, 1, 1};
  o.threads = threads;
  o.observers = {dense ? static_cast<exec::Observer*>(&r) : &lanes};
  e.launch(m.entry()->name, args, mem, o);
  std::vector<Finding> out;
  r.collect(LaunchInfo{m.entry()->name, {}}, out);
  fs::current_path(old);
  return out;
}

std::string describe(const std::vector<Finding>& fs) {
  std::string s;
  for (auto& f : fs) s += std::string(kind_name(f.kind)) + " " + f.race + ": " + f.summary + "\n";
  return s;
}

// -- true negatives ---------------------------------------------------------------------------------

TEST(Races, AtomicHistogramIsNoRace) {
  std::vector<int32_t> idx(64), hist(4, 0);
  for (int i = 0; i < 64; ++i) idx[i] = i % 4;
  exec::Memory mem;
  int ib = test::add_buffer(mem, idx, "idx_ptr", ir::Elem::i32);
  int hb = test::add_buffer(mem, hist, "hist_ptr", ir::Elem::i32);
  auto f = detect("atomic_hist.ttir", {exec::Arg::buf(ib), exec::Arg::buf(hb)}, mem, 4);
  EXPECT_TRUE(f.empty()) << describe(f);
  EXPECT_EQ(hist, std::vector<int32_t>(4, 16));
}

TEST(Races, SpinLockWithReleaseOrdersCriticalSections) {
  for (int threads : {1, 4}) {
    std::vector<int32_t> lock(1, 0), counter(1, 0);
    exec::Memory mem;
    int lb = test::add_buffer(mem, lock, "lock_ptr", ir::Elem::i32);
    int cb = test::add_buffer(mem, counter, "counter_ptr", ir::Elem::i32);
    auto f = detect("lock_release.ttir", {exec::Arg::buf(lb), exec::Arg::buf(cb)}, mem, 8, threads);
    EXPECT_TRUE(f.empty()) << describe(f);
    EXPECT_EQ(counter[0], 8);
  }
}

TEST(Races, NeighbouringHalfElementsDoNotConflict) {
  std::vector<uint16_t> out(8, 0);
  exec::Memory mem;
  int ob = test::add_buffer(mem, out, "out_ptr", ir::Elem::f16);
  auto f = detect("half_pairs.ttir", {exec::Arg::buf(ob)}, mem, 8);
  EXPECT_TRUE(f.empty()) << describe(f);
}

TEST(Races, DisjointSlicesAreNoRace) {
  std::vector<float> x(64, 1.0f), out(64, 0.0f);
  exec::Memory mem;
  int xb = test::add_buffer(mem, x, "x_ptr", ir::Elem::f32);
  int ob = test::add_buffer(mem, out, "out_ptr", ir::Elem::f32);
  auto f = detect("slice_copy.ttir", {exec::Arg::buf(xb), exec::Arg::buf(ob)}, mem, 4, 4);
  EXPECT_TRUE(f.empty()) << describe(f);
}

TEST(Races, LastProgramReducesThroughAcqRelCounter) {
  for (int threads : {1, 4}) {
    std::vector<float> x(64, 1.0f), partial(4, 0.0f), out(1, 0.0f);
    std::vector<int32_t> counter(1, 0);
    exec::Memory mem;
    int xb = test::add_buffer(mem, x, "x_ptr", ir::Elem::f32);
    int pb = test::add_buffer(mem, partial, "partial_ptr", ir::Elem::f32);
    int cb = test::add_buffer(mem, counter, "counter_ptr", ir::Elem::i32);
    int ob = test::add_buffer(mem, out, "out_ptr", ir::Elem::f32);
    auto f = detect("last_reduce.ttir",
                    {exec::Arg::buf(xb), exec::Arg::buf(pb), exec::Arg::buf(cb), exec::Arg::buf(ob)}, mem, 4,
                    threads);
    EXPECT_TRUE(f.empty()) << describe(f);
    EXPECT_EQ(out[0], 64.0f);
  }
}

TEST(Races, SameValueFromLanesOfOneStoreIsNoRace) {
  std::vector<int32_t> out(4, -1);
  exec::Memory mem;
  int ob = test::add_buffer(mem, out, "out_ptr", ir::Elem::i32);
  auto f = detect("dup_same.ttir", {exec::Arg::buf(ob)}, mem, 1);
  EXPECT_TRUE(f.empty()) << describe(f);
}

TEST(Races, BarrierOrdersLanesOfOneProgram) {
  std::vector<int32_t> buf(8, 0), out(8, 0);
  exec::Memory mem;
  int bb = test::add_buffer(mem, buf, "buf_ptr", ir::Elem::i32);
  int ob = test::add_buffer(mem, out, "out_ptr", ir::Elem::i32);
  auto f = detect("shift_barrier.ttir", {exec::Arg::buf(bb), exec::Arg::buf(ob)}, mem, 1);
  EXPECT_TRUE(f.empty()) << describe(f);
}

// -- true positives ---------------------------------------------------------------------------------

TEST(Races, TwoProgramsStoringTheSameAddressesRace) {
  std::set<std::string> seen;
  for (int threads : {1, 4}) {
    std::vector<float> x(64, 1.0f), out(16, 0.0f);
    exec::Memory mem;
    int xb = test::add_buffer(mem, x, "x_ptr", ir::Elem::f32);
    int ob = test::add_buffer(mem, out, "out_ptr", ir::Elem::f32);
    auto f = detect("same_out.ttir", {exec::Arg::buf(xb), exec::Arg::buf(ob)}, mem, 4, threads);
    ASSERT_EQ(f.size(), 1u) << describe(f);
    EXPECT_EQ(f[0].kind, Kind::data_race);
    EXPECT_EQ(f[0].race, "WAW");
    EXPECT_EQ(f[0].site.op, "tt.store");
    EXPECT_EQ(f[0].site.line, kline("tl.store(out_ptr + offs, x)"));
    ASSERT_TRUE(f[0].other);
    EXPECT_EQ(f[0].other->line, f[0].site.line);
    ASSERT_TRUE(f[0].buffer);
    EXPECT_EQ(f[0].buffer->name, "out_ptr");
    EXPECT_EQ(f[0].offset_min, 0);
    EXPECT_EQ(f[0].offset_max, 15);
    // The first side is the lower program: program 0 is never the second writer.
    ASSERT_FALSE(f[0].first_programs.empty());
    EXPECT_EQ(f[0].first_programs[0][0], 0);
    for (auto& p : f[0].other_first_programs) EXPECT_GT(p[0], 0);
    EXPECT_FALSE(f[0].hint.empty());
    seen.insert(f[0].race + " " + f[0].summary.substr(0, f[0].summary.find(':')));
  }
  EXPECT_EQ(seen.size(), 1u);  // the same finding at 1 and 4 threads
}

TEST(Races, ScatterWithDuplicateIndicesViaLoadAddStore) {
  std::set<std::pair<std::string, int>> at1, at4;
  for (int threads : {1, 4}) {
    // Program 0 and program 1 both add into out[3] (index 3 in both halves), no duplicates inside one.
    std::vector<int32_t> idx = {0, 1, 2, 3, 4, 5, 6, 7, 3, 8, 9, 10, 11, 12, 13, 14};
    std::vector<float> src(16, 1.0f), out(16, 0.0f);
    exec::Memory mem;
    int ib = test::add_buffer(mem, idx, "idx_ptr", ir::Elem::i32);
    int sb = test::add_buffer(mem, src, "src_ptr", ir::Elem::f32);
    int ob = test::add_buffer(mem, out, "out_ptr", ir::Elem::f32);
    auto f = detect("scatter_add.ttir", {exec::Arg::buf(ib), exec::Arg::buf(sb), exec::Arg::buf(ob)}, mem, 2,
                    threads);
    ASSERT_FALSE(f.empty());
    auto& set = threads == 1 ? at1 : at4;
    for (auto& x : f) {
      EXPECT_EQ(x.kind, Kind::data_race) << describe(f);
      EXPECT_EQ(x.buffer->name, "out_ptr");
      EXPECT_EQ(x.offset_min, 3);
      EXPECT_EQ(x.offset_max, 3);
      set.insert({x.race == "WAW" ? "WAW" : "RW", x.site.line * 1000 + x.other->line});
    }
    // Program 0's store against program 1's load and program 1's store: the write is the first site.
    const int load = kline("cur = tl.load(out_ptr + idx)"), store = kline("tl.store(out_ptr + idx, cur + v)");
    EXPECT_TRUE(set.count({"WAW", store * 1000 + store})) << describe(f);
    EXPECT_TRUE(set.count({"RW", store * 1000 + load})) << describe(f);
    EXPECT_EQ(set.size(), 2u) << describe(f);
  }
  EXPECT_EQ(at1, at4);
}

TEST(Races, LockReleasedRelaxedLetsCriticalSectionsRace) {
  std::set<std::pair<int, int>> at1, at4;  // (site line, other line) per finding
  for (int threads : {1, 4}) {
    std::vector<int32_t> lock(1, 0), counter(1, 0);
    exec::Memory mem;
    int lb = test::add_buffer(mem, lock, "lock_ptr", ir::Elem::i32);
    int cb = test::add_buffer(mem, counter, "counter_ptr", ir::Elem::i32);
    auto f = detect("lock_relaxed.ttir", {exec::Arg::buf(lb), exec::Arg::buf(cb)}, mem, 4, threads);
    ASSERT_FALSE(f.empty());
    for (auto& x : f) {
      EXPECT_EQ(x.kind, Kind::data_race);
      EXPECT_EQ(x.buffer->name, "counter_ptr");
      (threads == 1 ? at1 : at4).insert({x.site.line, x.other->line});
      if (threads == 1) {
        EXPECT_NE(x.race, "WAR");  // programs in id order: the lower one wrote first
      }
    }
    EXPECT_EQ(counter[0], 4);  // the lock itself still works on the CPU
  }
  EXPECT_EQ(at1, at4);
  const int load = kline("v = tl.load(counter_ptr)", "def lock_relaxed_kernel"),
            store = kline("tl.store(counter_ptr, v + 1)", "def lock_relaxed_kernel");
  EXPECT_TRUE(at1.count({store, load}));   // the next holder reads the counter (RAW)
  EXPECT_TRUE(at1.count({store, store}));  // and writes it (WAW)
}

TEST(Races, LanesOfOneStoreWritingDifferentValues) {
  std::vector<int32_t> out(4, -1);
  exec::Memory mem;
  int ob = test::add_buffer(mem, out, "out_ptr", ir::Elem::i32);
  auto f = detect("dup_store.ttir", {exec::Arg::buf(ob)}, mem, 1);
  ASSERT_EQ(f.size(), 1u) << describe(f);
  EXPECT_EQ(f[0].kind, Kind::intra_program_race);
  EXPECT_EQ(f[0].race, "same-store");
  EXPECT_EQ(f[0].site.line, kline("tl.store(out_ptr + lane // 2, lane)"));
  EXPECT_EQ(f[0].lanes, 4);  // pairs (0,1) (2,3) (4,5) (6,7)
  EXPECT_EQ(f[0].first_lanes, (std::vector<int64_t>{0, 2, 4, 6}));
  EXPECT_EQ(f[0].other_first_lanes, (std::vector<int64_t>{1, 3, 5, 7}));
  EXPECT_EQ(f[0].offset_min, 0);
  EXPECT_EQ(f[0].offset_max, 3);
}

TEST(Races, CrossLaneReadAfterWriteWithoutBarrier) {
  std::vector<int32_t> buf(8, 0), out(8, 0);
  exec::Memory mem;
  int bb = test::add_buffer(mem, buf, "buf_ptr", ir::Elem::i32);
  int ob = test::add_buffer(mem, out, "out_ptr", ir::Elem::i32);
  auto f = detect("shift.ttir", {exec::Arg::buf(bb), exec::Arg::buf(ob)}, mem, 1);
  ASSERT_EQ(f.size(), 1u) << describe(f);  // the same-lane load (`w`) is not reported
  EXPECT_EQ(f[0].kind, Kind::intra_program_race);
  EXPECT_EQ(f[0].race, "RAW");
  EXPECT_EQ(f[0].site.line, kline("tl.store(buf_ptr + offs, offs)"));
  EXPECT_EQ(f[0].other->line, kline("v = tl.load(buf_ptr + (offs + 1) % BLOCK)"));
  EXPECT_EQ(f[0].lanes, 8);
  // Load lane i reads what store lane i + 1 wrote.
  EXPECT_EQ(f[0].first_lanes, (std::vector<int64_t>{0, 1, 2, 3, 4}));  // lane 0's store is read by lane 7
  EXPECT_EQ(f[0].other_first_lanes, (std::vector<int64_t>{0, 1, 2, 3, 4}));

  RacesOptions off;
  off.intra = false;
  EXPECT_TRUE(detect("shift.ttir", {exec::Arg::buf(bb), exec::Arg::buf(ob)}, mem, 1, 1, off).empty());
}

TEST(Races, ProgramsRunOneAfterAnotherStillRace) {
  // --threads 1 runs program 0 to its end before program 1 starts; nothing orders them logically.
  std::vector<float> x(32, 1.0f), out(16, 0.0f);
  exec::Memory mem;
  int xb = test::add_buffer(mem, x, "x_ptr", ir::Elem::f32);
  int ob = test::add_buffer(mem, out, "out_ptr", ir::Elem::f32);
  auto f = detect("same_out.ttir", {exec::Arg::buf(xb), exec::Arg::buf(ob)}, mem, 2, 1);
  ASSERT_EQ(f.size(), 1u) << describe(f);
  EXPECT_EQ(f[0].programs, 1);
  EXPECT_EQ(f[0].other_programs, 1);
  EXPECT_EQ(f[0].lanes, 16);
}

}  // namespace
}  // namespace tilescope::analysis

namespace tilescope::analysis {
namespace {

TEST(Races, DistinctProgramCountsStopAtTheCap) {
  // 5000 programs store out[0..15]: in id order each one's writes race with the previous program's, so
  // 4999 programs on each side, counted exactly up to kMaxCounted (never more: one count per program,
  // not per racing lane).
  std::vector<float> x(5000 * 16, 1.0f), out(16, 0.0f);
  exec::Memory mem;
  int xb = test::add_buffer(mem, x, "x_ptr", ir::Elem::f32);
  int ob = test::add_buffer(mem, out, "out_ptr", ir::Elem::f32);
  auto f = detect("same_out.ttir", {exec::Arg::buf(xb), exec::Arg::buf(ob)}, mem, 5000, 1);
  ASSERT_EQ(f.size(), 1u) << describe(f);
  EXPECT_EQ(f[0].programs, static_cast<int64_t>(Races::kMaxCounted));
  EXPECT_EQ(f[0].other_programs, static_cast<int64_t>(Races::kMaxCounted));
  EXPECT_EQ(f[0].lanes, 4999 * 16);
}

}  // namespace
}  // namespace tilescope::analysis

namespace tilescope::analysis {
namespace {

TEST(Races, MixedElementSizesOverlapByBytes) {
  // The shadow starts with a cell per i32 and splits into bytes at the first i16 access.
  for (int threads : {1, 2}) {
    for (int64_t off : {1, 2}) {
      std::vector<int32_t> p(4, 0);
      exec::Memory mem;
      int pb = test::add_buffer(mem, p, "p", ir::Elem::i32);
      auto f = detect("mixed_sizes.ttir", {exec::Arg::buf(pb), exec::Arg::i64(off)}, mem, 3, threads);
      // Programs 1 and 2 store the same i16 (one finding at the i16 store); off = 1 also overlaps
      // program 0's i32 (a second finding, from the i32 store to the i16 store).
      ASSERT_EQ(f.size(), off == 1 ? 2u : 1u) << describe(f);
      for (auto& x : f) EXPECT_EQ(x.race, "WAW");
      const int i16_store = 16, i32_store = 11;  // lines of mixed_sizes.ttir
      EXPECT_EQ(f.back().site.ttir_line, i16_store);
      EXPECT_EQ(f.back().other->ttir_line, i16_store);
      EXPECT_EQ(f.back().offset_min, off == 1 ? 0 : 1);  // element offsets in the buffer's i32 elements
      if (off == 1) {
        EXPECT_EQ(f[0].site.ttir_line, i32_store);
        EXPECT_EQ(f[0].other->ttir_line, i16_store);
      }
    }
  }
}

}  // namespace
}  // namespace tilescope::analysis

// -- the shadow's run fast path (segments) ------------------------------------------------------------
// access_pattern.ttir: 8 ops of 8 lanes on one buffer seen as i32, i16, i8 and i32 at byte offsets, each
// lane's index read from `idx` (negative: masked off); op k is on line 30 + 10 * k.

namespace tilescope::analysis {
namespace {

constexpr int kOps = 8, kLanes = 8;
int op_line(int k) { return 30 + 10 * k; }

/// Findings of access_pattern.ttir on `words` i32 of memory, program p's op k taking lanes' indices
/// idx[p * 64 + k * 8 + lane].
std::vector<Finding> pattern(const std::vector<int32_t>& idx, int64_t programs, bool segments,
                             int words = 768, int threads = 1, bool dense = true) {
  std::vector<int32_t> p(static_cast<size_t>(words), 0);
  std::vector<int32_t> ix = idx;
  exec::Memory mem;
  int pb = test::add_buffer(mem, p, "p", ir::Elem::i32);
  int ib = test::add_buffer(mem, ix, "idx", ir::Elem::i32);
  RacesOptions ro;
  ro.segments = segments;
  return detect("access_pattern.ttir", {exec::Arg::buf(pb), exec::Arg::buf(ib)}, mem, programs, threads, ro,
                dense);
}

/// Everything a finding says about the race (not the source text).
std::string fingerprint(const std::vector<Finding>& fs) {
  std::string s;
  auto pids = [](const std::vector<exec::ProgramId>& v) {
    std::string t;
    for (auto& p : v) t += std::to_string(p[0]) + ",";
    return t;
  };
  auto ints = [](const std::vector<int64_t>& v) {
    std::string t;
    for (auto x : v) t += std::to_string(x) + ",";
    return t;
  };
  for (const Finding& f : fs)
    s += fmt::format("{} {} {}:{}->{} progs {}/{} [{}|{}] lanes {} [{}|{}] occ {} off {}..{}\n",
                     kind_name(f.kind), f.race, f.site.ttir_line, f.site.ttir_col,
                     f.other ? f.other->ttir_line : -1, f.programs, f.other_programs, pids(f.first_programs),
                     pids(f.other_first_programs), f.lanes, ints(f.first_lanes), ints(f.other_first_lanes),
                     f.occurrences, f.offset_min, f.offset_max);
  return s;
}

std::vector<int32_t> masked(int64_t programs) {
  return std::vector<int32_t>(static_cast<size_t>(programs * kOps * kLanes), -1);
}
void set_op(std::vector<int32_t>& idx, int prog, int op, const std::vector<int32_t>& lanes) {
  for (int l = 0; l < kLanes; ++l)
    idx[static_cast<size_t>(prog * kOps * kLanes + op * kLanes + l)] = lanes[static_cast<size_t>(l)];
}

TEST(RacesSegments, SubElementOverlapAfterAlignedRun) {
  // Program 0 stores i32 p[0..8) in one run (a segment); program 1's lane 5 stores the i16 at element 3,
  // bytes 6..7: inside p[1], lane 1's. One WAW, between those lanes, at i32 element 1.
  for (bool seg : {true, false}) {
    auto idx = masked(2);
    set_op(idx, 0, 0, {0, 1, 2, 3, 4, 5, 6, 7});
    set_op(idx, 1, 2, {-1, -1, -1, -1, -1, 3, -1, -1});
    auto f = pattern(idx, 2, seg);
    ASSERT_EQ(f.size(), 1u) << describe(f);
    EXPECT_EQ(f[0].race, "WAW");
    EXPECT_EQ(f[0].site.ttir_line, op_line(0));
    EXPECT_EQ(f[0].other->ttir_line, op_line(2));
    EXPECT_EQ(f[0].first_lanes, std::vector<int64_t>{1});
    EXPECT_EQ(f[0].other_first_lanes, std::vector<int64_t>{5});
    EXPECT_EQ(f[0].offset_min, 1);
    EXPECT_EQ(f[0].offset_max, 1);
    EXPECT_EQ(f[0].lanes, 1);
  }
}

TEST(RacesSegments, NeighbouringI16OfAnAlignedRunDoNotConflict) {
  // Program 0 stores i32 p[0..8); program 1 stores the i16 elements 16..23 (p[8..12)): same page, no
  // byte in common, so nothing; then program 2 reads i8 bytes 30..37, across both: RAW with both.
  for (bool seg : {true, false}) {
    auto idx = masked(3);
    set_op(idx, 0, 0, {0, 1, 2, 3, 4, 5, 6, 7});
    set_op(idx, 1, 2, {16, 17, 18, 19, 20, 21, 22, 23});
    auto f = pattern(idx, 2, seg);
    EXPECT_TRUE(f.empty()) << describe(f);
    set_op(idx, 2, 7, {30, 31, 32, 33, 34, 35, 36, 37});
    f = pattern(idx, 3, seg);
    ASSERT_EQ(f.size(), 2u) << describe(f);
    // i32 store lane 7 (bytes 28..31) with i8 lanes 0, 1; i16 store lanes 0, 1 (bytes 32..35) with i8
    // lanes 2..5 (and lane 2, bytes 36..37, with lanes 6, 7).
    EXPECT_EQ(f[0].site.ttir_line, op_line(0));
    EXPECT_EQ(f[0].first_lanes, std::vector<int64_t>{7});
    EXPECT_EQ(f[0].other_first_lanes, (std::vector<int64_t>{0, 1}));
    EXPECT_EQ(f[1].site.ttir_line, op_line(2));
    EXPECT_EQ(f[1].first_lanes, (std::vector<int64_t>{0, 1, 2}));
    EXPECT_EQ(f[1].other_first_lanes, (std::vector<int64_t>{2, 3, 4, 5, 6}));
    for (auto& x : f) EXPECT_EQ(x.other->ttir_line, op_line(7));
  }
}

TEST(RacesSegments, CrossLaneReadOfARunIsFoundAndTheSameLaneIsNot) {
  for (bool seg : {true, false}) {
    // Same lanes: lane l stores p[l] and loads p[l]: no race.
    auto idx = masked(1);
    set_op(idx, 0, 0, {0, 1, 2, 3, 4, 5, 6, 7});
    set_op(idx, 0, 1, {0, 1, 2, 3, 4, 5, 6, 7});
    auto f = pattern(idx, 1, seg);
    EXPECT_TRUE(f.empty()) << describe(f);
    // Shifted by one: lane l loads p[l + 1], stored by lane l + 1 (lane 7 reads p[8], never stored).
    set_op(idx, 0, 1, {1, 2, 3, 4, 5, 6, 7, 8});
    f = pattern(idx, 1, seg);
    ASSERT_EQ(f.size(), 1u) << describe(f);
    EXPECT_EQ(f[0].kind, Kind::intra_program_race);
    EXPECT_EQ(f[0].lanes, 7);
    EXPECT_EQ(f[0].first_lanes, (std::vector<int64_t>{1, 2, 3, 4, 5}));
    EXPECT_EQ(f[0].other_first_lanes, (std::vector<int64_t>{0, 1, 2, 3, 4}));
    // Same element size, other alignment: lane l loads the i32 at byte 4l + 2, half lane l's and half
    // lane l + 1's (lane 7: half unwritten).
    set_op(idx, 0, 1, {-1, -1, -1, -1, -1, -1, -1, -1});
    set_op(idx, 0, 6, {2, 6, 10, 14, 18, 22, 26, 30});
    f = pattern(idx, 1, seg);
    ASSERT_EQ(f.size(), 1u) << describe(f);
    EXPECT_EQ(f[0].other->ttir_line, op_line(6));
    EXPECT_EQ(f[0].lanes, 7);
    EXPECT_EQ(f[0].first_lanes, (std::vector<int64_t>{1, 2, 3, 4, 5}));
  }
}

TEST(RacesSegments, ManySmallRunsOnOnePageStillRace) {
  // 40 programs each store 2 i32 with a gap (more pieces than a page keeps as segments), and each
  // reads the next program's two: a race between neighbours, 39 pairs of programs, 2 lanes each.
  for (bool seg : {true, false}) {
    auto idx = masked(40);
    for (int p = 0; p < 40; ++p) {
      set_op(idx, p, 0, {4 * p, 4 * p + 1, -1, -1, -1, -1, -1, -1});
      set_op(idx, p, 1, {-1, -1, -1, -1, -1, -1, 4 * p + 4, 4 * p + 5});
    }
    auto f = pattern(idx, 40, seg);
    ASSERT_EQ(f.size(), 1u) << describe(f);
    EXPECT_EQ(f[0].race, "WAR");  // the writer is the higher program
    EXPECT_EQ(f[0].lanes, 39 * 2);
    EXPECT_EQ(f[0].programs, 39);
  }
}

TEST(RacesSegments, WriteChecksTheSecondReadToo) {
  // The store is ordered after program 0's reads (the first read slot) and not after program 1's (the
  // second): a WAR with program 1 only, its 8 lanes.
  for (bool seg : {true, false}) {
    std::vector<int32_t> x(8, 5), flag(1, 0), out(40, 0);
    exec::Memory mem;
    int xb = test::add_buffer(mem, x, "x", ir::Elem::i32);
    int fb = test::add_buffer(mem, flag, "flag", ir::Elem::i32);
    int ob = test::add_buffer(mem, out, "out", ir::Elem::i32);
    RacesOptions ro;
    ro.segments = seg;
    auto f = detect("second_reader.ttir", {exec::Arg::buf(xb), exec::Arg::buf(fb), exec::Arg::buf(ob)}, mem,
                    3, 1, ro);
    ASSERT_EQ(out[2], 1);  // program 2 saw program 0's release
    ASSERT_EQ(f.size(), 1u) << describe(f);
    EXPECT_EQ(f[0].race, "WAR");
    EXPECT_EQ(f[0].lanes, 8);
    ASSERT_EQ(f[0].first_programs.size(), 1u);
    EXPECT_EQ(f[0].first_programs[0][0], 2);  // the writer first
    ASSERT_EQ(f[0].other_first_programs.size(), 1u);
    EXPECT_EQ(f[0].other_first_programs[0][0], 1);
  }
}

TEST(RacesSegments, RandomPatternsAgreeWithCells) {
  // The fast path against the reference (cells from the first access) on random mixes of runs, reversed
  // runs, holes, duplicates and scatters of the four access shapes, in a slice per program (races
  // between lanes only) or over shared memory.
  std::mt19937 rng(12345);
  int compared = 0, with_findings = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t programs = 1 + static_cast<int64_t>(rng() % 6);
    const bool shared = trial % 2 == 1;
    const int words = 768;  // 3 KiB: 3 or 4 shadow pages
    auto idx = masked(programs);
    for (int p = 0; p < programs; ++p)
      for (int op = 0; op < kOps; ++op) {
        const int unit = op < 2 ? 4 : op < 4 ? 2 : 1;  // bytes per index step
        const int span = words * 4 / unit - (op == 5 || op == 6 ? 3 : 0);
        const int lo = shared ? 0 : static_cast<int>(p * span / programs);
        const int hi = shared ? span : static_cast<int>((p + 1) * span / programs);
        const int width = std::max(1, std::min(hi - lo, shared ? 64 : hi - lo));
        const int base = lo + static_cast<int>(rng() % static_cast<unsigned>(std::max(1, width - kLanes)));
        std::vector<int32_t> v(kLanes);
        const unsigned shape = rng() % 7;
        for (int l = 0; l < kLanes; ++l) {
          int x = base + l;
          if (shape == 1) x = base + kLanes - 1 - l;                                        // reversed
          if (shape == 2) x = base;                                                         // one address
          if (shape == 3) x = lo + static_cast<int>(rng() % static_cast<unsigned>(width));  // scatter
          if (shape == 4 && l == 3) x = -1;                                                 // a hole
          if (shape == 5) x = base + 2 * l;                                                 // stride 2
          v[static_cast<size_t>(l)] = (x >= hi || rng() % 16 == 0) ? -1 : x;
        }
        if (rng() % 4 == 0) v.assign(kLanes, -1);  // op not run
        set_op(idx, p, op, v);
      }
    const std::string fast = fingerprint(pattern(idx, programs, true, words));
    const std::string ref = fingerprint(pattern(idx, programs, false, words));
    ASSERT_EQ(fast, ref) << "trial " << trial;
    // The engine's dense tiles (AccessEvent::dense) against the same lanes seen one by one.
    ASSERT_EQ(fingerprint(pattern(idx, programs, true, words, 1, false)), ref) << "trial " << trial;
    ASSERT_EQ(fingerprint(pattern(idx, programs, false, words, 1, false)), ref) << "trial " << trial;
    ++compared;
    with_findings += !ref.empty();
  }
  EXPECT_GT(with_findings, 100);       // the comparison saw races
  EXPECT_LT(with_findings, compared);  // and race-free launches
}

/// One launch of a tile kernel of (p, params) (tile_rows.ttir, tile_prefix.ttir): p is `words` i32
/// zeros, params 4 i32 per program; the detector sees the engine's runs (`fast`) or the lanes one by one.
/// Returns the findings' fingerprint and p after the launch (one thread: stores in program order).
std::pair<std::string, std::vector<int32_t>> run_tiles(const char* file, std::vector<int32_t> params,
                                                       int words, bool fast) {
  std::vector<int32_t> p(static_cast<size_t>(words), 0);
  exec::Memory mem;
  const int pb = test::add_buffer(mem, p, "p", ir::Elem::i32);
  const int qb = test::add_buffer(mem, params, "params", ir::Elem::i32);
  const auto programs = static_cast<int64_t>(params.size() / 4);
  auto f = detect(file, {exec::Arg::buf(pb), exec::Arg::buf(qb)}, mem, programs, 1, {}, fast);
  return {fingerprint(f), p};
}

/// 300 random launches of a tile kernel (run_tiles) of 1-6 programs, over `words` i32 shared by the
/// programs (odd trials) or in a slice [lo, hi) each (even ones): `tile(rng, lo, hi)` gives a program's
/// 4 params. Asserts that the detector seeing the engine's runs gives the findings and stores of the
/// detector seeing the lanes one by one; returns the launches (with findings, race-free).
template <class Tile>
std::pair<int, int> tiles_agree_with_lane_by_lane(const char* file, unsigned seed, int words, Tile tile) {
  std::mt19937 rng(seed);
  int with_findings = 0, race_free = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int programs = 1 + static_cast<int>(rng() % 6);
    const bool shared = trial % 2 == 1;
    std::vector<int32_t> params;
    for (int p = 0; p < programs; ++p) {
      const int lo = shared ? 0 : p * words / programs, hi = shared ? words : (p + 1) * words / programs;
      const std::array<int32_t, 4> q = tile(rng, lo, hi);
      params.insert(params.end(), q.begin(), q.end());
    }
    const auto ref = run_tiles(file, params, words, false);
    const auto fast = run_tiles(file, params, words, true);
    EXPECT_EQ(fast.first, ref.first) << file << ", trial " << trial;
    EXPECT_EQ(fast.second, ref.second) << file << ", trial " << trial;  // the same stores
    if (fast != ref) break;
    with_findings += !ref.first.empty();
    race_free += ref.first.empty();
  }
  return {with_findings, race_free};
}

TEST(RacesSegments, RowsOfATileAgreeWithLaneByLane) {
  // tile_rows.ttir: an i32 4x8 tile load and an i16 4x8 tile store per program, rows at random strides
  // (wider than a row, overlapping, repeated with stride 0, across shadow pages), over memory shared by
  // the programs or in a slice each. The engine sends each tile as rows (AccessEvent::row_lanes) and
  // the detector cuts the rows into runs at once; the reference sees the same lanes one by one.
  g_row_events = 0;
  // 768 words, 3 KiB: 3 or 4 shadow pages.
  const auto [with_findings, race_free] =
      tiles_agree_with_lane_by_lane("tile_rows.ttir", 777, 768, [](std::mt19937& rng, int lo, int hi) {
        // A tile of 4 rows of 8 at `stride` takes 3 * stride + 8 elements from its offset.
        auto tile = [&](int from, int to) {  // (offset, stride) of a tile inside [from, to) elements
          static constexpr int kStrides[] = {0, 2, 7, 8, 9, 33, 64, 150};
          int stride = kStrides[rng() % 8];
          while (stride > 0 && 3 * stride + 8 > to - from) stride /= 2;
          const int room = to - from - (3 * stride + 8);
          return std::make_pair(from + static_cast<int>(rng() % static_cast<unsigned>(room + 1)), stride);
        };
        auto [off_a, stride_a] = tile(lo, hi);
        auto [off_b, stride_b] = tile(2 * lo, 2 * hi);  // i16 elements
        return std::array<int32_t, 4>{off_a, stride_a, off_b, stride_b};
      });
  EXPECT_GT(g_row_events.load(), 300);  // the engine sent the tiles as rows
  EXPECT_GT(with_findings, 50);
  EXPECT_GT(race_free, 50);
}

TEST(RacesSegments, MaskedTailsAgreeWithLaneByLane) {
  // tile_prefix.ttir: per program a 16-lane i32 load of its first kA lanes and a store of its first kB
  // lanes (the rest masked off) at random offsets, over memory shared by the programs or in a slice
  // each; the masked-off tail may lie in another program's slice or past the buffer's end. The engine
  // sends each access as its active prefix (AccessEvent::prefix_lanes) and the detector takes the prefix
  // as one run; the reference sees the same lanes one by one.
  g_prefix_events = 0;
  // 520 words, past 2 KiB: the tiles cross shadow pages.
  const auto [with_findings, race_free] =
      tiles_agree_with_lane_by_lane("tile_prefix.ttir", 4242, 520, [](std::mt19937& rng, int lo, int hi) {
        // A tile at `off` with its first k lanes active, all of them inside [lo, hi); k = 16 is a dense
        // tile, k < 16 leaves a masked tail (past the buffer where off is near its end).
        auto tile = [&] {
          const int off = lo + static_cast<int>(rng() % static_cast<unsigned>(hi - lo));
          const int room = std::min(16, hi - off);
          return std::make_pair(off, 1 + static_cast<int>(rng() % static_cast<unsigned>(room)));
        };
        auto [off_a, k_a] = tile();
        auto [off_b, k_b] = tile();
        return std::array<int32_t, 4>{off_a, k_a, off_b, k_b};
      });
  EXPECT_GT(g_prefix_events.load(), 300);  // the engine sent masked tails as prefixes
  EXPECT_GT(with_findings, 50);
  EXPECT_GT(race_free, 50);
}

TEST(RacesSegments, DisjointRunsOnSharedPagesNoRace) {
  // 96 programs store and reload their own 8 i32 (program p: p[8p..8p+8)), 3 KiB in all: pages shared by
  // 32 programs, made and split into ranges by 2 threads at once. No race (also run under TSan).
  auto idx = masked(96);
  for (int p = 0; p < 96; ++p) {
    std::vector<int32_t> own(kLanes);
    for (int l = 0; l < kLanes; ++l) own[static_cast<size_t>(l)] = 8 * p + l;
    set_op(idx, p, 0, own);
    set_op(idx, p, 1, own);
  }
  for (int rep = 0; rep < 3; ++rep) {
    auto f = pattern(idx, 96, true, 768, 2);
    EXPECT_TRUE(f.empty()) << describe(f);
  }
}

TEST(RacesSegments, ThreadsDoNotChangeTheFindings) {
  // Race-free in id order or not, the findings of 2 threads are those of 1 (the pairs' sides and counts
  // depend on program ids only). Programs write their own slice and read their neighbour's.
  auto idx = masked(32);
  for (int p = 0; p < 32; ++p) {
    set_op(idx, p, 0, {8 * p, 8 * p + 1, 8 * p + 2, 8 * p + 3, 8 * p + 4, 8 * p + 5, 8 * p + 6, 8 * p + 7});
    set_op(idx, p, 1, {(8 * p + 8) % 256, (8 * p + 9) % 256, -1, -1, -1, -1, -1, -1});
  }
  const std::string one = fingerprint(pattern(idx, 32, true, 768, 1));
  EXPECT_NE(one, "");
  for (int rep = 0; rep < 3; ++rep) EXPECT_EQ(fingerprint(pattern(idx, 32, true, 768, 2)), one);
}

}  // namespace
}  // namespace tilescope::analysis
