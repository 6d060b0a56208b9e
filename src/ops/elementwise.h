// Helpers for the elementwise kernels (arith.cpp, libdevice.cpp): fast inline f16/bf16 <-> f32
// conversions and per-format "lane" traits, so that a kernel templated on a trait reads storage,
// computes in float/double and writes storage back with one rounding (RTNE, reference §5).
//
// The inline conversions are branch-free (selects only) so loops over them auto-vectorise; they
// agree bit for bit with ir::float_to_bits / float_from_bits (tests/cpp/ops/arith_convert_test.cpp).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "plan.h"
#include "tilescope/exec/value.h"
#include "tilescope/ir/ir.h"

namespace tilescope::ops::ew {

inline uint32_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }
inline float float_of(uint32_t u) { return std::bit_cast<float>(u); }

// Lane selects written as masks: GCC turns `c ? x : y` here into branches (skipping the unused
// arm), which blocks vectorisation; `(x & m) | (y & ~m)` keeps the loops straight-line.
inline uint32_t mask_if(bool c) { return 0u - static_cast<uint32_t>(c); }
inline uint32_t blend(uint32_t m, uint32_t x, uint32_t y) { return (x & m) | (y & ~m); }

/// f16 bits -> float (exact).
inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t em = h & 0x7fffu;
  // Rebias by scaling: the exponent field lands in float position with bias 127 instead of 15, so
  // multiplying by 2^112 fixes the value; subnormal f16 inputs become float subnormals and scale exactly.
  const uint32_t scaled = bits_of(float_of(em << 13) * 0x1p112f);
  const uint32_t special = (em << 13) | 0x7f800000u;  // inf / NaN (payload kept)
  return float_of(blend(mask_if(em >= 0x7c00u), special, scaled) | sign);
}

