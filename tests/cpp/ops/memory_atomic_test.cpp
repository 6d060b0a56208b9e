// tt.atomic_rmw and tt.atomic_cas kernels (reference §1.3, §5.4), driven by hand-built Steps.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>
#include <thread>

#include "tests/cpp/ops/memory_harness.h"
#include "tilescope/ir/diag.h"

using namespace memtest;
namespace ops = tilescope::ops;

namespace {

/// Run one tensor atomic_rmw `kind` with one lane per element of `init` (lane i -> element i) and
/// return {old values, memory after}.
template <class T>
std::pair<std::vector<T>, std::vector<T>> rmw(const char* kind, Elem e, std::vector<T> init,
                                              const std::vector<T>& vals, std::vector<uint8_t> mask = {}) {
  Harness h;
  const int64_t n = static_cast<int64_t>(init.size());
  int x = h.buffer("x", init.data(), n, e);
  std::vector<uint64_t> a(init.size());
  for (int64_t i = 0; i < n; ++i) a[i] = h.mem.vaddr(x) + i * sizeof(T);
  int p = h.slot_of(h.ptr_tensor(e, {n}), a);
  int v = h.slot_of(h.tensor(e, {n}), vals);
  if (mask.empty()) mask.assign(init.size(), 1);
  int m = h.slot_of(h.tensor(Elem::i1, {n}), mask);
  int r = h.slot(h.tensor(e, {n}));
  ir::Op& op = h.op("tt.atomic_rmw");
  op.attrs["atomic_rmw_op"] = keyword(kind);
  op.attrs["sem"] = keyword("acq_rel");
  op.attrs["scope"] = keyword("gpu");
  h.run(h.step(op, {p, v, m}, {r}, ops::lower_atomic_rmw));
  EXPECT_EQ(h.stats.out_of_bounds, 0);
  return {h.get<T>(r), init};
}

using I32 = std::vector<int32_t>;
using I64 = std::vector<int64_t>;

}  // namespace

TEST(MemoryAtomic, EveryIntegerKindOnI32) {
  const I32 init = {5, -3, 0xF0, -8}, vals = {3, -5, 0xFF, 2};
  struct Case {
    const char* kind;
    I32 after;
  };
  // Hand-computed (two's complement; umax/umin compare as unsigned: -3 = 0xFFFFFFFD).
  const Case cases[] = {
      {"and", {1, -7, 0xF0, 0}},   {"or", {7, -1, 0xFF, -6}},  {"xor", {6, 6, 0x0F, -6}},
      {"add", {8, -8, 0x1EF, -6}}, {"max", {5, -3, 0xFF, 2}},  {"min", {3, -5, 0xF0, -8}},
      {"umax", {5, -3, 0xFF, -8}}, {"umin", {3, -5, 0xF0, 2}}, {"exch", {3, -5, 0xFF, 2}},
  };
  for (const Case& c : cases) {
    auto [old, after] = rmw<int32_t>(c.kind, Elem::i32, init, vals);
    EXPECT_EQ(old, init) << c.kind;
    EXPECT_EQ(after, c.after) << c.kind;
  }
}

TEST(MemoryAtomic, EveryIntegerKindOnI64) {
  const int64_t big = int64_t{1} << 40, mn = std::numeric_limits<int64_t>::min(),
                mx = std::numeric_limits<int64_t>::max();
  const I64 init = {big, -1, 7, mn}, vals = {big, 1, -7, -1};
  struct Case {
    const char* kind;
    I64 after;
  };
  const Case cases[] = {
      {"and", {big, 1, 1, mn}},     {"or", {big, -1, -1, -1}}, {"xor", {0, -2, -2, mx}},
      {"add", {2 * big, 0, 0, mx}}, {"max", {big, 1, 7, -1}},  {"min", {big, -1, -7, mn}},
      {"umax", {big, -1, -7, -1}},  {"umin", {big, 1, 7, mn}}, {"exch", {big, 1, -7, -1}},
  };
  for (const Case& c : cases) {
    auto [old, after] = rmw<int64_t>(c.kind, Elem::i64, init, vals);
    EXPECT_EQ(old, init) << c.kind;
    EXPECT_EQ(after, c.after) << c.kind;
  }
}

