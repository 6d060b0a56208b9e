// Float format conversions (exec/value.h, ops/elementwise.h) against independent references:
// GCC's _Float16 (IEEE binary16 with RTNE), bf16 rounding computed from the IEEE definition by
// brute force, torch's fp8 codecs (arith_fp8_ref.inc), and the reference §5 table rows.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>

#include "src/exec/value.h"
#include "src/ops/elementwise.h"

namespace {

using tilescope::ir::Elem;
using tilescope::ir::float_from_bits;
using tilescope::ir::float_to_bits;
using tilescope::ir::float_to_bits_f32;
using tilescope::ir::Rounding;
namespace ew = tilescope::ops::ew;

#include "arith_fp8_ref.inc"

uint16_t half_bits(_Float16 h) { return std::bit_cast<uint16_t>(h); }
_Float16 half_of(uint16_t b) { return std::bit_cast<_Float16>(b); }

TEST(ArithConvert, F16DecodeAllPatterns) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float want = static_cast<float>(half_of(static_cast<uint16_t>(b)));
    const double got = float_from_bits(Elem::f16, b);
    const float fast = ew::f16_to_f32(static_cast<uint16_t>(b));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << b;
      EXPECT_TRUE(std::isnan(fast)) << b;
    } else {
      ASSERT_EQ(std::bit_cast<uint64_t>(got), std::bit_cast<uint64_t>(static_cast<double>(want))) << b;
      ASSERT_EQ(std::bit_cast<uint32_t>(fast), std::bit_cast<uint32_t>(want)) << b;
    }
  }
}

TEST(ArithConvert, F16RoundTripAllPatterns) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const double v = float_from_bits(Elem::f16, b);
    if (std::isnan(v)) {
      EXPECT_EQ(float_to_bits(Elem::f16, v), 0x7FFFu);
      EXPECT_EQ(ew::f32_to_f16(static_cast<float>(v)), 0x7FFFu);
      continue;
    }
    ASSERT_EQ(float_to_bits(Elem::f16, v), b);
    ASSERT_EQ(float_to_bits(Elem::f16, v, Rounding::rtz), b);
    ASSERT_EQ(ew::f32_to_f16(static_cast<float>(v)), b);
    ASSERT_EQ(ew::f32_to_f16_rtz(static_cast<float>(v)), b);
  }
}

// Every f16 midpoint and near-midpoint (ties go to even), and a sweep of f32 bit patterns.
TEST(ArithConvert, F16FromFloatMatchesFloat16Cast) {
  auto check = [](float f) {
    const uint16_t want = half_bits(static_cast<_Float16>(f));
    if (std::isnan(f)) return;
    ASSERT_EQ(ew::f32_to_f16(f), want) << f;
    ASSERT_EQ(float_to_bits_f32(Elem::f16, f), want) << f;
  };
  for (uint32_t b = 0; b < 0x7C00; ++b) {
    const double lo = float_from_bits(Elem::f16, b), hi = float_from_bits(Elem::f16, b + 1);
    const double mid = (lo + hi) / 2;  // exact in double; representable in float for f16 spacing
    for (float s : {1.0f, -1.0f}) {
      check(s * static_cast<float>(mid));
      check(s * std::nextafter(static_cast<float>(mid), 0.0f));
      check(s * std::nextafter(static_cast<float>(mid), 1e30f));
    }
  }
  for (uint64_t b = 0; b < (1ull << 32); b += 4099) check(std::bit_cast<float>(static_cast<uint32_t>(b)));
}

TEST(ArithConvert, F16FromDoubleRoundsOnce) {
  // A double just above an f16 midpoint must round up although (float)x lands on the midpoint.
  const double mid = (1.0 + (1.0 + 0x1p-10)) / 2;  // between 1 and the next f16
  const double x = mid + 0x1p-40;
  EXPECT_EQ(float_to_bits(Elem::f16, x), half_bits(static_cast<_Float16>(1.0 + 0x1p-10)));
  EXPECT_EQ(float_to_bits(Elem::f16, x),
            half_bits(static_cast<_Float16>(x)));  // GCC: one rounding from double
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> d(-70000, 70000);
  for (int i = 0; i < 200000; ++i) {
    const double v = d(rng) * std::ldexp(1.0, -static_cast<int>(rng() % 30));
    ASSERT_EQ(float_to_bits(Elem::f16, v), half_bits(static_cast<_Float16>(v))) << v;
  }
}

// bf16 RTNE from the definition: the two neighbours by truncation, nearest wins, ties to even.
uint16_t bf16_reference(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t t = static_cast<uint16_t>(x >> 16);  // toward zero
  const double lo = std::bit_cast<float>(static_cast<uint32_t>(t) << 16);
  const double up = std::bit_cast<float>(static_cast<uint32_t>(t + 1) << 16);  // next magnitude (may be inf)
  const double a = std::fabs(static_cast<double>(f));
  const double dl = a - std::fabs(lo);
  if (std::isinf(up)) {
    // Above the largest finite bf16: round to inf past the midpoint max + ulp/2.
    const double half_ulp = std::ldexp(1.0, 127 - 8);
    return (dl > half_ulp || (dl == half_ulp && (t & 1))) ? static_cast<uint16_t>(t + 1) : t;
  }
  const double du = std::fabs(up) - a;
  if (dl < du) return t;
  if (du < dl) return static_cast<uint16_t>(t + 1);
  return (t & 1) ? static_cast<uint16_t>(t + 1) : t;
}

