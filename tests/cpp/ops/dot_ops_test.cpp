// tt.dot and tt.dot_scaled through the reader and the engine. Expected values: bit patterns measured
// on an H200 (triton 3.6; a 16x16 f32 tile times the identity, so d is what the tensor core read of
// a), naive double-precision products with stated tolerances, and hand-computed cases.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>

#include "src/ops/elementwise.h"
#include "tests/cpp/ops/shape_util.h"

using namespace shapetest;

namespace {

std::string dot_line(Kernel& k, const std::string& a, const std::string& b, const std::string& c,
                     const std::string& ta, const std::string& tb, const std::string& tc,
                     const std::string& prec) {
  std::string attr = prec.empty() ? "" : ", inputPrecision = " + prec;
  return k.line(fmt::format("tt.dot {}, {}, {}{} : {} * {} -> {}", a, b, c, attr, ta, tb, tc));
}

/// d = a (M x K) * b (K x N) + c for f32 row-major host data, run through one tt.dot.
std::vector<float> run_dot_f32(const std::vector<float>& a, const std::vector<float>& b,
                               const std::vector<float>& c, int64_t M, int64_t N, int64_t K,
                               const std::string& prec) {
  Kernel k;
  std::string va = k.load("f32", {M, K}), vb = k.load("f32", {K, N}), vc = k.load("f32", {M, N});
  std::string d = dot_line(k, va, vb, vc, ty("f32", {M, K}), ty("f32", {K, N}), ty("f32", {M, N}), prec);
  k.store(d, "f32", {M, N});
  Buf ba = Buf::of(a, Elem::f32), bb = Buf::of(b, Elem::f32), bc = Buf::of(c, Elem::f32);
  Buf bd = Buf::zeros<float>(M * N, Elem::f32);
  run(k, {&ba, &bb, &bc, &bd});
  return bd.as<float>();
}

const uint32_t kInputs[16] = {0x3f801000u, 0x3f801800u, 0x3f800800u, 0x3f803000u, 0xbf801000u, 0xbf801800u,
                              0x3f802800u, 0x3f801001u, 0x40401000u, 0x3f7fffffu, 0x00080000u, 0x000116c2u,
                              0x7f800000u, 0x3f800001u, 0x3f803000u, 0x3fc01000u};

std::vector<uint32_t> diag_through_dot(const std::string& prec, bool a_side) {
  std::vector<float> x(256, 0.0f), eye(256, 0.0f), c(256, 0.0f);
  for (int i = 0; i < 16; ++i) {
    x[i * 16 + i] = std::bit_cast<float>(kInputs[i]);
    eye[i * 16 + i] = 1.0f;
  }
  auto d = a_side ? run_dot_f32(x, eye, c, 16, 16, 16, prec) : run_dot_f32(eye, x, c, 16, 16, 16, prec);
  std::vector<uint32_t> r;
  for (int i = 0; i < 16; ++i) r.push_back(std::bit_cast<uint32_t>(d[i * 16 + i]));
  return r;
}

std::vector<float> randu(size_t n, uint32_t seed, float lo = -2.0f, float hi = 2.0f) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(g);
  return v;
}

double max_abs_diff_vs_double(const std::vector<float>& d, const std::vector<float>& a,
                              const std::vector<float>& b, const std::vector<float>& c, int64_t M, int64_t N,
                              int64_t K, float (*pre)(float)) {
  double m = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = c[i * N + j];
      for (int64_t kk = 0; kk < K; ++kk) s += static_cast<double>(pre(a[i * K + kk])) * pre(b[kk * N + j]);
      m = std::max(m, std::abs(s - d[i * N + j]));
    }
  return m;
}

float ident(float x) { return x; }
float trunc13(float x) { return std::bit_cast<float>(std::bit_cast<uint32_t>(x) & 0xffffe000u); }

}  // namespace

