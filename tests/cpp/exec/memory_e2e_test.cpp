// Memory ops end to end: TTIR read by ir::read and run by exec::Engine. Fixtures come from
// tests/ttir (printed by triton 3.6.0, see tests/ttir/kernels.py); expected values are computed here
// from each kernel's meaning with plain C++ (closed forms and scalar loops), not by tilescope.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "tests/cpp/harness.h"
#include "tests/cpp/ops/memory_harness.h"

using namespace tilescope;
using exec::Arg;
using ir::Elem;

namespace {

std::string fixture(const std::string& name) {
  auto path =
      (std::filesystem::path(__FILE__).parent_path() / ".." / ".." / "ttir" / name).lexically_normal();
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Deterministic pseudo-random integers in [lo, hi) (a 64-bit LCG; the values only need to vary).
struct Lcg {
  uint64_t s;
  int64_t next(int64_t lo, int64_t hi) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return lo + static_cast<int64_t>((s >> 33) % static_cast<uint64_t>(hi - lo));
  }
};

// An unmasked copy y[pid*8 + i] = x[pid*8 + i] for i < 8: with short buffers the tail lanes are
// out of bounds (reference §5.1: the interpreter would read and write arbitrary host memory).
const char* kUnmaskedCopy = R"(module {
  tt.func public @copy(%x: !tt.ptr<f32>, %y: !tt.ptr<f32>) attributes {noinline = false} {
    %c8 = arith.constant 8 : i32
    %pid = tt.get_program_id x : i32
    %base = arith.muli %pid, %c8 : i32
    %r = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32>
    %s = tt.splat %base : i32 -> tensor<8xi32>
    %offs = arith.addi %s, %r : tensor<8xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<8x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<8x!tt.ptr<f32>>, tensor<8xi32>
    %v = tt.load %xp : tensor<8x!tt.ptr<f32>>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<8x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %offs : tensor<8x!tt.ptr<f32>>, tensor<8xi32>
    tt.store %yp, %v : tensor<8x!tt.ptr<f32>>
    tt.return
  }
}
)";

}  // namespace

TEST(MemoryE2E, AddressFromXInsideYIsOutOfBoundsAndNeverTouched) {
  // One host array: x = host[0, 12), y = host[12, 24), canaries host[24, 32). Lanes 12..15 of x are
  // y's host memory; lanes 12..15 of y are the canaries.
  std::vector<float> host(32, -777.0f);
  for (int i = 0; i < 12; ++i) host[i] = 1.0f + i;
  for (int i = 12; i < 24; ++i) host[i] = 0.0f;
  exec::Memory mem;
  exec::Buffer bx{"x", Elem::f32, reinterpret_cast<std::byte*>(host.data()), 48, {12}, {1}};
  exec::Buffer by{"y", Elem::f32, reinterpret_cast<std::byte*>(host.data() + 12), 48, {12}, {1}};
  int x = mem.add(bx), y = mem.add(by);
  memtest::Recorder oob(exec::kOutOfBounds);
  auto stats = test::run_ttir(kUnmaskedCopy, {Arg::buf(x), Arg::buf(y)}, mem, {2, 1, 1}, 2, {&oob});
  for (int i = 0; i < 12; ++i) EXPECT_EQ(host[12 + i], 1.0f + i) << i;
  for (int i = 24; i < 32; ++i) EXPECT_EQ(host[i], -777.0f) << i;
  EXPECT_EQ(stats.out_of_bounds, 8);  // 4 loads outside x, 4 stores outside y (program 1)
  ASSERT_EQ(oob.events.size(), 2u);
  for (auto& e : oob.events) {
    EXPECT_EQ(e.bad, 4);
    EXPECT_EQ(e.lanes, 8);
  }
  // The load's bad lanes are attributed to x even though they land in y's memory.
  auto load = std::find_if(oob.events.begin(), oob.events.end(),
                           [](auto& e) { return e.kind == exec::AccessKind::load; });
  ASSERT_NE(load, oob.events.end());
  for (int i = 4; i < 8; ++i) EXPECT_EQ(mem.region(load->addrs[i]), x);
}

