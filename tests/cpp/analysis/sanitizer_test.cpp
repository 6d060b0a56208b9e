// The sanitizer on small kernels compiled by Triton (tests/cpp/analysis/kernels.py -> *.ttir, see
// generate.py) and on fixtures of tests/ttir. Expected lines are found by searching the Python source
// for the statement (independent of tilescope); expected lanes, offsets and programs are computed by
// hand from the kernel and its inputs.
#include "tilescope/analysis/sanitizer.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "taint.h"
#include "tests/cpp/harness.h"

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

/// 1-based line of the first line of `py` containing `needle`.
int line_of(const fs::path& py, const std::string& needle) {
  std::ifstream in(py);
  int n = 0;
  for (std::string s; std::getline(in, s);) {
    ++n;
    if (s.find(needle) != std::string::npos) return n;
  }
  ADD_FAILURE() << needle << " not in " << py;
  return -1;
}

int kline(const std::string& needle) { return line_of(kHere / "kernels.py", needle); }

struct Outcome {
  std::vector<Finding> findings;
  bool aborted = false;
};

/// Run `file` (relative to tests/cpp/analysis or absolute) under a Sanitizer. Runs from the repository
/// root's point of view: locations are relative to it, so source lines are read from there.
Outcome sanitize(const fs::path& file, const std::vector<exec::Arg>& args, exec::Memory& mem,
                 std::array<int64_t, 3> grid = {1, 1, 1}, int threads = 1, SanitizerOptions so = {}) {
  fs::path old = fs::current_path();
  fs::current_path(kRoot);
  ir::Module m = ir::read(slurp(file), file.string());
  ir::verify(m);
  exec::Engine e(m);
  Sanitizer s(m, so);
  exec::LaunchOptions o;
  o.grid = grid;
  o.threads = threads;
  o.observers = {&s};
  Outcome r;
  r.aborted = e.launch(m.entry()->name, args, mem, o).stopped;
  s.finish(LaunchInfo{m.entry()->name, {"test.py:1 in main"}});
  r.findings = s.findings();
  fs::current_path(old);
  return r;
}

std::string describe(const std::vector<Finding>& fs) {
  std::string s;
  for (auto& f : fs)
    s += std::string(kind_name(f.kind)) + " " + f.site.op + " line " + std::to_string(f.site.line) + ": " +
         f.summary + "\n";
  return s;
}

const Finding* only(const Outcome& r, Kind k) {
  const Finding* f = nullptr;
  int n = 0;
  for (auto& x : r.findings)
    if (x.kind == k) f = &x, ++n;
  EXPECT_EQ(n, 1) << describe(r.findings);
  return f;
}

TEST(SanitizerPoison, MaskedLoadWithoutOtherIntoSumIsReportedAtTheReduce) {
  std::vector<float> x(16, 1.0f), out(1, 0.0f);
  exec::Memory mem;
  int xb = test::add_buffer(mem, x, "x_ptr", ir::Elem::f32);
  int ob = test::add_buffer(mem, out, "out_ptr", ir::Elem::f32);
  Outcome r =
      sanitize(kHere / "undef_sum.ttir", {exec::Arg::buf(xb), exec::Arg::buf(ob), exec::Arg::i64(10)}, mem);
  ASSERT_EQ(r.findings.size(), 1u) << describe(r.findings);
  const Finding& f = r.findings[0];
  EXPECT_EQ(f.kind, Kind::undefined_value);
  EXPECT_EQ(f.site.op, "tt.reduce");
  EXPECT_EQ(f.site.line, kline("s = tl.sum(x, axis=0)"));
  EXPECT_EQ(f.site.file, "tests/cpp/analysis/kernels.py");
  EXPECT_EQ(f.site.source_line, "    s = tl.sum(x, axis=0)");
  EXPECT_EQ(f.site.ttir_line, 17);  // `%s = "tt.reduce"(%x_2)` in undef_sum.ttir
  ASSERT_TRUE(f.cause);
  EXPECT_EQ(f.cause->op, "tt.load");
  EXPECT_EQ(f.cause->line, kline("x = tl.load(x_ptr + offs, mask=mask)"));
  ASSERT_TRUE(f.use);
  EXPECT_EQ(f.use->op, "tt.store");
  // Lanes 10..15 of the load are masked off (n = 10, BLOCK = 16).
  EXPECT_EQ(f.lanes, 6);
  EXPECT_EQ(f.first_lanes, (std::vector<int64_t>{10, 11, 12, 13, 14}));
  EXPECT_EQ(f.programs, 1);
  EXPECT_EQ(f.kernel, "undef_sum_kernel");
  EXPECT_EQ(f.launch_stack, std::vector<std::string>{"test.py:1 in main"});
}