TEST(DotOps, Tf32TruncatesInputsLikeH200) {
  const std::vector<uint32_t> gpu = {
      0x3f800000u, 0x3f800000u, 0x3f800000u, 0x3f802000u, 0xbf800000u, 0xbf800000u, 0x3f802000u, 0x3f800000u,
      0x40400000u, 0x3f7fe000u, 0x00080000u, 0x00010000u, 0x7f800000u, 0x3f800000u, 0x3f802000u, 0x3fc00000u};
  EXPECT_EQ(diag_through_dot("tf32", true), gpu);
  EXPECT_EQ(diag_through_dot("tf32", false), gpu);
}

TEST(DotOps, Tf32x3AndBf16EmulationsMatchH200) {
  EXPECT_EQ(
      diag_through_dot("tf32x3", true),
      (std::vector<uint32_t>{0x3f801000u, 0x3f801800u, 0x3f800800u, 0x3f803000u, 0xbf801000u, 0xbf801800u,
                             0x3f802800u, 0x3f801002u, 0x40401000u, 0x3f7fffffu, 0x00080000u, 0x00012000u,
                             0x7f800000u, 0x3f800001u, 0x3f803000u, 0x3fc01000u}));
  EXPECT_EQ(
      diag_through_dot("bf16x3", true),
      (std::vector<uint32_t>{0x3f801000u, 0x3f801800u, 0x3f800800u, 0x3f803000u, 0xbf801000u, 0xbf801800u,
                             0x3f802800u, 0x3f801000u, 0x40401000u, 0x3f7fffffu, 0x00080000u, 0x00010000u,
                             0x7f800000u, 0x3f800001u, 0x3f803000u, 0x3fc01000u}));
  EXPECT_EQ(
      diag_through_dot("bf16x6", true),
      (std::vector<uint32_t>{0x3f801000u, 0x3f801800u, 0x3f800800u, 0x3f803000u, 0xbf801000u, 0xbf801800u,
                             0x3f802800u, 0x3f801001u, 0x40401000u, 0x3f7fffffu, 0x00080000u, 0x00010000u,
                             0x7f800000u, 0x3f800001u, 0x3f803000u, 0x3fc01000u}));
  // ieee (the default, not printed) reads the inputs exactly.
  std::vector<uint32_t> in(kInputs, kInputs + 16);
  EXPECT_EQ(diag_through_dot("", true), in);
  EXPECT_EQ(diag_through_dot("ieee", false), in);
}

TEST(DotOps, RandomF32AgainstDouble) {
  const int64_t M = 32, N = 32, K = 32;
  auto a = randu(M * K, 1), b = randu(K * N, 2), c = randu(M * N, 3);
  // ieee: fp32 FMA sums of 32 terms of size <= 4: error well under 1e-4.
  EXPECT_LT(max_abs_diff_vs_double(run_dot_f32(a, b, c, M, N, K, "ieee"), a, b, c, M, N, K, ident), 1e-4);
  // tf32: equal (up to f32 summation, < 1e-4) to the exact product of truncated inputs, and visibly
  // different from the exact product of the inputs (the H200 showed 1.6e-2 on randn data).
  auto d = run_dot_f32(a, b, c, M, N, K, "tf32");
  EXPECT_LT(max_abs_diff_vs_double(d, a, b, c, M, N, K, trunc13), 1e-4);
  EXPECT_GT(max_abs_diff_vs_double(d, a, b, c, M, N, K, ident), 1e-3);
  // The emulations recover nearly fp32 accuracy (H200: tf32x3 3.4e-6, bf16x3 1.0e-4, bf16x6 1.5e-6 on randn).
  EXPECT_LT(max_abs_diff_vs_double(run_dot_f32(a, b, c, M, N, K, "tf32x3"), a, b, c, M, N, K, ident), 1e-4);
  EXPECT_LT(max_abs_diff_vs_double(run_dot_f32(a, b, c, M, N, K, "bf16x3"), a, b, c, M, N, K, ident), 1e-3);
  EXPECT_LT(max_abs_diff_vs_double(run_dot_f32(a, b, c, M, N, K, "bf16x6"), a, b, c, M, N, K, ident), 1e-4);
}