TEST(MemoryE2E, NullPointerArgumentIsReportedNotDereferenced) {
  std::vector<float> y(16, 5.0f);
  exec::Memory mem;
  int yb = test::add_buffer(mem, y, "y", Elem::f32);
  auto stats = test::run_ttir(kUnmaskedCopy, {Arg::i64(0), Arg::buf(yb)}, mem, {2, 1, 1});
  EXPECT_EQ(stats.out_of_bounds, 16);
  EXPECT_EQ(y, std::vector<float>(16, 0.0f));  // bad loads give 0, and y is in bounds
}

TEST(MemoryE2E, AddTailMaskedLanesAreCleanAndUntouched) {
  const int n = 1000;
  std::vector<float> x(n), y(n), out(1024, -7.0f);
  for (int i = 0; i < n; ++i) {
    x[i] = 0.25f * i;
    y[i] = -3.0f + i;
  }
  exec::Memory mem;
  int bx = test::add_buffer(mem, x, "x", Elem::f32), by = test::add_buffer(mem, y, "y", Elem::f32);
  // out is registered with only n elements: the last 24 host floats are canaries beyond it.
  exec::Buffer bo{"out", Elem::f32, reinterpret_cast<std::byte*>(out.data()), n * 4u, {n}, {1}};
  int o = mem.add(bo);
  memtest::Recorder all(exec::kAccess);
  auto stats =
      test::run_ttir(fixture("add_tail.ttir"), {Arg::buf(bx), Arg::buf(by), Arg::buf(o), Arg::i64(n)}, mem,
                     {8, 1, 1}, 2, {&all});
  for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], 0.25f * i + (-3.0f + i)) << i;
  for (int i = n; i < 1024; ++i) EXPECT_EQ(out[i], -7.0f);
  EXPECT_EQ(stats.out_of_bounds, 0);
  EXPECT_EQ(all.events.size(), 8u * 3u);  // two loads and a store per program
  int64_t active = 0;
  for (auto& e : all.events) {
    EXPECT_EQ(e.bad, 0);
    for (uint8_t m : e.mask) active += m;
  }
  EXPECT_EQ(active, 3 * n);
}

TEST(MemoryE2E, I64OffsetsAndVolatileLoads) {
  const int rows = 4, block = 64;
  std::vector<int32_t> x(rows * block);
  std::vector<int64_t> y(rows * block), out(rows * block, 0);
  Lcg g{7};
  for (auto& v : x) v = static_cast<int32_t>(g.next(-100000, 100000));
  for (auto& v : y) v = g.next(-4000000000000, 4000000000000);
  exec::Memory mem;
  int bx = test::add_buffer(mem, x, "x", Elem::i32), by = test::add_buffer(mem, y, "y", Elem::i64);
  int bo = test::add_buffer(mem, out, "out", Elem::i64);
  auto stats = test::run_ttir(fixture("i64_offsets.ttir"),
                              {Arg::buf(bx), Arg::buf(by), Arg::buf(bo), Arg::i64(block)}, mem, {rows, 1, 1});
  EXPECT_EQ(stats.out_of_bounds, 0);
  for (int i = 0; i < rows * block; ++i) {
    int64_t big = int64_t{x[i]} * 3000000000 + y[i];
    // Triton integer `//` and `%` are C truncating division and remainder (reference §5); >> is arithmetic.
    ASSERT_EQ(out[i], big / 7 - (big >> 3) + big % 1000003) << i;
  }
}