TEST(SanitizerPoison, WhereBeforeTheSumCleansTheUndefinedLanes) {
  std::vector<float> x(16, 1.0f), out(1, 0.0f);
  exec::Memory mem;
  int xb = test::add_buffer(mem, x, "x_ptr", ir::Elem::f32);
  int ob = test::add_buffer(mem, out, "out_ptr", ir::Elem::f32);
  Outcome r =
      sanitize(kHere / "where_sum.ttir", {exec::Arg::buf(xb), exec::Arg::buf(ob), exec::Arg::i64(10)}, mem);
  EXPECT_TRUE(r.findings.empty()) << describe(r.findings);
  EXPECT_EQ(out[0], 10.0f);
}

TEST(SanitizerPoison, NoMaskedOffLaneNoFinding) {
  std::vector<float> x(16, 1.0f), out(1, 0.0f);
  exec::Memory mem;
  int xb = test::add_buffer(mem, x, "x_ptr", ir::Elem::f32);
  int ob = test::add_buffer(mem, out, "out_ptr", ir::Elem::f32);
  Outcome r =
      sanitize(kHere / "undef_sum.ttir", {exec::Arg::buf(xb), exec::Arg::buf(ob), exec::Arg::i64(16)}, mem);
  EXPECT_TRUE(r.findings.empty()) << describe(r.findings);
}

TEST(SanitizerPoison, UndefinedValuesStoredInActiveLanesAreReportedAtTheStore) {
  std::vector<float> x(16, 1.0f), out(16, 0.0f);
  exec::Memory mem;
  int xb = test::add_buffer(mem, x, "x_ptr", ir::Elem::f32);
  int ob = test::add_buffer(mem, out, "out_ptr", ir::Elem::f32);
  Outcome r =
      sanitize(kHere / "undef_store.ttir", {exec::Arg::buf(xb), exec::Arg::buf(ob), exec::Arg::i64(12)}, mem);
  const Finding* f = only(r, Kind::undefined_value);
  ASSERT_TRUE(f);
  EXPECT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(f->site.op, "tt.store");
  EXPECT_EQ(f->site.line, kline("tl.store(out_ptr + offs, x * 2.0)"));
  EXPECT_EQ(f->cause->line, kline("x = tl.load(x_ptr + offs, mask=offs < n)"));
  EXPECT_EQ(f->lanes, 4);
  EXPECT_EQ(f->first_lanes, (std::vector<int64_t>{12, 13, 14, 15}));
}

TEST(SanitizerPoison, FullyMaskedRowsReducedAndStoredUnderTheRowMaskAreNotAFinding) {
  // ROWS = 4, rows = 3: row 3 is all undefined, its sum is undefined, and the store masks it off.
  std::vector<float> x(32, 1.0f), out(4, 0.0f);
  exec::Memory mem;
  int xb = test::add_buffer(mem, x, "x_ptr", ir::Elem::f32);
  int ob = test::add_buffer(mem, out, "out_ptr", ir::Elem::f32);
  Outcome r =
      sanitize(kHere / "undef_rows.ttir", {exec::Arg::buf(xb), exec::Arg::buf(ob), exec::Arg::i64(3)}, mem);
  EXPECT_TRUE(r.findings.empty()) << describe(r.findings);
  EXPECT_EQ(out[0], 8.0f);
}

TEST(SanitizerPoison, PoisonIsCarriedThroughLoopIterArgs) {
  std::vector<float> x(64, 1.0f), out(17, 0.0f);
  exec::Memory mem;
  int xb = test::add_buffer(mem, x, "x_ptr", ir::Elem::f32);
  int ob = test::add_buffer(mem, out, "out_ptr", ir::Elem::f32);
  // n = 50: iteration k = 3 loads offsets 48..63, lanes 2..15 undefined; acc carries them.
  Outcome r =
      sanitize(kHere / "loop_undef.ttir", {exec::Arg::buf(xb), exec::Arg::buf(ob), exec::Arg::i64(50)}, mem);
  ASSERT_EQ(r.findings.size(), 2u) << describe(r.findings);
  EXPECT_EQ(r.findings[0].site.op, "tt.store");
  EXPECT_EQ(r.findings[0].site.line, kline("tl.store(out_ptr + offs, acc, mask=offs < n)"));
  EXPECT_EQ(r.findings[0].lanes, 14);
  EXPECT_EQ(r.findings[0].first_lanes, (std::vector<int64_t>{2, 3, 4, 5, 6}));
  EXPECT_EQ(r.findings[0].cause->line, kline("acc += tl.load(x_ptr + o, mask=o < n)"));
  EXPECT_EQ(r.findings[1].site.op, "tt.reduce");
  EXPECT_EQ(r.findings[1].site.line, kline("total = tl.sum(acc, axis=0)"));
  EXPECT_EQ(r.findings[1].lanes, 14);

  std::vector<float> x2(64, 1.0f), out2(17, 0.0f);
  exec::Memory mem2;
  xb = test::add_buffer(mem2, x2, "x_ptr", ir::Elem::f32);
  ob = test::add_buffer(mem2, out2, "out_ptr", ir::Elem::f32);
  Outcome clean =
      sanitize(kHere / "loop_undef.ttir", {exec::Arg::buf(xb), exec::Arg::buf(ob), exec::Arg::i64(64)}, mem2);
  EXPECT_TRUE(clean.findings.empty()) << describe(clean.findings);
  EXPECT_EQ(out2[16], 64.0f);
}