TEST(DotOps, IeeeIsAFusedMultiplyAddChainFromC) {
  // a = b = 1 + 2^-12: a*b = 1 + 2^-11 + 2^-24 exactly. With c = -(1 + 2^-11), a fused chain gives
  // 2^-24; rounding the product first would give 0.
  std::vector<float> a(256, 0.0f), b(256, 0.0f), c(256, 0.0f);
  a[0] = b[0] = 1.0f + std::ldexp(1.0f, -12);
  c[0] = -(1.0f + std::ldexp(1.0f, -11));
  auto d = run_dot_f32(a, b, c, 16, 16, 16, "ieee");
  EXPECT_EQ(d[0], std::ldexp(1.0f, -24));
}

// ieee on tiles of every shape class the kernel splits into (blocks of 4 rows x 16 columns, the rows
// and the columns left over): each output bit for bit the FMA chain in k order from c, computed here
// with std::fma. Inputs of mixed magnitudes, so that another summation order changes the bits.
TEST(DotOps, IeeeKeepsTheChainOrderOnEveryTileShape) {
  const int64_t shapes[][3] = {{1, 8, 4},    {2, 16, 8},   {4, 8, 16},    {4, 16, 2},   {8, 32, 32},
                               {16, 64, 16}, {64, 64, 32}, {32, 128, 64}, {16, 16, 256}};
  uint32_t seed = 100;
  for (const auto& sh : shapes) {
    const int64_t M = sh[0], N = sh[1], K = sh[2];
    auto a = randu(M * K, seed++), b = randu(K * N, seed++), c = randu(M * N, seed++, -8.0f, 8.0f);
    for (size_t i = 0; i < a.size(); i += 3) a[i] *= 1024.0f;
    for (size_t i = 1; i < b.size(); i += 5) b[i] *= 1.0f / 4096.0f;
    const auto d = run_dot_f32(a, b, c, M, N, K, "ieee");
    int64_t reordered_differs = 0;
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) {
        float chain = c[i * N + j], backwards = c[i * N + j];
        for (int64_t k = 0; k < K; ++k) chain = std::fma(a[i * K + k], b[k * N + j], chain);
        for (int64_t k = K - 1; k >= 0; --k) backwards = std::fma(a[i * K + k], b[k * N + j], backwards);
        ASSERT_EQ(std::bit_cast<uint32_t>(d[i * N + j]), std::bit_cast<uint32_t>(chain))
            << M << "x" << N << "x" << K << " at " << i << "," << j;
        reordered_differs += chain != backwards;
      }
    }
    if (K >= 8) {
      EXPECT_GT(reordered_differs, 0) << "the inputs do not tell orders apart";
    }
  }
}

TEST(DotOps, Batched3D) {
  const int64_t B = 2, M = 16, N = 16, K = 32;
  auto a = randu(B * M * K, 4), b = randu(B * K * N, 5), c = randu(B * M * N, 6);
  Kernel k;
  std::string va = k.load("f32", {B, M, K}), vb = k.load("f32", {B, K, N}), vc = k.load("f32", {B, M, N});
  std::string d =
      dot_line(k, va, vb, vc, ty("f32", {B, M, K}), ty("f32", {B, K, N}), ty("f32", {B, M, N}), "ieee");
  k.store(d, "f32", {B, M, N});
  Buf ba = Buf::of(a, Elem::f32), bb = Buf::of(b, Elem::f32), bc = Buf::of(c, Elem::f32),
      bd = Buf::zeros<float>(B * M * N, Elem::f32);
  run(k, {&ba, &bb, &bc, &bd});
  auto dv = bd.as<float>();
  for (int64_t bi = 0; bi < B; ++bi) {
    std::vector<float> sa(a.begin() + bi * M * K, a.begin() + (bi + 1) * M * K);
    std::vector<float> sb(b.begin() + bi * K * N, b.begin() + (bi + 1) * K * N);
    std::vector<float> sc(c.begin() + bi * M * N, c.begin() + (bi + 1) * M * N);
    std::vector<float> sd(dv.begin() + bi * M * N, dv.begin() + (bi + 1) * M * N);
    EXPECT_LT(max_abs_diff_vs_double(sd, sa, sb, sc, M, N, K, ident), 1e-4) << bi;
  }
}

