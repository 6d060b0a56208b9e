// tt.addptr, tt.load, tt.store kernels, driven by hand-built Steps (reference §1.2, §5.1; issue 2 item 5).
#include <cmath>
#include <limits>

#include "tests/cpp/ops/memory_harness.h"
#include "tilescope/ir/diag.h"

using namespace memtest;
namespace ops = tilescope::ops;

namespace {
constexpr float kCanary = -12345.0f;
}

TEST(MemoryAddptr, SignedI32OffsetsScaleByPointee) {
  Harness h;
  const int64_t base = int64_t{3} << 40;
  int p = h.slot_of<uint64_t>(h.ptr_tensor(Elem::f32, {4}), {base, base, base, base});
  int o = h.slot_of<int32_t>(h.tensor(Elem::i32, {4}), {0, 3, -2, std::numeric_limits<int32_t>::max()});
  int r = h.slot(h.ptr_tensor(Elem::f32, {4}));
  auto s = h.step(h.op("tt.addptr"), {p, o}, {r}, ops::lower_addptr);
  h.run(s);
  auto v = h.get<uint64_t>(r);
  EXPECT_EQ(v[0], uint64_t(base));
  EXPECT_EQ(v[1], uint64_t(base + 12));
  EXPECT_EQ(v[2], uint64_t(base - 8));
  EXPECT_EQ(v[3], uint64_t(base + int64_t{2147483647} * 4));
}

TEST(MemoryAddptr, I64OffsetsWrapAndOtherPointeeSizes) {
  Harness h;
  const uint64_t base = uint64_t{5} << 40;
  // f16 pointee: 2 bytes per element; i64 offsets beyond 32 bits.
  int p = h.slot_of<uint64_t>(h.ptr_tensor(Elem::f16, {3}), {base, base, 0});
  int o = h.slot_of<int64_t>(h.tensor(Elem::i64, {3}), {int64_t{1} << 33, -(int64_t{1} << 33), -1});
  int r = h.slot(h.ptr_tensor(Elem::f16, {3}));
  h.run(h.step(h.op("tt.addptr"), {p, o}, {r}, ops::lower_addptr));
  auto v = h.get<uint64_t>(r);
  EXPECT_EQ(v[0], base + (uint64_t{1} << 34));
  EXPECT_EQ(v[1], base - (uint64_t{1} << 34));
  EXPECT_EQ(v[2], ~uint64_t{0} - 1);  // 0 + (-1)*2 wraps in 64 bits

  // Scalar forms: !tt.ptr<f64> + i32, and !tt.ptr<i8> + i64.
  int ps = h.scalar_slot<uint64_t>(Elem::ptr, base);
  h.types[ps] = h.ptr(Elem::f64);
  int os = h.scalar_slot<int32_t>(Elem::i32, -3);
  int rs = h.slot(h.ptr(Elem::f64));
  h.run(h.step(h.op("tt.addptr"), {ps, os}, {rs}, ops::lower_addptr));
  EXPECT_EQ(h.get<uint64_t>(rs)[0], base - 24);
  int pb = h.scalar_slot<uint64_t>(Elem::ptr, base);
  h.types[pb] = h.ptr(Elem::i8);
  int ob = h.scalar_slot<int64_t>(Elem::i64, 7);
  int rb = h.slot(h.ptr(Elem::i8));
  h.run(h.step(h.op("tt.addptr"), {pb, ob}, {rb}, ops::lower_addptr));
  EXPECT_EQ(h.get<uint64_t>(rb)[0], base + 7);
}

TEST(MemoryAddptr, RejectsFloatOffsets) {
  Harness h;
  int p = h.slot(h.ptr_tensor(Elem::f32, {4}));
  int o = h.slot(h.tensor(Elem::f32, {4}));
  int r = h.slot(h.ptr_tensor(Elem::f32, {4}));
  ex::Step s;
  s.in = {p, o};
  s.out = {r};
  s.in_types = {h.types[p], h.types[o]};
  s.out_types = {h.types[r]};
  EXPECT_THROW(ops::lower_addptr(h.op("tt.addptr"), h.planner, s), tilescope::Error);
}