TEST(MemoryE2E, AtomicsFixtureMatchesSequentialReference) {
  const int n = 256, block = 32;
  std::vector<float> x(n);
  std::vector<int32_t> xi(n);
  Lcg g{42};
  for (auto& v : x) v = static_cast<float>(g.next(-50, 50));
  for (auto& v : xi) v = static_cast<int32_t>(g.next(-1000000, 1000000));
  std::vector<int32_t> cnt(1, 0), imin(8, std::numeric_limits<int32_t>::max()), xchg(8, -1),
      bits{-1, 0, 0x12345678};
  std::vector<uint32_t> umax(8, 0);
  std::vector<float> fsum(8, 0.0f), fmax(8, -1000.0f);
  exec::Memory mem;
  std::vector<Arg> args = {
      Arg::buf(test::add_buffer(mem, x, "x", Elem::f32)),
      Arg::buf(test::add_buffer(mem, xi, "xi", Elem::i32)),
      Arg::buf(test::add_buffer(mem, cnt, "cnt", Elem::i32)),
      Arg::buf(test::add_buffer(mem, fsum, "fsum", Elem::f32)),
      Arg::buf(test::add_buffer(mem, fmax, "fmax", Elem::f32)),
      Arg::buf(test::add_buffer(mem, imin, "imin", Elem::i32)),
      Arg::buf(test::add_buffer(mem, umax, "umax", Elem::i32)),
      Arg::buf(test::add_buffer(mem, xchg, "xchg", Elem::i32)),
      Arg::buf(test::add_buffer(mem, bits, "bits", Elem::i32)),
  };
  auto stats = test::run_ttir(fixture("atomics.ttir"), args, mem, {n / block, 1, 1}, 2);
  EXPECT_EQ(stats.out_of_bounds, 0);

  // Sequential reference of the kernel's meaning (tests/ttir/kernels.py atomics_kernel).
  std::vector<float> rsum(8, 0.0f), rmax(8, -1000.0f);
  std::vector<int32_t> rmin(8, std::numeric_limits<int32_t>::max());
  std::vector<uint32_t> rumax(8, 0);
  int32_t band = -1, bor = 0, bxor = 0x12345678;
  for (int i = 0; i < n; ++i) {
    int b = i % 8;
    rsum[b] += x[i];  // small integers: exact in any order
    rmax[b] = std::max(rmax[b], x[i] * 0.5f);
    rmin[b] = std::min(rmin[b], xi[i]);
    rumax[b] = std::max(rumax[b], static_cast<uint32_t>(xi[i]));
    band &= xi[i] | 0x10000;
    bor |= xi[i] & 0x0F0F;
    bxor ^= xi[i];
  }
  EXPECT_EQ(cnt[0], n);
  EXPECT_EQ(fsum, rsum);
  EXPECT_EQ(fmax, rmax);
  EXPECT_EQ(imin, rmin);
  EXPECT_EQ(umax, rumax);
  for (int p = 0; p < 8; ++p) EXPECT_EQ(xchg[p], p + 1);
  EXPECT_EQ(bits, (std::vector<int32_t>{band, bor, bxor}));
}

TEST(MemoryE2E, SpinLockCounterMakesProgress) {
  for (int threads : {1, 2}) {
    std::vector<int32_t> lock(1, 0), count(1, 0), order(256, -1);
    exec::Memory mem;
    int l = test::add_buffer(mem, lock, "lock", Elem::i32),
        c = test::add_buffer(mem, count, "count", Elem::i32);
    int o = test::add_buffer(mem, order, "order", Elem::i32);
    auto stats = test::run_ttir(fixture("lock_counter.ttir"), {Arg::buf(l), Arg::buf(c), Arg::buf(o)}, mem,
                                {64, 1, 1}, threads);
    EXPECT_EQ(stats.out_of_bounds, 0);
    EXPECT_EQ(lock[0], 0);
    EXPECT_EQ(count[0], 256);  // 64 programs x 4 increments, none lost
    std::vector<int> per_pid(64, 0);
    for (int32_t p : order) {
      ASSERT_TRUE(p >= 0 && p < 64);
      per_pid[p]++;
    }
    EXPECT_EQ(per_pid, std::vector<int>(64, 4));
  }
}