TEST(SanitizerPoison, Int32OverflowIsReportedAtTheMultiplyEvenWhenTheWrappedAddressIsInBounds) {
  // start = pid * stride with stride = 2^30: pid 1 -> 2^30 (no overflow, out of bounds), pid 2 -> 2^31
  // wraps to -2^31, pid 3 -> 3*2^30 wraps to -2^30, pid 4 -> 2^32 wraps to 0 (inside x!).
  std::vector<float> x(16, 1.0f), out(80, 0.0f);
  exec::Memory mem;
  int xb = test::add_buffer(mem, x, "x_ptr", ir::Elem::f32);
  int ob = test::add_buffer(mem, out, "out_ptr", ir::Elem::f32);
  Outcome r = sanitize(kHere / "overflow.ttir",
                       {exec::Arg::buf(xb), exec::Arg::buf(ob), exec::Arg::i64(1 << 30)}, mem, {5, 1, 1}, 2);
  const Finding* ov = only(r, Kind::int32_overflow);
  ASSERT_TRUE(ov);
  EXPECT_EQ(ov->site.op, "arith.muli");
  EXPECT_EQ(ov->site.line, kline("start = pid * stride"));
  EXPECT_EQ(ov->site.var, "start");
  EXPECT_EQ(ov->site.ttir_line, 9);
  EXPECT_EQ(ov->programs, 3);
  EXPECT_EQ(ov->first_programs, (std::vector<exec::ProgramId>{{2, 0, 0}, {3, 0, 0}, {4, 0, 0}}));
  EXPECT_EQ(ov->lanes, 3 * 16);
  ASSERT_TRUE(ov->use);
  EXPECT_EQ(ov->use->op, "tt.load");

  const Finding* oob = only(r, Kind::oob_load);
  ASSERT_TRUE(oob);
  EXPECT_EQ(oob->first_programs, (std::vector<exec::ProgramId>{{1, 0, 0}, {2, 0, 0}, {3, 0, 0}}));
  EXPECT_EQ(oob->offset_min, -2147483648LL);
  EXPECT_EQ(oob->offset_max, (1LL << 30) + 15);
  EXPECT_EQ(oob->elements_before, 2147483648LL);
  EXPECT_EQ(oob->elements_past, (1LL << 30) + 15 - 16 + 1);
  EXPECT_EQ(r.findings.size(), 2u) << describe(r.findings);
}

TEST(SanitizerPoison, Int32OverflowTestMatchesTheExactResult) {
  // any_int32_overflow against the exact result in 64 bits (and shifts as products by 2^b, every shift of
  // a nonzero value by b < 0 or b >= 32 overflowing): edge values pairwise, one lane at a time, then random
  // blocks with at most one overflowing lane at a random position (the vectorised loops' tails too).
  const std::vector<int32_t> edge = {
      INT32_MIN, INT32_MIN + 1, -65536,        -2,       -1, 0, 1, 2, 31, 32, 65535,
      1 << 30,   -(1 << 30),    INT32_MAX - 1, INT32_MAX};
  auto exact = [](Arith k, int64_t a, int64_t b) -> bool {
    int64_t r = 0;
    switch (k) {
      case Arith::add: r = a + b; break;
      case Arith::sub: r = a - b; break;
      case Arith::mul: r = a * b; break;
      case Arith::shl:
        if (b < 0 || b >= 32) return a != 0;
        r = a * (int64_t{1} << b);
        break;
    }
    return r < INT32_MIN || r > INT32_MAX;
  };
  int overflows = 0;
  for (Arith k : {Arith::add, Arith::sub, Arith::mul, Arith::shl})
    for (int32_t a : edge)
      for (int32_t b : edge) {
        const bool want = exact(k, a, b);
        overflows += want;
        EXPECT_EQ(any_int32_overflow(k, &a, &b, 1), want) << static_cast<int>(k) << " " << a << " " << b;
      }
  EXPECT_GT(overflows, 100);
  std::mt19937 rng(7);
  for (int trial = 0; trial < 400; ++trial) {
    const auto k = static_cast<Arith>(trial % 4);
    const int n = 1 + static_cast<int>(rng() % 70);
    std::vector<int32_t> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {  // small operands: no overflow
      a[static_cast<size_t>(i)] = static_cast<int32_t>(rng() % 2001) - 1000;
      b[static_cast<size_t>(i)] =
          k == Arith::shl ? static_cast<int32_t>(rng() % 8) : static_cast<int32_t>(rng() % 2001) - 1000;
    }
    bool want = false;
    if (trial % 3 != 0) {  // one lane with edge operands
      const auto at = static_cast<size_t>(rng() % static_cast<unsigned>(n));
      a[at] = edge[rng() % edge.size()];
      b[at] = edge[rng() % edge.size()];
      want = exact(k, a[at], b[at]);
    }
    EXPECT_EQ(any_int32_overflow(k, a.data(), b.data(), n), want) << "trial " << trial;
  }
}