TEST(DotOps, F16AndBf16InputsExactIntegers) {
  using tilescope::ops::ew::f32_to_bf16;
  using tilescope::ops::ew::f32_to_f16;
  const int64_t M = 16, N = 16, K = 16;
  for (const char* e : {"f16", "bf16"}) {
    std::vector<uint16_t> a(M * K), b(K * N);
    std::vector<float> af(M * K), bf(K * N), c(M * N, 1.0f);
    for (int64_t i = 0; i < M * K; ++i) af[i] = static_cast<float>((i * 7) % 9 - 4);
    for (int64_t i = 0; i < K * N; ++i) bf[i] = static_cast<float>((i * 5) % 7 - 3);
    for (int64_t i = 0; i < M * K; ++i) a[i] = e[0] == 'f' ? f32_to_f16(af[i]) : f32_to_bf16(af[i]);
    for (int64_t i = 0; i < K * N; ++i) b[i] = e[0] == 'f' ? f32_to_f16(bf[i]) : f32_to_bf16(bf[i]);
    Elem el = e[0] == 'f' ? Elem::f16 : Elem::bf16;
    Kernel k;
    std::string va = k.load(e, {M, K}), vb = k.load(e, {K, N}), vc = k.load("f32", {M, N});
    // The CUDA default tf32 is printed on f16 dots too, where it must be ignored.
    std::string d = dot_line(k, va, vb, vc, ty(e, {M, K}), ty(e, {K, N}), ty("f32", {M, N}), "tf32");
    k.store(d, "f32", {M, N});
    Buf ba = Buf::of(a, el), bb = Buf::of(b, el), bc = Buf::of(c, Elem::f32),
        bd = Buf::zeros<float>(M * N, Elem::f32);
    run(k, {&ba, &bb, &bc, &bd});
    EXPECT_EQ(max_abs_diff_vs_double(bd.as<float>(), af, bf, c, M, N, K, ident), 0.0) << e;
  }
}

TEST(DotOps, F16AccumulatorRoundsTheResult) {
  // Row 0: 12 products of 1 * (1 + 2^-10) and 4 of 1 * 1: 16 + 12 * 2^-10 = 16.01171875, which
  // rounds (f16 ulp at 16 is 2^-6) to 16.015625 = 0x4C01.
  using tilescope::ops::ew::f32_to_f16;
  const int64_t M = 16, N = 16, K = 16;
  std::vector<uint16_t> a(M * K, f32_to_f16(0.0f)), b(K * N, f32_to_f16(0.0f)), c(M * N, f32_to_f16(0.0f));
  for (int64_t kk = 0; kk < K; ++kk) {
    a[kk] = f32_to_f16(1.0f);
    b[kk * N] = f32_to_f16(kk < 12 ? 1.0f + std::ldexp(1.0f, -10) : 1.0f);
  }
  Kernel k;
  std::string va = k.load("f16", {M, K}), vb = k.load("f16", {K, N}), vc = k.load("f16", {M, N});
  std::string d = dot_line(k, va, vb, vc, ty("f16", {M, K}), ty("f16", {K, N}), ty("f16", {M, N}), "");
  k.store(d, "f16", {M, N});
  Buf ba = Buf::of(a, Elem::f16), bb = Buf::of(b, Elem::f16), bc = Buf::of(c, Elem::f16),
      bd = Buf::zeros<uint16_t>(M * N, Elem::f16);
  run(k, {&ba, &bb, &bc, &bd});
  EXPECT_EQ(bd.as<uint16_t>()[0], 0x4C01);
}