TEST(MemoryLoad, ContiguousUnmaskedLoadCopiesAndReportsOneCleanEvent) {
  Harness h;
  std::vector<float> host(64);
  for (int i = 0; i < 64; ++i) host[i] = static_cast<float>(i) * 0.5f;
  int x = h.buffer("x", host.data(), 64, Elem::f32);
  Recorder all(ex::kAccess), oob(ex::kOutOfBounds);
  h.observe(&all);
  h.observe(&oob);
  std::vector<uint64_t> a(16);
  for (int i = 0; i < 16; ++i) a[i] = h.mem.vaddr(x) + 4 * (40 + i);
  int p = h.slot_of(h.ptr_tensor(Elem::f32, {16}), a);
  int r = h.slot(h.tensor(Elem::f32, {16}));
  h.run(h.step(h.op("tt.load"), {p}, {r}, ops::lower_load));
  auto v = h.get<float>(r);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(v[i], (40 + i) * 0.5f);
  EXPECT_EQ(h.stats.out_of_bounds, 0);
  ASSERT_EQ(all.events.size(), 1u);
  EXPECT_EQ(all.events[0].kind, ex::AccessKind::load);
  EXPECT_EQ(all.events[0].lanes, 16);
  EXPECT_EQ(all.events[0].bad, 0);
  EXPECT_EQ(all.events[0].elem_bytes, 4);
  EXPECT_EQ(all.events[0].addrs, a);
  EXPECT_EQ(all.events[0].mask, std::vector<uint8_t>(16, 1));  // no mask operand: all lanes active
  EXPECT_TRUE(oob.events.empty());                             // a clean access is not an out-of-bounds event
}

TEST(MemoryLoad, MaskedOffLanesGetOtherAndAreNeverDereferenced) {
  Harness h;
  std::vector<float> host = {kCanary, 10, 11, 12, 13, kCanary};
  int x = h.buffer("x", host.data() + 1, 4, Elem::f32);
  Recorder oob(ex::kOutOfBounds);
  h.observe(&oob);
  const uint64_t b = h.mem.vaddr(x);
  // Masked-off lanes point at null, far outside, before the start and one past the end: touching
  // any of them would be a bug (null would index buffer -1 of Memory::host).
  int p = h.slot_of<uint64_t>(h.ptr_tensor(Elem::f32, {8}),
                              {b + 12, b + 8, 0, b + 4, b + 4000, b - 4, b + 16, b});
  int m = h.slot_of<uint8_t>(h.tensor(Elem::i1, {8}), {1, 1, 0, 1, 0, 0, 0, 1});
  int o = h.slot_of<float>(h.tensor(Elem::f32, {8}), {100, 101, 102, 103, 104, 105, 106, 107});
  int r = h.slot(h.tensor(Elem::f32, {8}));
  h.run(h.step(h.op("tt.load"), {p, m, o}, {r}, ops::lower_load));
  EXPECT_EQ(h.get<float>(r), (std::vector<float>{13, 12, 102, 11, 104, 105, 106, 10}));
  EXPECT_EQ(h.stats.out_of_bounds, 0);
  EXPECT_TRUE(oob.events.empty());

  // Without `other`, masked-off lanes are 0 (GPU and interpreter agree, reference §5).
  int r2 = h.slot(h.tensor(Elem::f32, {8}));
  h.run(h.step(h.op("tt.load"), {p, m}, {r2}, ops::lower_load));
  EXPECT_EQ(h.get<float>(r2), (std::vector<float>{13, 12, 0, 11, 0, 0, 0, 10}));
}