TEST(SanitizerPoison, NoOverflowNoFinding) {
  std::vector<float> x(16 * 5, 1.0f), out(80, 0.0f);
  exec::Memory mem;
  int xb = test::add_buffer(mem, x, "x_ptr", ir::Elem::f32);
  int ob = test::add_buffer(mem, out, "out_ptr", ir::Elem::f32);
  Outcome r = sanitize(kHere / "overflow.ttir", {exec::Arg::buf(xb), exec::Arg::buf(ob), exec::Arg::i64(16)},
                       mem, {5, 1, 1});
  EXPECT_TRUE(r.findings.empty()) << describe(r.findings);
}

TEST(SanitizerPoison, DivisionByZeroIsReportedAtTheDivisionWhenItsResultIsStored) {
  std::vector<int32_t> a(16), b(16), out(16, 0);
  for (int i = 0; i < 16; ++i) a[i] = 100 + i, b[i] = i;  // b[0] = 0
  exec::Memory mem;
  int ab = test::add_buffer(mem, a, "a_ptr", ir::Elem::i32);
  int bb = test::add_buffer(mem, b, "b_ptr", ir::Elem::i32);
  int ob = test::add_buffer(mem, out, "out_ptr", ir::Elem::i32);
  std::vector<exec::Arg> args{exec::Arg::buf(ab), exec::Arg::buf(bb), exec::Arg::buf(ob), exec::Arg::i64(16)};
  Outcome r = sanitize(kHere / "divide.ttir", args, mem);
  ASSERT_EQ(r.findings.size(), 1u) << describe(r.findings);
  const Finding& f = r.findings[0];
  EXPECT_EQ(f.kind, Kind::division_by_zero);
  EXPECT_EQ(f.site.op, "arith.divsi");
  EXPECT_EQ(f.site.line, kline("q = a // b"));
  EXPECT_EQ(f.lanes, 1);
  EXPECT_EQ(f.first_lanes, std::vector<int64_t>{0});
  ASSERT_TRUE(f.use);
  EXPECT_EQ(f.use->op, "tt.store");
  EXPECT_EQ(out[5], 21);  // 105 / 5

  // The same division with every lane masked off at the store (n = 0): nothing consumes lane 0.
  args[3] = exec::Arg::i64(0);
  Outcome clean = sanitize(kHere / "divide.ttir", args, mem);
  EXPECT_TRUE(clean.findings.empty()) << describe(clean.findings);
}

TEST(SanitizerPoison, UndefinedBranchConditionsAreReportedAtTheBranch) {
  std::vector<float> x(1, 1.0f), out(2, 0.0f);
  exec::Memory mem;
  int xb = test::add_buffer(mem, x, "x_ptr", ir::Elem::f32);
  int ob = test::add_buffer(mem, out, "out_ptr", ir::Elem::f32);
  // n = 0: the scalar load is masked off, so `v` is undefined; `if v > 0` and `while i < v` branch on it.
  Outcome r =
      sanitize(kHere / "undef_branch.ttir", {exec::Arg::buf(xb), exec::Arg::buf(ob), exec::Arg::i64(0)}, mem);
  ASSERT_EQ(r.findings.size(), 2u) << describe(r.findings);
  EXPECT_EQ(r.findings[0].kind, Kind::undefined_value);
  EXPECT_EQ(r.findings[0].site.op, "scf.if");
  EXPECT_EQ(r.findings[0].site.line, kline("if v > 0:"));
  EXPECT_EQ(r.findings[1].site.op, "scf.condition");
  EXPECT_EQ(r.findings[1].site.line, kline("while i < v:"));
  for (auto& f : r.findings) EXPECT_EQ(f.cause->line, kline("v = tl.load(x_ptr, mask=n > 0)"));

  Outcome clean =
      sanitize(kHere / "undef_branch.ttir", {exec::Arg::buf(xb), exec::Arg::buf(ob), exec::Arg::i64(1)}, mem);
  EXPECT_TRUE(clean.findings.empty()) << describe(clean.findings);
}

// ---------------------------------------------------------------------------------------------
// Out of bounds, null, asserts