TEST(MemoryAtomic, FaddF32AndF64RoundOnce) {
  auto [old32, after32] =
      rmw<float>("fadd", Elem::f32, {1.5f, -0.0f, 1e30f, 3.0f}, {2.25f, 0.0f, 1e30f, 0.1f});
  EXPECT_EQ(old32, (std::vector<float>{1.5f, -0.0f, 1e30f, 3.0f}));
  EXPECT_EQ(after32, (std::vector<float>{3.75f, 0.0f, 2e30f, 3.0f + 0.1f}));
  EXPECT_FALSE(std::signbit(after32[1]));  // -0 + +0 = +0 (IEEE)
  auto [old64, after64] = rmw<double>("fadd", Elem::f64, {0.1, 1e300, -2.0}, {0.2, 1e300, 2.0});
  EXPECT_EQ(after64, (std::vector<double>{0.1 + 0.2, 2e300, 0.0}));
}

TEST(MemoryAtomic, FaddF16AndBf16RoundToNearestEven) {
  // f16: 1 + 0.5 = 1.5 (0x3E00); 2048 + 1 ties to 2048 (0x6800); 2048 + 3 = 2051 ties to 2052
  // (0x6802, even mantissa); 65504 + 32 = 65536 rounds to +inf (0x7C00).
  auto [o16, a16] =
      rmw<uint16_t>("fadd", Elem::f16, {0x3C00, 0x6800, 0x6800, 0x7BFF}, {0x3800, 0x3C00, 0x4200, 0x5000});
  EXPECT_EQ(o16, (std::vector<uint16_t>{0x3C00, 0x6800, 0x6800, 0x7BFF}));
  EXPECT_EQ(a16, (std::vector<uint16_t>{0x3E00, 0x6800, 0x6802, 0x7C00}));
  // bf16: 1 + 0.5 = 1.5 (0x3FC0); 256 + 1 ties to 256 (0x4380); 256 + 3 = 259 ties to 260 (0x4382).
  auto [ob, ab] = rmw<uint16_t>("fadd", Elem::bf16, {0x3F80, 0x4380, 0x4380}, {0x3F00, 0x3F80, 0x4040});
  EXPECT_EQ(ab, (std::vector<uint16_t>{0x3FC0, 0x4380, 0x4382}));
}

TEST(MemoryAtomic, FloatExchangeIsABitExchange) {
  auto [old, after] = rmw<float>("exch", Elem::f32, {1.0f, 2.0f}, {-0.0f, 7.5f});
  EXPECT_EQ(old, (std::vector<float>{1.0f, 2.0f}));
  EXPECT_EQ(std::bit_cast<uint32_t>(after[0]), 0x80000000u);
  EXPECT_EQ(after[1], 7.5f);
}

TEST(MemoryAtomic, FloatMaxMinFollowMaxNum) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto [o1, a1] = rmw<float>("max", Elem::f32, {1.0f, nan, -2.0f}, {nan, 3.0f, -1.0f});
  EXPECT_EQ(a1[0], 1.0f);
  EXPECT_EQ(a1[1], 3.0f);
  EXPECT_EQ(a1[2], -1.0f);
  auto [o2, a2] = rmw<float>("min", Elem::f32, {1.0f, -2.0f}, {0.5f, -1.0f});
  EXPECT_EQ(a2, (std::vector<float>{0.5f, -2.0f}));
}

TEST(MemoryAtomic, MaskedOffLanesGiveZeroAndLeaveMemory) {
  auto [old, after] = rmw<int32_t>("add", Elem::i32, {10, 20, 30, 40}, {1, 2, 3, 4}, {1, 0, 1, 0});
  EXPECT_EQ(old, (I32{10, 0, 30, 0}));
  EXPECT_EQ(after, (I32{11, 20, 33, 40}));
}