TEST(MemoryLoad, GatherAcrossTwoBuffersIsCleanWhenEveryLaneIsInItsOwnBuffer) {
  Harness h;
  std::vector<int16_t> xs = {1, 2, 3, 4}, ys = {-1, -2};
  int x = h.buffer("x", xs.data(), 4, Elem::i16);
  int y = h.buffer("y", ys.data(), 2, Elem::i16);
  uint64_t bx = h.mem.vaddr(x), by = h.mem.vaddr(y);
  int p = h.slot_of<uint64_t>(h.ptr_tensor(Elem::i16, {4}), {bx + 6, by + 2, bx, by});
  int r = h.slot(h.tensor(Elem::i16, {4}));
  h.run(h.step(h.op("tt.load"), {p}, {r}, ops::lower_load));
  EXPECT_EQ(h.get<int16_t>(r), (std::vector<int16_t>{4, -2, 1, -1}));
  EXPECT_EQ(h.stats.out_of_bounds, 0);
}

TEST(MemoryLoad, OutOfBoundsLanesAreReportedAndGetOther) {
  Harness h;
  std::vector<double> host = {1.5, 2.5, 3.5};
  int x = h.buffer("x", host.data(), 3, Elem::f64);
  Recorder all(ex::kAccess), oob(ex::kOutOfBounds);
  h.observe(&all);
  h.observe(&oob);
  const uint64_t b = h.mem.vaddr(x);
  // lane 1: one past the end; lane 2: partly outside (last element + 4 bytes); lane 3: before start.
  int p = h.slot_of<uint64_t>(h.ptr_tensor(Elem::f64, {4}), {b + 16, b + 24, b + 20, b - 8});
  int m = h.slot_of<uint8_t>(h.tensor(Elem::i1, {4}), {1, 1, 1, 1});
  int o = h.slot_of<double>(h.tensor(Elem::f64, {4}), {-1, -2, -3, -4});
  int r = h.slot(h.tensor(Elem::f64, {4}));
  h.run(h.step(h.op("tt.load"), {p, m, o}, {r}, ops::lower_load));
  EXPECT_EQ(h.get<double>(r), (std::vector<double>{3.5, -2, -3, -4}));
  EXPECT_EQ(h.stats.out_of_bounds, 3);
  ASSERT_EQ(all.events.size(), 1u);
  EXPECT_EQ(all.events[0].bad, 3);
  ASSERT_EQ(oob.events.size(), 1u);
  EXPECT_EQ(oob.events[0].bad, 3);
}

TEST(MemoryLoad, NullAndIntMadeAddressesAreReported) {
  Harness h;
  std::vector<int32_t> host = {7};
  int x = h.buffer("x", host.data(), 1, Elem::i32);
  // null; an integer-made address (region 0); an unregistered region; the valid element.
  const uint64_t unregistered = uint64_t{9} << 40;
  int p = h.slot_of<uint64_t>(h.ptr_tensor(Elem::i32, {4}),
                              {0, reinterpret_cast<uint64_t>(host.data()), unregistered, h.mem.vaddr(x)});
  int r = h.slot(h.tensor(Elem::i32, {4}));
  h.run(h.step(h.op("tt.load"), {p}, {r}, ops::lower_load));
  EXPECT_EQ(h.get<int32_t>(r), (std::vector<int32_t>{0, 0, 0, 7}));
  EXPECT_EQ(h.stats.out_of_bounds, 3);

  // A scalar load through a null pointer.
  int ps = h.scalar_slot<uint64_t>(Elem::ptr, 0);
  h.types[ps] = h.ptr(Elem::i32);
  int rs = h.slot(h.scalar(Elem::i32));
  h.run(h.step(h.op("tt.load"), {ps}, {rs}, ops::lower_load));
  EXPECT_EQ(h.get<int32_t>(rs)[0], 0);
  EXPECT_EQ(h.stats.out_of_bounds, 4);
}