TEST(SanitizerMemory, OutOfBoundsLoadsAndStoreGroupedBySiteWithOffsets) {
  // add_tail (BLOCK 128) on 1000-element buffers with n = 1100 and 9 programs: program 7 lanes
  // 104..127 (offsets 1000..1023) and program 8 lanes 0..75 (offsets 1024..1099) are outside.
  std::vector<float> x(1000, 1.0f), y(1000, 2.0f), out(1000, 0.0f);
  exec::Memory mem;
  int xb = test::add_buffer(mem, x, "x_ptr", ir::Elem::f32);
  int yb = test::add_buffer(mem, y, "y_ptr", ir::Elem::f32);
  int ob = test::add_buffer(mem, out, "out_ptr", ir::Elem::f32);
  Outcome r = sanitize(kRoot / "tests/ttir/add_tail.ttir",
                       {exec::Arg::buf(xb), exec::Arg::buf(yb), exec::Arg::buf(ob), exec::Arg::i64(1100)},
                       mem, {9, 1, 1}, 3);
  ASSERT_EQ(r.findings.size(), 3u) << describe(r.findings);
  const fs::path py = kRoot / "tests/ttir/kernels.py";
  const Kind kinds[] = {Kind::oob_load, Kind::oob_load, Kind::oob_store};
  const char* names[] = {"x_ptr", "y_ptr", "out_ptr"};
  const int lines[] = {line_of(py, "x = tl.load(x_ptr + offs, mask=mask)"),
                       line_of(py, "y = tl.load(y_ptr + offs, mask=mask)"),
                       line_of(py, "tl.store(out_ptr + offs, x + y, mask=mask)")};
  for (int i = 0; i < 3; ++i) {
    const Finding& f = r.findings[i];
    EXPECT_EQ(f.kind, kinds[i]);
    EXPECT_EQ(f.site.line, lines[i]);
    ASSERT_TRUE(f.buffer);
    EXPECT_EQ(f.buffer->name, names[i]);
    EXPECT_EQ(f.buffer->numel, 1000);
    EXPECT_EQ(f.buffer->bytes, 4000u);
    EXPECT_EQ(f.buffer->dtype, "f32");
    EXPECT_EQ(f.programs, 2);
    EXPECT_EQ(f.first_programs, (std::vector<exec::ProgramId>{{7, 0, 0}, {8, 0, 0}}));
    EXPECT_EQ(f.lanes, 24 + 76);
    EXPECT_EQ(f.first_lanes, (std::vector<int64_t>{0, 1, 2, 3, 4}));
    EXPECT_EQ(f.offset_min, 1000);
    EXPECT_EQ(f.offset_max, 1099);
    EXPECT_EQ(f.elements_past, 100);
    EXPECT_EQ(f.elements_before, 0);
  }
  EXPECT_NE(r.findings[2].summary.find("up to 100 elements past the end"), std::string::npos)
      << r.findings[2].summary;
  EXPECT_EQ(out[999], 3.0f);  // in-bounds lanes still ran
}

TEST(SanitizerMemory, ManyThreadsGiveTheSameCounts) {
  // 64 programs of 128 lanes over 4000 elements with n = 8192: programs 32..63 wholly outside
  // (offsets up to 8191), program 31 lanes 32..127 outside (offsets 4000..4095).
  std::vector<float> x(4000, 1.0f), y(4000, 2.0f), out(4000, 0.0f);
  for (int threads : {1, 4}) {
    exec::Memory mem;
    int xb = test::add_buffer(mem, x, "x_ptr", ir::Elem::f32);
    int yb = test::add_buffer(mem, y, "y_ptr", ir::Elem::f32);
    int ob = test::add_buffer(mem, out, "out_ptr", ir::Elem::f32);
    Outcome r = sanitize(kRoot / "tests/ttir/add_tail.ttir",
                         {exec::Arg::buf(xb), exec::Arg::buf(yb), exec::Arg::buf(ob), exec::Arg::i64(8192)},
                         mem, {64, 1, 1}, threads);
    ASSERT_EQ(r.findings.size(), 3u) << describe(r.findings);
    for (auto& f : r.findings) {
      EXPECT_EQ(f.programs, 33);
      EXPECT_EQ(f.lanes, 96 + 32 * 128);
      EXPECT_EQ(f.offset_min, 4000);
      EXPECT_EQ(f.offset_max, 8191);
      EXPECT_EQ(f.first_programs.front(), (exec::ProgramId{31, 0, 0}));
    }
  }
}