TEST(ArithConvert, Bf16AllPatternsAndRounding) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float want = std::bit_cast<float>(b << 16);
    const double got = float_from_bits(Elem::bf16, b);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got));
      continue;
    }
    ASSERT_EQ(got, static_cast<double>(want));
    ASSERT_EQ(float_to_bits(Elem::bf16, got), b);
    ASSERT_EQ(ew::f32_to_bf16(want), b);
  }
  for (uint64_t b = 0; b < (1ull << 32); b += 2053) {
    const float f = std::bit_cast<float>(static_cast<uint32_t>(b));
    if (std::isnan(f)) continue;
    const uint16_t want = bf16_reference(f);
    ASSERT_EQ(ew::f32_to_bf16(f), want) << f;
    ASSERT_EQ(float_to_bits_f32(Elem::bf16, f), want) << f;
    ASSERT_EQ(ew::f32_to_bf16_rtz(f), static_cast<uint16_t>(std::bit_cast<uint32_t>(f) >> 16)) << f;
  }
  // Exact ties: 1 + 2^-8 lies between 1 and 1 + 2^-7 -> even (1.0); 1 + 3*2^-8 -> 1 + 2^-6.
  EXPECT_EQ(ew::f32_to_bf16(1.0f + 0x1p-8f), 0x3F80);
  EXPECT_EQ(ew::f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3F82);
  EXPECT_EQ(ew::f32_to_bf16(std::nanf("")), 0x7FFF);
}

TEST(ArithConvert, ReferenceSection5Rows) {
  // f.to(bf16): 255.7 -> 256, 0.1 -> 0.10009765625, 65504 -> 65536 (RTNE, not truncation).
  EXPECT_EQ(float_from_bits(Elem::bf16, ew::f32_to_bf16(255.7f)), 256.0);
  EXPECT_EQ(float_from_bits(Elem::bf16, ew::f32_to_bf16(0.1f)), 0.10009765625);
  EXPECT_EQ(float_from_bits(Elem::bf16, ew::f32_to_bf16(65504.0f)), 65536.0);
  // f.to(f16, rtz): 3e9 -> 65504, 70000 -> 65504.
  EXPECT_EQ(float_from_bits(Elem::f16, ew::f32_to_f16_rtz(3e9f)), 65504.0);
  EXPECT_EQ(float_from_bits(Elem::f16, ew::f32_to_f16_rtz(70000.0f)), 65504.0);
  EXPECT_EQ(float_to_bits(Elem::f16, 3e9, Rounding::rtz), 0x7BFFu);
  EXPECT_EQ(float_to_bits(Elem::f16, -70000.0, Rounding::rtz), 0xFBFFu);
  EXPECT_EQ(float_to_bits(Elem::f16, INFINITY, Rounding::rtz), 0x7C00u);  // inf stays inf
  // f.to(f16): 70000 -> inf, 1e-8 -> 0, 0.1 -> 0.0999755859375.
  EXPECT_EQ(ew::f32_to_f16(70000.0f), 0x7C00);
  EXPECT_EQ(ew::f32_to_f16(1e-8f), 0x0000);
  EXPECT_EQ(float_from_bits(Elem::f16, ew::f32_to_f16(0.1f)), 0.0999755859375);
  // f32 rtz from double: overflow goes to FLT_MAX.
  EXPECT_EQ(float_to_bits(Elem::f32, 1e39, Rounding::rtz), std::bit_cast<uint32_t>(3.40282347e38f));
  EXPECT_EQ(float_to_bits(Elem::f32, 1.0 + 0x1p-30, Rounding::rtz), std::bit_cast<uint32_t>(1.0f));
  EXPECT_EQ(float_to_bits(Elem::f32, -(1.0 + 0x1p-23 - 0x1p-30), Rounding::rtz),
            std::bit_cast<uint32_t>(-1.0f));
}

struct Fp8Ref {
  Elem e;
  const float* decode;
  const float* in;
  const uint8_t* out;
  size_t n;
};