TEST(MemoryLoad, ProvenanceAddressFromXInsideYIsOutsideXAndYIsNotRead) {
  Harness h;
  std::vector<float> host = {1, 2, 3, 4, 50, 60, 70, 80};
  int x = h.buffer("x", host.data(), 4, Elem::f32);
  int y = h.buffer("y", host.data() + 4, 4, Elem::f32);
  Recorder oob(ex::kOutOfBounds);
  h.observe(&oob);
  // x + 4 elements is y's host memory (host[4]); derived from x it is one past x's end.
  int p = h.slot_of<uint64_t>(h.ptr(Elem::f32), {h.mem.vaddr(x)});
  int off = h.scalar_slot<int32_t>(Elem::i32, 4);
  int q = h.slot(h.ptr(Elem::f32));
  h.run(h.step(h.op("tt.addptr"), {p, off}, {q}, ops::lower_addptr));
  int r = h.slot(h.scalar(Elem::f32));
  h.run(h.step(h.op("tt.load"), {q}, {r}, ops::lower_load));
  EXPECT_EQ(h.get<float>(r)[0], 0.0f);  // not 50: y was not read
  EXPECT_EQ(h.stats.out_of_bounds, 1);
  ASSERT_EQ(oob.events.size(), 1u);
  EXPECT_EQ(h.mem.region(oob.events[0].addrs[0]), x);

  // A store through the same address leaves y alone.
  int v = h.scalar_slot<float>(Elem::f32, -1.0f);
  h.run(h.step(h.op("tt.store"), {q, v}, {}, ops::lower_store));
  EXPECT_EQ(host, (std::vector<float>{1, 2, 3, 4, 50, 60, 70, 80}));
  EXPECT_EQ(h.stats.out_of_bounds, 2);
  (void)y;
}

TEST(MemoryLoad, NegativeOffsetBeforeStartIsReported) {
  Harness h;
  std::vector<int8_t> host = {9, 8, 7, 6, 5};
  int x = h.buffer("x", host.data() + 1, 4, Elem::i8);
  int p = h.slot_of<uint64_t>(h.ptr_tensor(Elem::i8, {4}), std::vector<uint64_t>(4, h.mem.vaddr(x)));
  int off = h.slot_of<int64_t>(h.tensor(Elem::i64, {4}), {-1, 0, 3, -100});
  int q = h.slot(h.ptr_tensor(Elem::i8, {4}));
  h.run(h.step(h.op("tt.addptr"), {p, off}, {q}, ops::lower_addptr));
  int r = h.slot(h.tensor(Elem::i8, {4}));
  h.run(h.step(h.op("tt.load"), {q}, {r}, ops::lower_load));
  EXPECT_EQ(h.get<int8_t>(r), (std::vector<int8_t>{0, 8, 5, 0}));  // host[0] = 9 is outside x
  EXPECT_EQ(h.stats.out_of_bounds, 2);
}

TEST(MemoryLoad, VolatileLoadRuns) {
  Harness h;
  std::vector<int32_t> host = {42};
  int x = h.buffer("flag", host.data(), 1, Elem::i32);
  int p = h.scalar_slot<uint64_t>(Elem::ptr, h.mem.vaddr(x));
  h.types[p] = h.ptr(Elem::i32);
  int r = h.slot(h.scalar(Elem::i32));
  ir::Op& op = h.op("tt.load");
  op.attrs["isVolatile"] = boolean(true);
  h.run(h.step(op, {p}, {r}, ops::lower_load));  // yield_to_others outside a fiber is a no-op
  EXPECT_EQ(h.get<int32_t>(r)[0], 42);
}

TEST(MemoryLoad, RejectsMaskOfAnotherShape) {
  Harness h;
  int p = h.slot(h.ptr_tensor(Elem::f32, {8}));
  int m = h.slot(h.tensor(Elem::i1, {4}));
  int r = h.slot(h.tensor(Elem::f32, {8}));
  ir::Op& load = h.op("tt.load");
  ex::Step s = h.prepare(load, {p, m}, {r});
  EXPECT_THROW(ops::lower_load(load, h.planner, s), tilescope::Error);
}