TEST(SanitizerMemory, OutOfBoundsAtomic) {
  std::vector<int32_t> idx(16), hist(10, 0);
  for (int i = 0; i < 16; ++i) idx[i] = i;
  exec::Memory mem;
  int ib = test::add_buffer(mem, idx, "idx_ptr", ir::Elem::i32);
  int hb = test::add_buffer(mem, hist, "hist_ptr", ir::Elem::i32);
  Outcome r = sanitize(kHere / "atomic_hist.ttir", {exec::Arg::buf(ib), exec::Arg::buf(hb)}, mem);
  ASSERT_EQ(r.findings.size(), 1u) << describe(r.findings);
  const Finding& f = r.findings[0];
  EXPECT_EQ(f.kind, Kind::oob_atomic);
  EXPECT_EQ(f.site.op, "tt.atomic_rmw");
  EXPECT_EQ(f.site.line, kline("tl.atomic_add(hist_ptr + idx, 1)"));
  EXPECT_EQ(f.lanes, 6);
  EXPECT_EQ(f.offset_min, 10);
  EXPECT_EQ(f.offset_max, 15);
  EXPECT_EQ(f.elements_past, 6);
  EXPECT_EQ(f.buffer->name, "hist_ptr");
  EXPECT_EQ(hist, std::vector<int32_t>(10, 1));
}

TEST(SanitizerMemory, NullPointer) {
  std::vector<float> y(128, 2.0f), out(128, 0.0f);
  exec::Memory mem;
  int yb = test::add_buffer(mem, y, "y_ptr", ir::Elem::f32);
  int ob = test::add_buffer(mem, out, "out_ptr", ir::Elem::f32);
  exec::Arg null_ptr;  // a scalar 0 for a pointer argument: the null pointer
  Outcome r = sanitize(kRoot / "tests/ttir/add_tail.ttir",
                       {null_ptr, exec::Arg::buf(yb), exec::Arg::buf(ob), exec::Arg::i64(128)}, mem);
  ASSERT_EQ(r.findings.size(), 1u) << describe(r.findings);
  const Finding& f = r.findings[0];
  EXPECT_EQ(f.kind, Kind::null_pointer);
  EXPECT_EQ(f.site.op, "tt.load");
  EXPECT_EQ(f.lanes, 128);
  EXPECT_TRUE(f.has_addresses);
  EXPECT_EQ(f.address_min, 0u);
  EXPECT_EQ(f.address_max, 127u * 4);
  EXPECT_FALSE(f.buffer);
}

TEST(SanitizerMemory, FailedAssert) {
  std::vector<int32_t> x(64, 2), y(64, 0);
  x[37] = -4;
  exec::Memory mem;
  int xb = test::add_buffer(mem, x, "x_ptr", ir::Elem::i32);
  int yb = test::add_buffer(mem, y, "y_ptr", ir::Elem::i32);
  Outcome r = sanitize(kRoot / "tests/ttir/device_assert_fail.ttir", {exec::Arg::buf(xb), exec::Arg::buf(yb)},
                       mem, {2, 1, 1});
  ASSERT_EQ(r.findings.size(), 1u) << describe(r.findings);
  const Finding& f = r.findings[0];
  EXPECT_EQ(f.kind, Kind::assert_failed);
  EXPECT_EQ(f.site.op, "tt.assert");
  EXPECT_EQ(f.site.line,
            line_of(kRoot / "tests/ttir/kernels.py", "tl.device_assert(x >= 0, \"x must be non-negative\")"));
  EXPECT_EQ(f.message, "x must be non-negative");
  EXPECT_EQ(f.programs, 1);
  EXPECT_EQ(f.first_programs, (std::vector<exec::ProgramId>{{1, 0, 0}}));
  EXPECT_EQ(f.lanes, 1);
  EXPECT_EQ(f.first_lanes, std::vector<int64_t>{37 - 32});
}

TEST(SanitizerMemory, AbortOnFirstStopsTheLaunch) {
  std::vector<float> x(1000, 1.0f), y(1000, 2.0f), out(1000, 0.0f);
  exec::Memory mem;
  int xb = test::add_buffer(mem, x, "x_ptr", ir::Elem::f32);
  int yb = test::add_buffer(mem, y, "y_ptr", ir::Elem::f32);
  int ob = test::add_buffer(mem, out, "out_ptr", ir::Elem::f32);
  SanitizerOptions so;
  so.abort_on_first = true;
  Outcome r = sanitize(kRoot / "tests/ttir/add_tail.ttir",
                       {exec::Arg::buf(xb), exec::Arg::buf(yb), exec::Arg::buf(ob), exec::Arg::i64(1100)},
                       mem, {9, 1, 1}, 1, so);
  EXPECT_TRUE(r.aborted);
  ASSERT_EQ(r.findings.size(), 1u) << describe(r.findings);
  EXPECT_EQ(r.findings[0].kind, Kind::oob_load);
  EXPECT_EQ(out[1000 - 1], 0.0f);  // program 7 stopped at its first load, before its store
}