/// float -> f16 bits, round to nearest even; overflow gives inf, NaN gives 0x7FFF (PTX canonical).
inline uint16_t f32_to_f16(float f) {
  const uint32_t x = bits_of(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t a = x & 0x7fffffffu;
  // Normal results: rebias 127 -> 15 and round away the 13 low bits to nearest even (a carry into the
  // exponent is the correct next binade; past 65504 the value reaches 0x7c00 = inf and is clamped there).
  uint32_t norm = (a - 0x38000000u + 0x0fffu + ((a >> 13) & 1u)) >> 13;
  norm = norm < 0x7c00u ? norm : 0x7c00u;
  // Subnormal results (|f| < 2^-14): adding 0.5 puts the f16 subnormal quantum 2^-24 at the float's
  // last place, so the FPU's own RTNE does the rounding.
  const uint32_t sub = bits_of(float_of(a & mask_if(a < 0x38800000u)) + 0.5f) - 0x3f000000u;
  const uint32_t r = blend(mask_if(a < 0x38800000u), sub, norm) | sign;
  return static_cast<uint16_t>(blend(mask_if(a > 0x7f800000u), 0x7fffu, r));
}

/// float -> f16 bits, round toward zero; finite overflow gives 65504 (reference §5), inf stays inf.
inline uint16_t f32_to_f16_rtz(float f) {
  const uint32_t x = bits_of(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t a = x & 0x7fffffffu;
  uint32_t norm = (a - 0x38000000u) >> 13;
  norm = norm < 0x7bffu ? norm : 0x7bffu;
  // Truncating conversion; the operand is masked so the unselected lanes stay in range.
  const uint32_t sub = static_cast<uint32_t>(float_of(a & mask_if(a < 0x38800000u)) * 0x1p24f);
  uint32_t r = blend(mask_if(a < 0x38800000u), sub, norm);
  r = blend(mask_if(a == 0x7f800000u), 0x7c00u, r) | sign;
  return static_cast<uint16_t>(blend(mask_if(a > 0x7f800000u), 0x7fffu, r));
}

inline float bf16_to_f32(uint16_t h) { return float_of(static_cast<uint32_t>(h) << 16); }

/// float -> bf16 bits, round to nearest even (the GPU's cvt.rn.bf16.f32; §5: 255.7 -> 256).
inline uint16_t f32_to_bf16(float f) {
  const uint32_t x = bits_of(f);
  const uint32_t r = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  return static_cast<uint16_t>(blend(mask_if((x & 0x7fffffffu) > 0x7f800000u), 0x7fffu, r));
}

inline uint16_t f32_to_bf16_rtz(float f) {
  const uint32_t x = bits_of(f);
  return static_cast<uint16_t>(blend(mask_if((x & 0x7fffffffu) > 0x7f800000u), 0x7fffu, x >> 16));
}

/// Bits of the result of a PTX float -> integer `cvt.r*i` whose source is NaN (PTX ISA, cvt, "Integer
/// Notes"): 0 if the source is not .f64 and the destination is not 64-bit; otherwise 1 << (N-1), which is
/// MININT for a signed destination and (MAXINT >> 1) + 1 for an unsigned one. Measured on the H200
/// (tests/gpu/data, edge_f2i): f32 NaN -> i32 gives 0, -> i64 gives 0x8000000000000000.
constexpr uint64_t cvt_nan_to_int(bool src_f64, int dst_bits) {
  return (src_f64 || dst_bits == 64) ? uint64_t{1} << (dst_bits - 1) : 0;
}

/// Decoded values of all 256 bit patterns of an fp8 format (built once).
const float* fp8_table(ir::Elem e);

// Lane traits: S = storage type, C = compute type, load/store with one RTNE rounding.
struct F16 {
  using S = uint16_t;
  using C = float;
  static constexpr ir::Elem elem = ir::Elem::f16;
  static C load(S s) { return f16_to_f32(s); }
  static S store(C c) { return f32_to_f16(c); }
};
struct BF16 {
  using S = uint16_t;
  using C = float;
  static constexpr ir::Elem elem = ir::Elem::bf16;
  static C load(S s) { return bf16_to_f32(s); }
  static S store(C c) { return f32_to_bf16(c); }
};
struct F32 {
  using S = float;
  using C = float;
  static constexpr ir::Elem elem = ir::Elem::f32;
  static C load(S s) { return s; }
  static S store(C c) { return c; }
};
struct F64 {
  using S = double;
  using C = double;
  static constexpr ir::Elem elem = ir::Elem::f64;
  static C load(S s) { return s; }
  static S store(C c) { return c; }
};
template <ir::Elem E>
struct FP8 {
  using S = uint8_t;
  using C = float;
  static constexpr ir::Elem elem = E;
  static C load(S s) { return fp8_table(E)[s]; }
  static S store(C c) { return static_cast<S>(ir::float_to_bits_f32(E, c)); }
};

/// Calls `f.template operator()<Trait>()` for the float element `e`; returns false if `e` is not a float.
template <class F>
bool with_float(ir::Elem e, F&& f) {
  using ir::Elem;
  switch (e) {
    case Elem::f16: f.template operator()<F16>(); return true;
    case Elem::bf16: f.template operator()<BF16>(); return true;
    case Elem::f32: f.template operator()<F32>(); return true;
    case Elem::f64: f.template operator()<F64>(); return true;
    case Elem::f8e4m3fn: f.template operator()<FP8<Elem::f8e4m3fn>>(); return true;
    case Elem::f8e5m2: f.template operator()<FP8<Elem::f8e5m2>>(); return true;
    case Elem::f8e4m3fnuz: f.template operator()<FP8<Elem::f8e4m3fnuz>>(); return true;
    case Elem::f8e5m2fnuz: f.template operator()<FP8<Elem::f8e5m2fnuz>>(); return true;
    case Elem::i1:
    case Elem::i8:
    case Elem::i16:
    case Elem::i32:
    case Elem::i64:
    case Elem::ptr:
    case Elem::tensordesc:
    case Elem::none: return false;
  }
  return false;
}

/// Integer lanes: storage as the unsigned type of the width; i1 is a byte 0/1.
template <class U, bool I1 = false>
struct Int {
  using S = U;
  static constexpr bool i1 = I1;
  static constexpr int bits = I1 ? 1 : 8 * static_cast<int>(sizeof(U));
};

/// Calls `f.template operator()<IntTrait>()` for the integer element `e`.
template <class F>
bool with_int(ir::Elem e, F&& f) {
  using ir::Elem;
  switch (e) {
    case Elem::i1: f.template operator()<Int<uint8_t, true>>(); return true;
    case Elem::i8: f.template operator()<Int<uint8_t>>(); return true;
    case Elem::i16: f.template operator()<Int<uint16_t>>(); return true;
    case Elem::i32: f.template operator()<Int<uint32_t>>(); return true;
    case Elem::i64: f.template operator()<Int<uint64_t>>(); return true;
    case Elem::f8e4m3fn:
    case Elem::f8e5m2:
    case Elem::f8e4m3fnuz:
    case Elem::f8e5m2fnuz:
    case Elem::f16:
    case Elem::bf16:
    case Elem::f32:
    case Elem::f64:
    case Elem::ptr:
    case Elem::tensordesc:
    case Elem::none: return false;
  }
  return false;
}

}  // namespace tilescope::ops::ew