TEST(MemoryStore, MaskedStoreWritesActiveLanesOnlyAndKeepsCanaries) {
  Harness h;
  std::vector<float> host(10, 0.0f);
  host[0] = host[9] = kCanary;
  int x = h.buffer("x", host.data() + 1, 8, Elem::f32);
  const uint64_t b = h.mem.vaddr(x);
  // Contiguous masked (tail of a vector-add block): lanes 6, 7 would be past the end.
  std::vector<uint64_t> a(8);
  for (int i = 0; i < 8; ++i) a[i] = b + 4 * (2 + i);
  int p = h.slot_of(h.ptr_tensor(Elem::f32, {8}), a);
  int v = h.slot_of<float>(h.tensor(Elem::f32, {8}), {1, 2, 3, 4, 5, 6, 7, 8});
  int m = h.slot_of<uint8_t>(h.tensor(Elem::i1, {8}), {1, 1, 0, 1, 1, 1, 0, 0});
  h.run(h.step(h.op("tt.store"), {p, v, m}, {}, ops::lower_store));
  EXPECT_EQ(host, (std::vector<float>{kCanary, 0, 0, 1, 2, 0, 4, 5, 6, kCanary}));
  EXPECT_EQ(h.stats.out_of_bounds, 0);
}

TEST(MemoryStore, UnmaskedOutOfBoundsLanesAreSkippedAndReported) {
  Harness h;
  std::vector<int64_t> host = {-7, 0, 0, 0, -7};
  int x = h.buffer("x", host.data() + 1, 3, Elem::i64);
  Recorder all(ex::kAccess);
  h.observe(&all);
  const uint64_t b = h.mem.vaddr(x);
  int p = h.slot_of<uint64_t>(h.ptr_tensor(Elem::i64, {4}), {b + 16, b + 24, b - 8, b});
  int v = h.slot_of<int64_t>(h.tensor(Elem::i64, {4}), {30, 40, 50, 10});
  h.run(h.step(h.op("tt.store"), {p, v}, {}, ops::lower_store));
  EXPECT_EQ(host, (std::vector<int64_t>{-7, 10, 0, 30, -7}));
  EXPECT_EQ(h.stats.out_of_bounds, 2);
  ASSERT_EQ(all.events.size(), 1u);
  EXPECT_EQ(all.events[0].kind, ex::AccessKind::store);
  EXPECT_EQ(all.events[0].bad, 2);
}

TEST(MemoryStore, ContiguousUnmaskedAndScatteredStores) {
  Harness h;
  std::vector<uint16_t> host(6, 0);
  int x = h.buffer("x", host.data(), 6, Elem::f16);
  const uint64_t b = h.mem.vaddr(x);
  int p = h.slot_of<uint64_t>(h.ptr_tensor(Elem::f16, {3}), {b + 2, b + 4, b + 6});
  int v = h.slot_of<uint16_t>(h.tensor(Elem::f16, {3}), {0x3C00, 0x4000, 0x4200});
  h.run(h.step(h.op("tt.store"), {p, v}, {}, ops::lower_store));
  EXPECT_EQ(host, (std::vector<uint16_t>{0, 0x3C00, 0x4000, 0x4200, 0, 0}));
  int p2 = h.slot_of<uint64_t>(h.ptr_tensor(Elem::f16, {3}), {b + 10, b, b + 10});  // duplicate: last wins
  h.run(h.step(h.op("tt.store"), {p2, v}, {}, ops::lower_store));
  EXPECT_EQ(host, (std::vector<uint16_t>{0x4000, 0x3C00, 0x4000, 0x4200, 0, 0x4200}));
  EXPECT_EQ(h.stats.out_of_bounds, 0);
}