// Regression (issue 8, item 4): the sanitizer kept every offending program id in a set per site,
// about 40 bytes per program (8 GiB for a 2^31-program grid). Each program of this kernel stores 4
// lanes at offsets pid*4 .. pid*4+3 of a 10-element buffer, twice (a loop), at one site. Expected
// counts by hand: programs 0 and 1 are inside; program 2 has lanes 2, 3 outside; every later program
// all 4 lanes. The retained state must not grow with the grid, and the counts must stay exact (a
// program counts once however often it misbehaves), on several threads.
const char* kStoreTwice = R"(module {
  tt.func public @store_twice(%out: !tt.ptr<f32>) attributes {noinline = false} {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c2 = arith.constant 2 : i32
    %c4 = arith.constant 4 : i32
    %pid = tt.get_program_id x : i32
    %base = arith.muli %pid, %c4 : i32
    %r = tt.make_range {end = 4 : i32, start = 0 : i32} : tensor<4xi32>
    %b = tt.splat %base : i32 -> tensor<4xi32>
    %offs = arith.addi %b, %r : tensor<4xi32>
    %p = tt.splat %out : !tt.ptr<f32> -> tensor<4x!tt.ptr<f32>>
    %q = tt.addptr %p, %offs : tensor<4x!tt.ptr<f32>>, tensor<4xi32>
    %v = arith.constant dense<1.000000e+00> : tensor<4xf32>
    scf.for %i = %c0 to %c2 step %c1  : i32 {
      tt.store %q, %v : tensor<4x!tt.ptr<f32>>
    }
    tt.return
  }
}
)";

struct Retained {
  Finding finding;
  size_t bytes = 0;  // Sanitizer::retained_bytes() at the end of the launch, before finish()
};

Retained store_twice(std::array<int64_t, 3> grid, int threads) {
  ir::Module m = ir::read(kStoreTwice, "store_twice.ttir");
  ir::verify(m);
  exec::Engine e(m);
  Sanitizer s(m);
  std::vector<float> out(10, 0.0f);
  exec::Memory mem;
  int ob = test::add_buffer(mem, out, "out_ptr", ir::Elem::f32);
  exec::LaunchOptions o;
  o.grid = grid;
  o.threads = threads;
  o.observers = {&s};
  e.launch("store_twice", {exec::Arg::buf(ob)}, mem, o);
  Retained r;
  r.bytes = s.retained_bytes();
  s.finish(LaunchInfo{"store_twice", {}});
  EXPECT_EQ(s.findings().size(), 1u) << describe(s.findings());
  if (!s.findings().empty()) r.finding = s.findings()[0];
  return r;
}

TEST(SanitizerMemory, ProgramsAreCountedInMemoryThatDoesNotGrowWithTheGrid) {
  Retained small = store_twice({1000, 1, 1}, 2);
  Retained big = store_twice({200000, 1, 1}, 2);
  for (auto [r, g] : {std::pair{&small, int64_t{1000}}, std::pair{&big, int64_t{200000}}}) {
    const Finding& f = r->finding;
    EXPECT_EQ(f.kind, Kind::oob_store);
    EXPECT_EQ(f.programs, g - 2);
    EXPECT_EQ(f.occurrences, 2 * (g - 2));
    EXPECT_EQ(f.lanes, 2 * (2 + 4 * (g - 3)));
    EXPECT_EQ(f.first_programs,
              (std::vector<exec::ProgramId>{{2, 0, 0}, {3, 0, 0}, {4, 0, 0}, {5, 0, 0}, {6, 0, 0}}));
    EXPECT_EQ(f.last_program, (exec::ProgramId{static_cast<int32_t>(g - 1), 0, 0}));
    EXPECT_EQ(f.offset_min, 10);
    EXPECT_EQ(f.offset_max, 4 * g - 1);
    EXPECT_NE(f.summary.find(fmt::format("in {} programs", g - 2)), std::string::npos) << f.summary;
  }
  // One site: a record of a few hundred bytes and a flag per program state, whatever the grid (a
  // second program state, when the other thread started in time, adds a few bytes).
  EXPECT_LT(big.bytes, 2048u);
  EXPECT_LT(big.bytes, small.bytes + 64);
}

TEST(SanitizerMemory, ProgramIdsAreOrderedZYX) {
  // Grid (5, 2, 2): per (y, z) the programs x = 2, 3, 4 store outside (x = 2 partly): 12 programs.
  Retained r = store_twice({5, 2, 2}, 3);
  EXPECT_EQ(r.finding.programs, 12);
  EXPECT_EQ(r.finding.first_programs,
            (std::vector<exec::ProgramId>{{2, 0, 0}, {3, 0, 0}, {4, 0, 0}, {2, 1, 0}, {3, 1, 0}}));
  EXPECT_EQ(r.finding.last_program, (exec::ProgramId{4, 1, 1}));
}