TEST(MemoryAtomic, LanesOnOneAddressApplyInIndexOrder) {
  Harness h;
  std::vector<int32_t> host = {-1, 10, -1};
  int x = h.buffer("x", host.data() + 1, 1, Elem::i32);
  const uint64_t b = h.mem.vaddr(x);
  int p = h.slot_of(h.ptr_tensor(Elem::i32, {4}), std::vector<uint64_t>(4, b));
  int v = h.slot_of<int32_t>(h.tensor(Elem::i32, {4}), {1, 2, 3, 4});
  int m = h.slot_of<uint8_t>(h.tensor(Elem::i1, {4}), {1, 1, 1, 1});
  int r = h.slot(h.tensor(Elem::i32, {4}));
  ir::Op& add = h.op("tt.atomic_rmw");
  add.attrs["atomic_rmw_op"] = integer(4);  // generic form: the RMWOp's integer value (add)
  h.run(h.step(add, {p, v, m}, {r}, ops::lower_atomic_rmw));
  EXPECT_EQ(h.get<int32_t>(r), (I32{10, 11, 13, 16}));
  EXPECT_EQ(host, (I32{-1, 20, -1}));
  ir::Op& xchg = h.op("tt.atomic_rmw");
  xchg.attrs["atomic_rmw_op"] = keyword("exch");
  h.run(h.step(xchg, {p, v, m}, {r}, ops::lower_atomic_rmw));
  EXPECT_EQ(h.get<int32_t>(r), (I32{20, 1, 2, 3}));
  EXPECT_EQ(host, (I32{-1, 4, -1}));
}

TEST(MemoryAtomic, OutOfBoundsLanesAreReportedSkippedAndGiveZero) {
  Harness h;
  std::vector<int32_t> host = {-99, 5, 6, -99};
  int x = h.buffer("x", host.data() + 1, 2, Elem::i32);
  Recorder oob(ex::kOutOfBounds);
  h.observe(&oob);
  const uint64_t b = h.mem.vaddr(x);
  int p = h.slot_of<uint64_t>(h.ptr_tensor(Elem::i32, {4}), {b, b + 8, b - 4, 0});
  int v = h.slot_of<int32_t>(h.tensor(Elem::i32, {4}), {1, 1, 1, 1});
  int m = h.slot_of<uint8_t>(h.tensor(Elem::i1, {4}), {1, 1, 1, 1});
  int r = h.slot(h.tensor(Elem::i32, {4}));
  ir::Op& op = h.op("tt.atomic_rmw");
  op.attrs["atomic_rmw_op"] = keyword("add");
  h.run(h.step(op, {p, v, m}, {r}, ops::lower_atomic_rmw));
  EXPECT_EQ(h.get<int32_t>(r), (I32{5, 0, 0, 0}));
  EXPECT_EQ(host, (I32{-99, 6, 6, -99}));
  EXPECT_EQ(h.stats.out_of_bounds, 3);
  ASSERT_EQ(oob.events.size(), 1u);
  EXPECT_EQ(oob.events[0].kind, ex::AccessKind::atomic);
  EXPECT_EQ(oob.events[0].bad, 3);
}

TEST(MemoryAtomic, ScalarForm) {
  Harness h;
  std::vector<int64_t> host = {100};
  int x = h.buffer("x", host.data(), 1, Elem::i64);
  int p = h.slot_of<uint64_t>(h.ptr(Elem::i64), {h.mem.vaddr(x)});
  int v = h.scalar_slot<int64_t>(Elem::i64, -30);
  int m = h.scalar_slot<uint8_t>(Elem::i1, 1);
  int r = h.slot(h.scalar(Elem::i64));
  ir::Op& op = h.op("tt.atomic_rmw");
  op.attrs["atomic_rmw_op"] = keyword("min");
  h.run(h.step(op, {p, v, m}, {r}, ops::lower_atomic_rmw));
  EXPECT_EQ(h.get<int64_t>(r)[0], 100);
  EXPECT_EQ(host[0], -30);
}