TEST(ArithConvert, Fp8AgainstTorch) {
  const Fp8Ref refs[] = {
      {Elem::f8e4m3fn, k_f8e4m3fn_decode, k_f8e4m3fn_in, k_f8e4m3fn_out, std::size(k_f8e4m3fn_in)},
      {Elem::f8e5m2, k_f8e5m2_decode, k_f8e5m2_in, k_f8e5m2_out, std::size(k_f8e5m2_in)},
      {Elem::f8e4m3fnuz, k_f8e4m3fnuz_decode, k_f8e4m3fnuz_in, k_f8e4m3fnuz_out, std::size(k_f8e4m3fnuz_in)},
      {Elem::f8e5m2fnuz, k_f8e5m2fnuz_decode, k_f8e5m2fnuz_in, k_f8e5m2fnuz_out, std::size(k_f8e5m2fnuz_in)},
  };
  for (const Fp8Ref& r : refs) {
    SCOPED_TRACE(tilescope::ir::elem_name(r.e));
    const float* table = ew::fp8_table(r.e);
    for (uint32_t b = 0; b < 256; ++b) {
      const double got = float_from_bits(r.e, b);
      if (std::isnan(r.decode[b])) {
        EXPECT_TRUE(std::isnan(got)) << b;
        EXPECT_TRUE(std::isnan(table[b])) << b;
        continue;
      }
      ASSERT_EQ(got, static_cast<double>(r.decode[b])) << b;
      ASSERT_EQ(std::signbit(got), std::signbit(r.decode[b])) << b;
      ASSERT_EQ(table[b], r.decode[b]) << b;
      // Every finite/inf pattern round-trips (inf only where the format has it; rtz keeps inf).
      if (!std::isinf(got)) {
        ASSERT_EQ(float_to_bits(r.e, got), b) << b;
        ASSERT_EQ(float_to_bits(r.e, got, Rounding::rtz), b) << b;
      }
    }
    for (size_t i = 0; i < r.n; ++i) ASSERT_EQ(float_to_bits_f32(r.e, r.in[i]), r.out[i]) << r.in[i];
  }
}

TEST(ArithConvert, Fp8SaturationAndNaN) {
  // cvt.rn.satfinite (Triton's f32->fp8 lowering on sm_90): overflow and inf give +-max finite.
  EXPECT_EQ(float_to_bits(Elem::f8e4m3fn, 1000.0), 0x7Eu);  // 448
  EXPECT_EQ(float_to_bits(Elem::f8e4m3fn, -1000.0), 0xFEu);
  EXPECT_EQ(float_to_bits(Elem::f8e4m3fn, INFINITY), 0x7Eu);
  EXPECT_EQ(float_to_bits(Elem::f8e4m3fn, 464.0), 0x7Eu);  // past the last midpoint: still saturates
  EXPECT_EQ(float_to_bits(Elem::f8e4m3fn, NAN), 0x7Fu);
  EXPECT_EQ(float_to_bits(Elem::f8e5m2, 1e6), 0x7Bu);  // 57344
  EXPECT_EQ(float_to_bits(Elem::f8e5m2, -INFINITY), 0xFBu);
  EXPECT_EQ(float_to_bits(Elem::f8e5m2, NAN), 0x7Fu);
  // rtz (Triton: f32 -rtz-> f16 -> truncate to e5m2): overflow -> max finite, inf stays inf.
  EXPECT_EQ(float_to_bits(Elem::f8e5m2, 1e6, Rounding::rtz), 0x7Bu);
  EXPECT_EQ(float_to_bits(Elem::f8e5m2, INFINITY, Rounding::rtz), 0x7Cu);
  EXPECT_EQ(float_to_bits(Elem::f8e5m2, 1.0 + 0.24, Rounding::rtz), 0x3Cu);  // 1.24 -> 1.0
  EXPECT_EQ(float_to_bits(Elem::f8e5m2, 1.0 + 0.24), 0x3Du);                 // 1.24 -> 1.25
  // fnuz: 0x80 is the only NaN; -0 encodes as +0.
  EXPECT_EQ(float_to_bits(Elem::f8e4m3fnuz, -0.0), 0x00u);
  EXPECT_EQ(float_to_bits(Elem::f8e4m3fnuz, NAN), 0x80u);
  EXPECT_EQ(float_to_bits(Elem::f8e4m3fnuz, 1e9), 0x7Fu);  // 240
  // Smallest subnormals and underflow ties: e4m3fn min subnormal 2^-9; 2^-10 is a tie -> 0 (even).
  EXPECT_EQ(float_to_bits(Elem::f8e4m3fn, 0x1p-9), 0x01u);
  EXPECT_EQ(float_to_bits(Elem::f8e4m3fn, 0x1p-10), 0x00u);
  EXPECT_EQ(float_to_bits(Elem::f8e4m3fn, 0x1.8p-9), 0x02u);  // 1.5 quanta: tie -> 2 (even)
}

TEST(ArithConvert, StorageBytes) {
  tilescope::ir::Module m;
  EXPECT_EQ(tilescope::exec::storage_bytes(*m.tensor(Elem::f16, {4, 8})), 64);
  EXPECT_EQ(tilescope::exec::storage_bytes(*m.scalar(Elem::i1)), 1);
  const auto* blk = m.tensor(Elem::f32, {16, 16});
  EXPECT_EQ(tilescope::exec::storage_bytes(*m.ptr(blk)),
            static_cast<int64_t>(sizeof(tilescope::exec::BlockPtr)));
  EXPECT_EQ(tilescope::exec::storage_bytes(*m.desc(blk)),
            static_cast<int64_t>(sizeof(tilescope::exec::TensorDesc)));
  EXPECT_EQ(tilescope::exec::storage_bytes(*m.tensor(Elem::ptr, {128}, m.scalar(Elem::f32))), 1024);
}

}  // namespace