TEST(SanitizerMemory, PoisonAnalysesCanBeTurnedOff) {
  std::vector<float> x(16, 1.0f), out(1, 0.0f);
  exec::Memory mem;
  int xb = test::add_buffer(mem, x, "x_ptr", ir::Elem::f32);
  int ob = test::add_buffer(mem, out, "out_ptr", ir::Elem::f32);
  SanitizerOptions so;
  so.poison = false;
  Outcome r = sanitize(kHere / "undef_sum.ttir", {exec::Arg::buf(xb), exec::Arg::buf(ob), exec::Arg::i64(10)},
                       mem, {1, 1, 1}, 1, so);
  EXPECT_TRUE(r.findings.empty());
  ir::Module m = ir::read(slurp(kHere / "undef_sum.ttir"), "undef_sum.ttir");
  ir::verify(m);
  EXPECT_EQ(Sanitizer(m, so).kinds() & exec::kOpResult, 0u);
  EXPECT_NE(Sanitizer(m).kinds() & exec::kOpResult, 0u);
  EXPECT_GT(Sanitizer(m).watched_ops(), 0u);
}

// Regression (issue 7, bug 2): undefined lanes flow through the ops Triton 3.9 added. The taint rules
// come from the op registry; they were once matched by name, and unknown names (tt.approx_divf,
// tt.atomic_load, tt.atomic_store) carried nothing, so these findings were lost. In each kernel the
// lanes 4..7 of an 8-lane masked access are undefined (mask = lane < 4, no `other`) and reach a store.
TEST(SanitizerPoison, UndefinedLanesFlowThroughTriton39Ops) {
  const std::string head = R"(module {
  tt.func public @k(%x: !tt.ptr<f32>, %out: !tt.ptr<f32>) attributes {noinline = false} {
    %r = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32>
    %c4 = arith.constant dense<4> : tensor<8xi32>
    %m = arith.cmpi slt, %r, %c4 : tensor<8xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<8x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %r : tensor<8x!tt.ptr<f32>>, tensor<8xi32>
    %os = tt.splat %out : !tt.ptr<f32> -> tensor<8x!tt.ptr<f32>>
    %op = tt.addptr %os, %r : tensor<8x!tt.ptr<f32>>, tensor<8xi32>
)";
  const std::string tail = "    tt.return\n  }\n}\n";
  struct Case {
    const char* what;
    std::string body;
    const char* site;   // where the finding is reported
    const char* cause;  // the op that left the lanes undefined
  };
  const Case cases[] = {
      {"approx_divf",
       "    %v = tt.load %xp, %m : tensor<8x!tt.ptr<f32>>\n"
       "    %q = tt.approx_divf %v, %v : tensor<8xf32>\n"
       "    tt.store %op, %q : tensor<8x!tt.ptr<f32>>\n",
       "tt.store", "tt.load"},
      {"atomic_load",
       "    %v = tt.atomic_load relaxed, gpu, %xp, %m : (tensor<8x!tt.ptr<f32>>, tensor<8xi1>) -> "
       "tensor<8xf32>\n"
       "    tt.store %op, %v : tensor<8x!tt.ptr<f32>>\n",
       "tt.store", "tt.atomic_load"},
      {"atomic_store",
       "    %v = tt.load %xp, %m : tensor<8x!tt.ptr<f32>>\n"
       "    tt.atomic_store relaxed, gpu, %op, %v : tensor<8x!tt.ptr<f32>>\n",
       "tt.atomic_store", "tt.load"},
  };
  for (const Case& c : cases) {
    ir::Module m = ir::read(head + c.body + tail, std::string(c.what) + ".ttir");
    ir::verify(m);
    std::vector<float> x(8, 1.0f), out(8, 0.0f);
    exec::Memory mem;
    int xb = test::add_buffer(mem, x, "x", ir::Elem::f32);
    int ob = test::add_buffer(mem, out, "out", ir::Elem::f32);
    exec::Engine e(m);
    Sanitizer s(m);
    exec::LaunchOptions o;
    o.observers = {&s};
    e.launch("k", {exec::Arg::buf(xb), exec::Arg::buf(ob)}, mem, o);
    s.finish(LaunchInfo{"k", {}});
    ASSERT_EQ(s.findings().size(), 1u) << c.what << "\n" << describe(s.findings());
    const Finding& f = s.findings()[0];
    EXPECT_EQ(f.kind, Kind::undefined_value) << c.what;
    EXPECT_EQ(f.site.op, c.site) << c.what;
    ASSERT_TRUE(f.cause.has_value()) << c.what;
    EXPECT_EQ(f.cause->op, c.cause) << c.what;
    EXPECT_EQ(f.lanes, 4) << c.what;
    EXPECT_EQ(f.first_lanes, (std::vector<int64_t>{4, 5, 6, 7})) << c.what;
  }
}

}  // namespace
}  // namespace tilescope::analysis