TEST(MemoryAtomic, RejectsMeaninglessCombinations) {
  Harness h;
  int p = h.slot(h.ptr_tensor(Elem::i32, {4}));
  int v = h.slot(h.tensor(Elem::i32, {4}));
  int r = h.slot(h.tensor(Elem::i32, {4}));
  auto lower = [&](ir::Op& op) {
    ex::Step s;
    s.in = {p, v};
    s.out = {r};
    s.in_types = {h.types[p], h.types[v]};
    s.out_types = {h.types[r]};
    ops::lower_atomic_rmw(op, h.planner, s);
  };
  ir::Op& fadd = h.op("tt.atomic_rmw");
  fadd.attrs["atomic_rmw_op"] = keyword("fadd");  // fadd on i32
  EXPECT_THROW(lower(fadd), tilescope::Error);
  ir::Op& missing = h.op("tt.atomic_rmw");
  EXPECT_THROW(lower(missing), tilescope::Error);
  ir::Op& unknown = h.op("tt.atomic_rmw");
  unknown.attrs["atomic_rmw_op"] = keyword("nand");
  EXPECT_THROW(lower(unknown), tilescope::Error);
}

TEST(MemoryAtomic, IncDecFollowPtxRedIncDec) {
  // PTX red.inc: old >= v ? 0 : old + 1; red.dec: old == 0 || old > v ? v : old - 1 (unsigned).
  Harness h;
  std::vector<uint32_t> host = {3, 5, 7, 0, 7, 3};
  int x = h.buffer("x", host.data(), 6, Elem::i32);
  std::vector<uint64_t> a(6);
  for (int i = 0; i < 6; ++i) a[i] = h.mem.vaddr(x) + 4 * i;
  std::vector<uint32_t> v(6, 5), old(6);
  auto inc = ex::pick_atomic_lanes(ex::Rmw::inc, Elem::i32);
  auto dec = ex::pick_atomic_lanes(ex::Rmw::dec, Elem::i32);
  ASSERT_TRUE(inc && dec);
  inc(h.prog, nullptr, 3, a.data(), nullptr, v.data(), old.data());
  dec(h.prog, nullptr, 3, a.data() + 3, nullptr, v.data(), old.data() + 3);
  EXPECT_EQ(host, (std::vector<uint32_t>{4, 0, 0, 5, 5, 2}));
  EXPECT_EQ(old, (std::vector<uint32_t>{3, 5, 7, 0, 7, 3}));
}

TEST(MemoryAtomic, CasComparesBitsAndReturnsOld) {
  Harness h;
  std::vector<int32_t> host = {0, 5};
  int x = h.buffer("x", host.data(), 2, Elem::i32);
  const uint64_t b = h.mem.vaddr(x);
  // Lane 0 swaps 0 -> 1; lane 1 (same address) then sees 1 != 0; lane 2 sees 5 != 4; lane 3 is OOB.
  int p = h.slot_of<uint64_t>(h.ptr_tensor(Elem::i32, {4}), {b, b, b + 4, b + 8});
  int c = h.slot_of<int32_t>(h.tensor(Elem::i32, {4}), {0, 0, 4, 0});
  int v = h.slot_of<int32_t>(h.tensor(Elem::i32, {4}), {1, 2, 9, 9});
  int r = h.slot(h.tensor(Elem::i32, {4}));
  h.run(h.step(h.op("tt.atomic_cas"), {p, c, v}, {r}, ops::lower_atomic_cas));
  EXPECT_EQ(h.get<int32_t>(r), (I32{0, 1, 5, 0}));
  EXPECT_EQ(host, (I32{1, 5}));
  EXPECT_EQ(h.stats.out_of_bounds, 1);

  // f32: -0.0 and +0.0 compare equal as floats but not as bits: no swap (atom.cas.b32 is bitwise).
  std::vector<float> fh = {0.0f};
  int y = h.buffer("y", fh.data(), 1, Elem::f32);
  int pf = h.slot_of<uint64_t>(h.ptr(Elem::f32), {h.mem.vaddr(y)});
  int cf = h.scalar_slot<float>(Elem::f32, -0.0f);
  int vf = h.scalar_slot<float>(Elem::f32, 3.0f);
  int rf = h.slot(h.scalar(Elem::f32));
  h.run(h.step(h.op("tt.atomic_cas"), {pf, cf, vf}, {rf}, ops::lower_atomic_cas));
  EXPECT_EQ(fh[0], 0.0f);
  int cf2 = h.scalar_slot<float>(Elem::f32, 0.0f);
  h.run(h.step(h.op("tt.atomic_cas"), {pf, cf2, vf}, {rf}, ops::lower_atomic_cas));
  EXPECT_EQ(fh[0], 3.0f);
  EXPECT_EQ(h.get<float>(rf)[0], 0.0f);
}

