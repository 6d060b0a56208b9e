// Block pointers (tt.make_tensor_ptr, tt.advance, block-pointer load/store; reference §1.2, §5.1) and
// tensor descriptors (tt.make_tensor_descriptor, descriptor_load/store/reduce/gather/scatter; §1.8, §5.6).
#include <bit>
#include <cmath>
#include <limits>

#include "tests/cpp/ops/memory_harness.h"
#include "tilescope/ir/diag.h"

using namespace memtest;
namespace ops = tilescope::ops;

namespace {

constexpr float kCanary = -12345.0f;

/// rows x cols f32 matrix, element (r, c) = 10r + c, with two canaries on each side.
struct Matrix {
  std::vector<float> host;
  int rows, cols;
  Matrix(int r, int c) : host(static_cast<size_t>(r * c + 4), kCanary), rows(r), cols(c) {
    for (int i = 0; i < r; ++i)
      for (int j = 0; j < c; ++j) at(i, j) = static_cast<float>(10 * i + j);
  }
  float& at(int r, int c) { return host[2 + r * cols + c]; }
  float* data() { return host.data() + 2; }
  bool canaries_intact() const {
    return host[0] == kCanary && host[1] == kCanary && host[host.size() - 1] == kCanary &&
           host[host.size() - 2] == kCanary;
  }
};

const float kNan = std::numeric_limits<float>::quiet_NaN();

/// Compare with NaN == NaN.
void expect_tile(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]))
      EXPECT_TRUE(std::isnan(got[i])) << "lane " << i << " = " << got[i];
    else
      EXPECT_EQ(got[i], want[i]) << "lane " << i;
  }
}

struct BlockFixture {
  Harness h;
  Matrix mat{4, 6};
  int buf;
  BlockFixture() { buf = h.buffer("m", mat.data(), 24, Elem::f32); }

  /// tt.make_tensor_ptr base, [4, 6], [6, 1], [off0, off1] : tile 4x4.
  int make(int32_t off0, int32_t off1) {
    int base = h.slot_of<uint64_t>(h.ptr(Elem::f32), {h.mem.vaddr(buf)});
    std::vector<int> in = {base};
    for (int64_t v : {int64_t{4}, int64_t{6}, int64_t{6}, int64_t{1}})
      in.push_back(h.scalar_slot<int64_t>(Elem::i64, v));
    in.push_back(h.scalar_slot<int32_t>(Elem::i32, off0));
    in.push_back(h.scalar_slot<int32_t>(Elem::i32, off1));
    int r = h.slot(h.block_ptr(Elem::f32, {4, 4}));
    h.run(h.step(h.op("tt.make_tensor_ptr"), in, {r}, ops::lower_make_tensor_ptr));
    return r;
  }
};

}  // namespace

TEST(MemoryBlockPtr, BoundaryCheckWithNanPaddingAndAdvance) {
  BlockFixture f;
  Harness& h = f.h;
  int bp = f.make(2, 4);
  auto bpv = h.get<ex::BlockPtr>(bp)[0];
  EXPECT_EQ(bpv.rank, 2);
  EXPECT_EQ(bpv.shape[1], 6);
  EXPECT_EQ(bpv.strides[0], 6);
  EXPECT_EQ(bpv.offsets[0], 2);
  ir::Op& load = h.op("tt.load");
  load.attrs["boundaryCheck"] = int_array({0, 1});
  load.attrs["padding"] = integer(2);  // nan
  int r = h.slot(h.tensor(Elem::f32, {4, 4}));
  h.run(h.step(load, {bp}, {r}, ops::lower_load));
  const float N = kNan;
  expect_tile(h.get<float>(r), {24, 25, N, N, 34, 35, N, N, N, N, N, N, N, N, N, N});
  EXPECT_EQ(h.stats.out_of_bounds, 0);

  // advance by (-2, -4): back to the origin; the whole tile is inside.
  int d0 = h.scalar_slot<int32_t>(Elem::i32, -2), d1 = h.scalar_slot<int32_t>(Elem::i32, -4);
  int bp2 = h.slot(h.block_ptr(Elem::f32, {4, 4}));
  h.run(h.step(h.op("tt.advance"), {bp, d0, d1}, {bp2}, ops::lower_advance));
  int r2 = h.slot(h.tensor(Elem::f32, {4, 4}));
  h.run(h.step(load, {bp2}, {r2}, ops::lower_load));
  expect_tile(h.get<float>(r2), {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23, 30, 31, 32, 33});
}