TEST(MemoryE2E, BlockPointerSourceWithNanPaddingAndAdvance) {
  const int M = 40, N = 72;
  std::vector<float> x(M * N), y(M * N, 0.0f);
  std::vector<int32_t> cnt(3, -1);
  for (int i = 0; i < M * N; ++i) x[i] = static_cast<float>(i % 97) * 0.5f - 10.0f;
  exec::Memory mem;
  std::vector<Arg> args = {Arg::buf(test::add_buffer(mem, x, "x", Elem::f32)),
                           Arg::buf(test::add_buffer(mem, y, "y", Elem::f32)),
                           Arg::buf(test::add_buffer(mem, cnt, "cnt", Elem::i32)),
                           Arg::i64(M),
                           Arg::i64(N),
                           Arg::i64(N),
                           Arg::i64(1)};
  auto stats = test::run_ttir(fixture("block_ptr.source.ttir"), args, mem, {3, 1, 1}, 2);
  EXPECT_EQ(stats.out_of_bounds, 0);
  for (int i = 0; i < M * N; ++i) ASSERT_EQ(y[i], x[i] * 2.0f + 1.0f) << i;
  // Each program loads 3 tiles of 16x32 (j = 0, 32, 64); the NaN-padded elements are the ones
  // outside the 40x72 matrix: 1536 - rows_inside * 72.
  EXPECT_EQ(cnt, (std::vector<int32_t>{1536 - 16 * 72, 1536 - 16 * 72, 1536 - 8 * 72}));
}

TEST(MemoryE2E, DeviceTensorDescriptorPartialTiles) {
  for (const char* file : {"tensor_desc.ttir", "tensor_desc.source.ttir", "tensor_desc_sm80.ttir"}) {
    SCOPED_TRACE(file);
    const int M = 40, N = 48;
    std::vector<float> a(M * N), b(M * N + 8, -777.0f);
    for (int i = 0; i < M * N; ++i) a[i] = static_cast<float>(i % 61) * 0.25f;
    exec::Memory mem;
    exec::Buffer bb{"b", Elem::f32, reinterpret_cast<std::byte*>(b.data()), M * N * 4u, {M, N}, {N, 1}};
    std::vector<Arg> args = {Arg::buf(test::add_buffer(mem, a, "a", Elem::f32)), Arg::buf(mem.add(bb)),
                             Arg::i64(M), Arg::i64(N)};
    auto stats = test::run_ttir(fixture(file), args, mem, {3, 2, 1}, 2);
    EXPECT_EQ(stats.out_of_bounds, 0);  // TMA masks the parts of tiles outside [M, N]
    for (int i = 0; i < M * N; ++i) ASSERT_EQ(b[i], a[i] * 3.0f - 1.0f) << i;
    for (int i = M * N; i < M * N + 8; ++i) EXPECT_EQ(b[i], -777.0f);
  }
}

TEST(MemoryE2E, HostTensorDescriptorArgument) {
  // A `!tt.tensordesc` kernel argument followed by its shape (i32) and strides (i64), reference §1.8.
  const char* k = R"(module {
  tt.func public @k(%d: !tt.tensordesc<tensor<4x4xf32>>, %d_0: i32, %d_1: i32, %d_2: i64, %d_3: i64, %out: !tt.ptr<f32>) attributes {noinline = false} {
    %c0 = arith.constant 0 : i32
    %c2 = arith.constant 2 : i32
    %c4 = arith.constant 4 : i32
    %c4_64 = arith.constant 4 : i64
    %c1_64 = arith.constant 1 : i64
    %v = tt.descriptor_load %d[%c2, %c2] : !tt.tensordesc<tensor<4x4xf32>> -> tensor<4x4xf32>
    %o = tt.make_tensor_descriptor %out, [%c4, %c4], [%c4_64, %c1_64] : <f32>, <tensor<4x4xf32>>
    tt.descriptor_store %o[%c0, %c0], %v : !tt.tensordesc<tensor<4x4xf32>>, tensor<4x4xf32>
    tt.return
  }
}
)";
  std::vector<float> m(5 * 6), out(16, -1.0f);
  for (int i = 0; i < 30; ++i) m[i] = static_cast<float>(i);
  exec::Memory mem;
  int bm = test::add_buffer(mem, m, "m", Elem::f32), bo = test::add_buffer(mem, out, "out", Elem::f32);
  auto stats = test::run_ttir(
      k, {Arg::buf(bm), Arg::i64(5), Arg::i64(6), Arg::i64(6), Arg::i64(1), Arg::buf(bo)}, mem);
  EXPECT_EQ(stats.out_of_bounds, 0);
  // Rows 2..5 (row 5 is outside the 5-row tensor: zero padding), columns 2..5.
  std::vector<float> want = {14, 15, 16, 17, 20, 21, 22, 23, 26, 27, 28, 29, 0, 0, 0, 0};
  EXPECT_EQ(out, want);
}