TEST(MemoryAtomic, ConcurrentAddsFromManyThreadsAreAtomic) {
  ex::Memory mem;
  alignas(8) int32_t counter = 0;
  alignas(8) float fsum = 0;
  alignas(8) uint16_t hsum = 0;  // f16 0.0
  ex::Buffer b1{"counter", Elem::i32, reinterpret_cast<std::byte*>(&counter), 4, {1}, {1}};
  ex::Buffer b2{"fsum", Elem::f32, reinterpret_cast<std::byte*>(&fsum), 4, {1}, {1}};
  ex::Buffer b3{"hsum", Elem::f16, reinterpret_cast<std::byte*>(&hsum), 2, {1}, {1}};
  const uint64_t a1 = mem.vaddr(mem.add(b1)), a2 = mem.vaddr(mem.add(b2)), a3 = mem.vaddr(mem.add(b3));
  auto add = ex::pick_atomic_lanes(ex::Rmw::add, Elem::i32);
  auto fadd = ex::pick_atomic_lanes(ex::Rmw::fadd, Elem::f32);
  auto hadd = ex::pick_atomic_lanes(ex::Rmw::fadd, Elem::f16);
  constexpr int kThreads = 8, kIters = 20000, kHalfIters = 200;
  std::vector<std::vector<int32_t>> olds(kThreads);
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t) {
    pool.emplace_back([&, t] {
      ex::Program p;
      p.memory = &mem;
      const int32_t one = 1;
      const float fone = 1.0f;
      const uint16_t hone = 0x3C00;
      for (int i = 0; i < kIters; ++i) {
        int32_t old = 0;
        float fold = 0;
        add(p, nullptr, 1, &a1, nullptr, &one, &old);
        fadd(p, nullptr, 1, &a2, nullptr, &fone, &fold);
        olds[t].push_back(old);
        if (i < kHalfIters) {
          uint16_t hold = 0;
          hadd(p, nullptr, 1, &a3, nullptr, &hone, &hold);
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  EXPECT_EQ(counter, kThreads * kIters);
  EXPECT_EQ(fsum, static_cast<float>(kThreads * kIters));  // exact: below 2^24
  // 1600 in f16 is 0x6640 (1600 = 1.5625 * 2^10), exact since every partial sum <= 2048 is.
  EXPECT_EQ(hsum, 0x6640);
  // Every old value 0 .. N-1 was seen exactly once: no lost or duplicated update.
  std::vector<int32_t> all;
  for (auto& v : olds) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  std::vector<int32_t> expect(all.size());
  std::iota(expect.begin(), expect.end(), 0);
  EXPECT_EQ(all, expect);
}

TEST(MemoryAtomic, MisalignedAddressesStillApplyOnce) {
  // An i32 atomic at byte offset 1 (the GPU would fault; tilescope applies it under a lock).
  Harness h;
  std::vector<uint8_t> host = {0, 1, 2, 3, 4, 5, 6, 7};  // malloc data: 16-byte aligned, so +1 is not
  int x = h.buffer("x", host.data(), 8, Elem::i8);
  const uint64_t a = h.mem.vaddr(x) + 1;
  const uint32_t v = 0x01010101u;
  uint32_t old = 0;
  ex::pick_atomic_lanes(ex::Rmw::add, Elem::i32)(h.prog, nullptr, 1, &a, nullptr, &v, &old);
  EXPECT_EQ(old, 0x04030201u);  // little-endian bytes 1..4
  EXPECT_EQ(host, (std::vector<uint8_t>{0, 2, 3, 4, 5, 5, 6, 7}));
  const uint32_t cmp = 0x05040302u, nv = 0xAABBCCDDu;
  ex::pick_cas_lanes(4)(h.prog, nullptr, 1, &a, &cmp, &nv, &old);
  EXPECT_EQ(old, 0x05040302u);
  EXPECT_EQ(host, (std::vector<uint8_t>{0, 0xDD, 0xCC, 0xBB, 0xAA, 5, 6, 7}));
}