TEST(DotOps, Int8AccumulatesExactlyInI32) {
  const int64_t M = 16, N = 16, K = 32;
  std::mt19937 g(7);
  std::uniform_int_distribution<int> u(-128, 127);
  std::vector<int8_t> a(M * K), b(K * N);
  std::vector<int32_t> c(M * N);
  for (auto& x : a) x = static_cast<int8_t>(u(g));
  for (auto& x : b) x = static_cast<int8_t>(u(g));
  for (auto& x : c) x = u(g) * 1000;
  Kernel k;
  std::string va = k.load("i8", {M, K}), vb = k.load("i8", {K, N}), vc = k.load("i32", {M, N});
  std::string d = dot_line(k, va, vb, vc, ty("i8", {M, K}), ty("i8", {K, N}), ty("i32", {M, N}), "tf32");
  k.store(d, "i32", {M, N});
  Buf ba = Buf::of(a, Elem::i8), bb = Buf::of(b, Elem::i8), bc = Buf::of(c, Elem::i32),
      bd = Buf::zeros<int32_t>(M * N, Elem::i32);
  run(k, {&ba, &bb, &bc, &bd});
  auto dv = bd.as<int32_t>();
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      int64_t s = c[i * N + j];
      for (int64_t kk = 0; kk < K; ++kk) s += int64_t{a[i * K + kk]} * b[kk * N + j];
      ASSERT_EQ(dv[i * N + j], s) << i << "," << j;
    }
}

TEST(DotOps, Fp8E5M2Inputs) {
  // e5m2 bits -> value, by the format's definition: 0x3C = 1, 0x40 = 2, 0xC2 = -3, 0x01 = 2^-16
  // (subnormal), 0x7B = 57344 (largest finite), 0x39 = 0.625.
  const uint8_t bits[6] = {0x3C, 0x40, 0xC2, 0x01, 0x7B, 0x39};
  const double vals[6] = {1, 2, -3, std::ldexp(1.0, -16), 57344, 0.625};
  const int64_t M = 16, N = 16, K = 16;
  std::vector<uint8_t> a(M * K), b(K * N);
  std::vector<float> c(M * N, 0.0f);
  for (int64_t i = 0; i < M * K; ++i) a[i] = bits[(i * 5) % 6];
  for (int64_t i = 0; i < K * N; ++i) b[i] = bits[(i * 7 + 1) % 6] & (i % 3 ? 0xFF : 0x7F);
  Kernel k;
  std::string va = k.load("f8E5M2", {M, K}), vb = k.load("f8E5M2", {K, N}), vc = k.load("f32", {M, N});
  std::string d =
      dot_line(k, va, vb, vc, ty("f8E5M2", {M, K}), ty("f8E5M2", {K, N}), ty("f32", {M, N}), "tf32");
  k.store(d, "f32", {M, N});
  Buf ba = Buf::of(a, Elem::f8e5m2), bb = Buf::of(b, Elem::f8e5m2), bc = Buf::of(c, Elem::f32),
      bd = Buf::zeros<float>(M * N, Elem::f32);
  run(k, {&ba, &bb, &bc, &bd});
  auto val = [&](uint8_t x) {
    for (int t = 0; t < 6; ++t)
      if (bits[t] == x) return vals[t];
    for (int t = 0; t < 6; ++t)
      if ((bits[t] & 0x7F) == x) return std::abs(vals[t]);
    ADD_FAILURE() << "unexpected bits " << int(x);
    return 0.0;
  };
  auto dv = bd.as<float>();
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t kk = 0; kk < K; ++kk) s += val(a[i * K + kk]) * val(b[kk * N + j]);
      EXPECT_NEAR(dv[i * N + j], s, std::abs(s) * 1e-6 + 1e-6) << i << "," << j;
    }
}