TEST(MemoryBlockPtr, WithoutBoundaryCheckRowsPastTheBufferAreReported) {
  BlockFixture f;
  Harness& h = f.h;
  int bp = f.make(2, 4);
  int r = h.slot(h.tensor(Elem::f32, {4, 4}));
  h.run(h.step(h.op("tt.load"), {bp}, {r}, ops::lower_load));
  // Lane (i, j) reads flat element (2+i)*6 + 4+j; 22, 23 are in the buffer, 24 and beyond are not.
  // Columns 6, 7 of row 2 wrap into row 3 (elements 18, 19): inside the buffer, so not reported.
  expect_tile(h.get<float>(r), {24, 25, 30, 31, 34, 35, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  EXPECT_EQ(h.stats.out_of_bounds, 10);
}

TEST(MemoryBlockPtr, StoreWithBoundaryCheckWritesOnlyInside) {
  BlockFixture f;
  Harness& h = f.h;
  int bp = f.make(3, 5);
  std::vector<float> vals(16);
  for (int i = 0; i < 16; ++i) vals[i] = 100.0f + i;
  int v = h.slot_of(h.tensor(Elem::f32, {4, 4}), vals);
  ir::Op& store = h.op("tt.store");
  store.attrs["boundaryCheck"] = int_array({0, 1});
  h.run(h.step(store, {bp, v}, {}, ops::lower_store));
  Matrix expect(4, 6);
  expect.at(3, 5) = 100;
  EXPECT_EQ(f.mat.host, expect.host);
  EXPECT_TRUE(f.mat.canaries_intact());
  EXPECT_EQ(h.stats.out_of_bounds, 0);
}

namespace {

struct DescFixture {
  Harness h;
  Matrix mat{5, 8};
  int buf;
  DescFixture() { buf = h.buffer("m", mat.data(), 40, Elem::f32); }

  /// tt.make_tensor_descriptor base, [5, 8], [8, 1] with block `block` and padding `pad`.
  int make(std::vector<int64_t> block, const char* pad) {
    int base = h.slot_of<uint64_t>(h.ptr(Elem::f32), {h.mem.vaddr(buf)});
    int s0 = h.scalar_slot<int32_t>(Elem::i32, 5), s1 = h.scalar_slot<int32_t>(Elem::i32, 8);
    int t0 = h.scalar_slot<int64_t>(Elem::i64, 8), t1 = h.scalar_slot<int64_t>(Elem::i64, 1);
    int r = h.slot(h.desc(Elem::f32, block));
    ir::Op& op = h.op("tt.make_tensor_descriptor");
    if (pad) op.attrs["padding"] = keyword(pad);
    h.run(h.step(op, {base, s0, s1, t0, t1}, {r}, ops::lower_make_desc));
    return r;
  }
  std::vector<int> idx(int32_t a, int32_t b) {
    return {h.scalar_slot<int32_t>(Elem::i32, a), h.scalar_slot<int32_t>(Elem::i32, b)};
  }
};

}  // namespace

TEST(MemoryDesc, PartialTileLoadsGetPaddingAndAreNotErrors) {
  DescFixture f;
  Harness& h = f.h;
  Recorder all(ex::kAccess);
  h.observe(&all);
  int d = f.make({4, 4}, "nan");
  auto dv = h.get<ex::TensorDesc>(d)[0];
  EXPECT_EQ(dv.rank, 2);
  EXPECT_EQ(dv.shape[0], 5);
  EXPECT_EQ(dv.strides[0], 8);
  EXPECT_EQ(dv.padding, 2);
  auto i = f.idx(3, 6);
  int r = h.slot(h.tensor(Elem::f32, {4, 4}));
  h.run(h.step(h.op("tt.descriptor_load"), {d, i[0], i[1]}, {r}, ops::lower_desc_load));
  const float N = kNan;
  expect_tile(h.get<float>(r), {36, 37, N, N, 46, 47, N, N, N, N, N, N, N, N, N, N});
  EXPECT_EQ(h.stats.out_of_bounds, 0);
  ASSERT_EQ(all.events.size(), 1u);
  EXPECT_EQ(all.events[0].bad, 0);
  EXPECT_EQ(all.events[0].mask, (std::vector<uint8_t>{1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));

  // Zero padding and a negative row index.
  int dz = f.make({4, 4}, nullptr);
  auto j = f.idx(-1, 0);
  int r2 = h.slot(h.tensor(Elem::f32, {4, 4}));
  h.run(h.step(h.op("tt.descriptor_load"), {dz, j[0], j[1]}, {r2}, ops::lower_desc_load));
  expect_tile(h.get<float>(r2), {0, 0, 0, 0, 0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23});
}

TEST(MemoryDesc, PartialTileStoreSkipsOutsideElements) {
  DescFixture f;
  Harness& h = f.h;
  int d = f.make({4, 4}, nullptr);
  auto i = f.idx(4, 6);
  std::vector<float> vals(16);
  for (int k = 0; k < 16; ++k) vals[k] = 100.0f + k;
  int v = h.slot_of(h.tensor(Elem::f32, {4, 4}), vals);
  h.run(h.step(h.op("tt.descriptor_store"), {d, i[0], i[1], v}, {}, ops::lower_desc_store));
  Matrix expect(5, 8);
  expect.at(4, 6) = 100;
  expect.at(4, 7) = 101;
  EXPECT_EQ(f.mat.host, expect.host);
  EXPECT_EQ(h.stats.out_of_bounds, 0);
}

TEST(MemoryDesc, ReduceAddAndMax) {
  DescFixture f;
  Harness& h = f.h;
  int d = f.make({2, 4}, nullptr);
  auto i = f.idx(4, 6);  // rows 4..5, cols 6..9: only (4,6), (4,7) inside
  int v = h.slot_of(h.tensor(Elem::f32, {2, 4}), std::vector<float>{0.5f, 1.5f, 9, 9, 9, 9, 9, 9});
  ir::Op& add = h.op("tt.descriptor_reduce");
  add.attrs["kind"] = keyword("add");
  h.run(h.step(add, {d, i[0], i[1], v}, {}, ops::lower_desc_store));
  Matrix expect(5, 8);
  expect.at(4, 6) = 46.5f;
  expect.at(4, 7) = 48.5f;
  EXPECT_EQ(f.mat.host, expect.host);

  auto k = f.idx(0, 0);
  int w = h.slot_of(h.tensor(Elem::f32, {2, 4}), std::vector<float>{-1, 100, -1, 100, 100, -1, 100, -1});
  ir::Op& mx = h.op("tt.descriptor_reduce");
  mx.attrs["kind"] = integer(3);  // max
  h.run(h.step(mx, {d, k[0], k[1], w}, {}, ops::lower_desc_store));
  expect.at(0, 1) = 100;
  expect.at(0, 3) = 100;
  expect.at(1, 0) = 100;
  expect.at(1, 2) = 100;
  EXPECT_EQ(f.mat.host, expect.host);
  EXPECT_EQ(h.stats.out_of_bounds, 0);
}

TEST(MemoryDesc, GatherAndScatterRows) {
  DescFixture f;
  Harness& h = f.h;
  int d = f.make({1, 4}, "nan");
  int xo = h.slot_of(h.tensor(Elem::i32, {4}), std::vector<int32_t>{0, 4, 7, -1});
  int y = h.scalar_slot<int32_t>(Elem::i32, 6);
  int r = h.slot(h.tensor(Elem::f32, {4, 4}));
  h.run(h.step(h.op("tt.descriptor_gather"), {d, xo, y}, {r}, ops::lower_desc_gather));
  const float N = kNan;
  expect_tile(h.get<float>(r), {6, 7, N, N, 46, 47, N, N, N, N, N, N, N, N, N, N});

  std::vector<float> vals(16);
  for (int k = 0; k < 16; ++k) vals[k] = 100.0f + k;
  int v = h.slot_of(h.tensor(Elem::f32, {4, 4}), vals);
  h.run(h.step(h.op("tt.descriptor_scatter"), {d, xo, y, v}, {}, ops::lower_desc_scatter));
  Matrix expect(5, 8);
  expect.at(0, 6) = 100;
  expect.at(0, 7) = 101;
  expect.at(4, 6) = 104;
  expect.at(4, 7) = 105;
  EXPECT_EQ(f.mat.host, expect.host);
  EXPECT_EQ(h.stats.out_of_bounds, 0);
}

TEST(MemoryDesc, DescriptorPastItsBufferIsStillCheckedAgainstMemory) {
  // A descriptor whose shape claims more rows than the buffer holds: the TMA mask lets the lanes
  // through, the buffer check does not.
  Harness h;
  Matrix mat(2, 4);
  int buf = h.buffer("m", mat.data(), 8, Elem::f32);
  ex::TensorDesc td = ex::make_desc_arg(*h.desc(Elem::f32, {4, 4}), h.mem.vaddr(buf),
                                        std::vector<int64_t>{4, 4}, std::vector<int64_t>{4, 1});
  int d = h.slot_of(h.desc(Elem::f32, {4, 4}), std::vector<ex::TensorDesc>{td});
  int i0 = h.scalar_slot<int32_t>(Elem::i32, 0), i1 = h.scalar_slot<int32_t>(Elem::i32, 0);
  int r = h.slot(h.tensor(Elem::f32, {4, 4}));
  h.run(h.step(h.op("tt.descriptor_load"), {d, i0, i1}, {r}, ops::lower_desc_load));
  expect_tile(h.get<float>(r), {0, 1, 2, 3, 10, 11, 12, 13, 0, 0, 0, 0, 0, 0, 0, 0});
  EXPECT_EQ(h.stats.out_of_bounds, 8);
  EXPECT_TRUE(mat.canaries_intact());
}

TEST(MemoryDesc, MakeDescArgChecksCounts) {
  ir::Module m;
  const ir::Type* t = m.desc(m.tensor(Elem::f16, {16, 32}));
  ex::TensorDesc d =
      ex::make_desc_arg(*t, 0x1234, std::vector<int64_t>{100, 64}, std::vector<int64_t>{64, 1}, 2);
  EXPECT_EQ(d.base, 0x1234u);
  EXPECT_EQ(d.rank, 2);
  EXPECT_EQ(d.shape[0], 100);
  EXPECT_EQ(d.shape[1], 64);
  EXPECT_EQ(d.strides[0], 64);
  EXPECT_EQ(d.strides[1], 1);
  EXPECT_EQ(d.padding, 2);
  EXPECT_THROW(ex::make_desc_arg(*t, 0, std::vector<int64_t>{1}, std::vector<int64_t>{1, 1}),
               tilescope::Error);
  EXPECT_THROW(ex::make_desc_arg(*m.scalar(Elem::f32), 0, {}, {}), tilescope::Error);
}

TEST(MemoryDesc, NanBitsAreNans) {
  EXPECT_TRUE(std::isnan(std::bit_cast<float>(static_cast<uint32_t>(ex::nan_bits(Elem::f32)))));
  EXPECT_TRUE(std::isnan(std::bit_cast<double>(ex::nan_bits(Elem::f64))));
  EXPECT_EQ(ex::nan_bits(Elem::f16), 0x7E00u);   // exponent all ones, quiet bit
  EXPECT_EQ(ex::nan_bits(Elem::bf16), 0x7FC0u);  // upper half of the f32 quiet NaN
  EXPECT_EQ(ex::nan_bits(Elem::i32), 0u);
}