// Tiles of rows (a 2-D tile of a row-major tensor: rows of consecutive lanes at a stride) against the
// semantics lane by lane, computed here: a load gives each active lane its element (or `other`), a
// store writes the active lanes in lane order (a later lane wins), lanes outside the buffer are counted.
TEST(MemoryTiles, RowsAtAStrideLoadAndStoreLaneByLane) {
  struct Case {
    int64_t rows, cols, stride, start;  // elements
    int masked_lane;                    // -1: every lane active
  };
  const std::vector<Case> cases = {
      {4, 8, 16, 0, -1},   // a 4x8 tile of a 16-wide tensor
      {8, 4, 5, 3, -1},    // rows of 4 (the shortest that takes the row path) at an odd stride
      {3, 8, 0, 10, -1},   // the same row three times (a broadcast): the last row's store wins
      {4, 8, 6, 0, -1},    // rows overlapping by 2
      {4, 8, 16, 40, -1},  // the last row runs past the end: 4 lanes out of bounds
      {4, 8, 16, -4, -1},  // the first row starts before the buffer
      {4, 8, 16, 0, 9},    // one lane masked off
      {2, 3, 7, 0, -1},    // rows of 3: the lane pass
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << c.rows << "x" << c.cols << " stride " << c.stride << " at "
                                    << c.start);
    constexpr int64_t kElems = 72;
    const int64_t n = c.rows * c.cols;
    std::vector<float> host(kElems), ref(kElems);
    for (int64_t i = 0; i < kElems; ++i)
      host[static_cast<size_t>(i)] = ref[static_cast<size_t>(i)] = 100.0f + i;
    Harness h;
    int x = h.buffer("x", host.data(), kElems, Elem::f32);
    const uint64_t b = h.mem.vaddr(x);
    std::vector<uint64_t> addrs;
    std::vector<uint8_t> mask;
    std::vector<float> other, vals;
    std::vector<int64_t> elem;
    for (int64_t r = 0; r < c.rows; ++r)
      for (int64_t k = 0; k < c.cols; ++k) {
        const int64_t e = c.start + r * c.stride + k;
        elem.push_back(e);
        addrs.push_back(b + static_cast<uint64_t>(e * 4));
        mask.push_back(static_cast<int>(addrs.size()) - 1 == c.masked_lane ? 0 : 1);
        other.push_back(-1.0f - static_cast<float>(addrs.size()));
        vals.push_back(0.5f + static_cast<float>(addrs.size()));
      }
    // The reference, lane by lane.
    std::vector<float> want_load(static_cast<size_t>(n));
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) {
      const auto u = static_cast<size_t>(i);
      const bool inside = elem[u] >= 0 && elem[u] < kElems;
      want_load[u] = mask[u] && inside ? ref[static_cast<size_t>(elem[u])] : other[u];
      bad += mask[u] && !inside;
    }
    int p = h.slot_of<uint64_t>(h.ptr_tensor(Elem::f32, {c.rows, c.cols}), addrs);
    int m = h.slot_of<uint8_t>(h.tensor(Elem::i1, {c.rows, c.cols}), mask);
    int o = h.slot_of<float>(h.tensor(Elem::f32, {c.rows, c.cols}), other);
    int r = h.slot(h.tensor(Elem::f32, {c.rows, c.cols}));
    h.run(h.step(h.op("tt.load"), {p, m, o}, {r}, ops::lower_load));
    EXPECT_EQ(h.get<float>(r), want_load);
    EXPECT_EQ(h.stats.out_of_bounds, bad);
    for (int64_t i = 0; i < n; ++i) {
      const auto u = static_cast<size_t>(i);
      if (mask[u] && elem[u] >= 0 && elem[u] < kElems) ref[static_cast<size_t>(elem[u])] = vals[u];
    }
    int v = h.slot_of<float>(h.tensor(Elem::f32, {c.rows, c.cols}), vals);
    h.run(h.step(h.op("tt.store"), {p, v, m}, {}, ops::lower_store));
    EXPECT_EQ(host, ref);
    EXPECT_EQ(h.stats.out_of_bounds, 2 * bad);
  }
}

TEST(MemoryEvents, NobodyObservingMeansNoEventsButStatsStillCount) {
  Harness h;
  std::vector<float> host = {1};
  int x = h.buffer("x", host.data(), 1, Elem::f32);
  Recorder prog_only(ex::kProgram);  // observes something else
  h.observe(&prog_only);
  int p = h.slot_of<uint64_t>(h.ptr_tensor(Elem::f32, {2}), {h.mem.vaddr(x), h.mem.vaddr(x) + 4});
  int r = h.slot(h.tensor(Elem::f32, {2}));
  h.run(h.step(h.op("tt.load"), {p}, {r}, ops::lower_load));
  EXPECT_TRUE(prog_only.events.empty());
  EXPECT_EQ(h.stats.out_of_bounds, 1);
}
