// The race detector on small kernels compiled by Triton (tests/cpp/analysis/kernels.py -> *.ttir, see
// generate.py). True negatives that naive detectors flag (atomics-only accumulation, a spin lock with
// acquire / release, neighbouring f16 elements, disjoint slices, the "last program reduces" counter) and
// true positives (two programs storing one address, load-add-store scatter with duplicate indices, a lock
// released with sem="relaxed", duplicate addresses in one store, cross-lane RAW without a barrier).
// Expected lines are found by searching the Python source; lanes and offsets computed by hand.
#include "tilescope/analysis/races.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
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

std::vector<Finding> detect(const char* file, const std::vector<exec::Arg>& args, exec::Memory& mem,
                            int64_t programs, int threads = 1, RacesOptions ro = {}) {
  const std::string text = slurp(kHere / file);
  fs::path old = fs::current_path();
  fs::current_path(kRoot);
  ir::Module m = ir::read(text, std::string("tests/cpp/analysis/") + file);
  ir::verify(m);
  exec::Engine e(m);
  Races r(m, ro);
  exec::LaunchOptions o;
  o.grid = {programs, 1, 1};
  o.threads = threads;
  o.observers = {&r};
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