TEST(DotOps, DotScaledFp4WithScalesTimesBf16) {
  // a: e2m1 packed along K (low nibble = even k; measured on an H200), a_scale e8m0 per 32 of K.
  // b: bf16 [64, 16] with b[k][n] = 1 where k == n or k == n + 32, so d[m][n] = A[m][n] + A[m][n+32].
  using tilescope::ops::ew::f32_to_bf16;
  const int64_t M = 16, N = 16, K = 64;
  const double fp4[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  std::mt19937 g(11);
  std::vector<uint8_t> a(M * K / 2), sc(M * K / 32);
  for (auto& x : a) x = static_cast<uint8_t>(g());
  for (auto& x : sc) x = static_cast<uint8_t>(120 + g() % 14);
  sc[3] = 255;  // NaN scale: row 1, second group of 32 (k >= 32)
  std::vector<uint16_t> b(K * N, f32_to_bf16(0.0f));
  for (int64_t n = 0; n < N; ++n) {
    b[n * N + n] = f32_to_bf16(1.0f);
    b[(n + 32) * N + n] = f32_to_bf16(1.0f);
  }
  std::vector<float> c(M * N, 0.5f);
  Kernel k;
  std::string va = k.load("i8", {M, K / 2}), vs = k.load("i8", {M, K / 32}), vb = k.load("bf16", {K, N}),
              vc = k.load("f32", {M, N});
  std::string d = k.line(fmt::format(
      "tt.dot_scaled {} scale {}, {}, {} lhs = e2m1 rhs = bf16 {{fastMath = false}} : {}, {} * {} -> {}", va,
      vs, vb, vc, ty("i8", {M, K / 2}), ty("i8", {M, K / 32}), ty("bf16", {K, N}), ty("f32", {M, N})));
  k.store(d, "f32", {M, N});
  Buf ba = Buf::of(a, Elem::i8), bs = Buf::of(sc, Elem::i8), bb = Buf::of(b, Elem::bf16),
      bc = Buf::of(c, Elem::f32), bd = Buf::zeros<float>(M * N, Elem::f32);
  run(k, {&ba, &bs, &bb, &bc, &bd});
  auto A = [&](int64_t m, int64_t kk) {
    uint8_t byte = a[m * (K / 2) + kk / 2];
    uint8_t nib = kk % 2 ? byte >> 4 : byte & 15;
    double v = (nib & 8 ? -1 : 1) * fp4[nib & 7];
    uint8_t s = sc[m * 2 + kk / 32];
    return s == 255 ? NAN : v * std::ldexp(1.0, s - 127);
  };
  auto dv = bd.as<float>();
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double want = A(m, n) + A(m, n + 32) + 0.5;
      if (m == 1) {
        EXPECT_TRUE(std::isnan(dv[m * N + n])) << n;  // NaN scale poisons the whole row (NaN * 0 = NaN)
        continue;
      }
      EXPECT_NEAR(dv[m * N + n], want, std::abs(want) * 1e-6) << m << "," << n;
    }
}

TEST(DotOps, DotScaledBf16TimesScaledFp4Rhs) {
  // b: e2m1 packed along K ([K/2, N], the even k in the low nibble), b_scale [N, K/32] e8m0.
  // a: bf16 [16, 64] with a[m][k] = 1 where k == m or k == m + 32, so d[m][n] = B[m][n] + B[m+32][n].
  // Packing and scales follow tt.dot_scaled's definition (the rhs side was not measured on a GPU).
  using tilescope::ops::ew::f32_to_bf16;
  const int64_t M = 16, N = 16, K = 64;
  const double fp4[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  std::mt19937 g(12);
  std::vector<uint8_t> b(K / 2 * N), sc(N * K / 32);
  for (auto& x : b) x = static_cast<uint8_t>(g());
  for (auto& x : sc) x = static_cast<uint8_t>(124 + g() % 8);
  std::vector<uint16_t> a(M * K, f32_to_bf16(0.0f));
  for (int64_t m = 0; m < M; ++m) {
    a[m * K + m] = f32_to_bf16(1.0f);
    a[m * K + m + 32] = f32_to_bf16(1.0f);
  }
  std::vector<float> c(M * N, 0.0f);
  Kernel k;
  std::string va = k.load("bf16", {M, K}), vb = k.load("i8", {K / 2, N}), vs = k.load("i8", {N, K / 32}),
              vc = k.load("f32", {M, N});
  std::string d = k.line(fmt::format(
      "tt.dot_scaled {}, {} scale {}, {} lhs = bf16 rhs = e2m1 {{fastMath = false}} : {} * {}, {} -> {}", va,
      vb, vs, vc, ty("bf16", {M, K}), ty("i8", {K / 2, N}), ty("i8", {N, K / 32}), ty("f32", {M, N})));
  k.store(d, "f32", {M, N});
  Buf ba = Buf::of(a, Elem::bf16), bb = Buf::of(b, Elem::i8), bs = Buf::of(sc, Elem::i8),
      bc = Buf::of(c, Elem::f32), bd = Buf::zeros<float>(M * N, Elem::f32);
  run(k, {&ba, &bb, &bs, &bc, &bd});
  auto B = [&](int64_t kk, int64_t n) {
    uint8_t byte = b[(kk / 2) * N + n];
    uint8_t nib = kk % 2 ? byte >> 4 : byte & 15;
    return (nib & 8 ? -1 : 1) * fp4[nib & 7] * std::ldexp(1.0, sc[n * 2 + kk / 32] - 127);
  };
  auto dv = bd.as<float>();
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double want = B(m, n) + B(m + 32, n);
      EXPECT_NEAR(dv[m * N + n], want, std::abs(want) * 1e-6) << m << "," << n;
    }
}

TEST(DotOps, DotScaledFp16TimesScaledE4m3MatchesH200) {
  // Measured on an H200 (triton 3.6): lhs fp16 [32, 64] with diagonal values, rhs e4m3 (as i8) identity,
  // rhs_scale [32, 2] = 127 (x1) except [1][0] = 128 (x2) and [2][0] = 0 (gives 0 on sm_90). The fp16
  // values keep their full precision (no bf16 rounding).
  using tilescope::ops::ew::f32_to_f16;
  const int64_t M = 32, N = 32, K = 64;
  const float vals[8] = {1.0009765625f,           1.0029296875f, 1.0029296875f,        3.0f,
                         1.0132789611816406e-06f, 65504.0f,      9.5367431640625e-07f, 1.5f};
  std::vector<uint16_t> a(M * K, f32_to_f16(0.0f));
  for (int64_t i = 0; i < M; ++i) a[i * K + i] = f32_to_f16(vals[i % 8]);
  std::vector<uint8_t> b(K * N, 0), bs(N * K / 32, 127);
  for (int64_t i = 0; i < N; ++i) b[i * N + i] = 0x38;  // e4m3 1.0
  bs[1 * 2 + 0] = 128;
  bs[2 * 2 + 0] = 0;
  std::vector<float> c(M * N, 0.0f);
  Kernel k;
  std::string va = k.load("f16", {M, K}), vb = k.load("i8", {K, N}), vs = k.load("i8", {N, K / 32}),
              vc = k.load("f32", {M, N});
  std::string d = k.line(fmt::format(
      "tt.dot_scaled {}, {} scale {}, {} lhs = fp16 rhs = e4m3 {{fastMath = false}} : {} * {}, {} -> {}", va,
      vb, vs, vc, ty("f16", {M, K}), ty("i8", {K, N}), ty("i8", {N, K / 32}), ty("f32", {M, N})));
  k.store(d, "f32", {M, N});
  Buf ba = Buf::of(a, Elem::f16), bb = Buf::of(b, Elem::i8), bsc = Buf::of(bs, Elem::i8),
      bc = Buf::of(c, Elem::f32), bd = Buf::zeros<float>(M * N, Elem::f32);
  run(k, {&ba, &bb, &bsc, &bc, &bd});
  const std::vector<float> gpu = {1.0009765625f, 2.005859375f,         0.0f, 3.0f, 1.0132789611816406e-06f,
                                  65504.0f,      9.5367431640625e-07f, 1.5f};
  auto dv = bd.as<float>();
  for (int64_t i = 0; i < M; ++i) EXPECT_EQ(dv[i * N + i], i < 8 ? gpu[i] : vals[i % 8]) << i;
}
