// Float format conversions and storage sizes (see value.h).
//
// One generic codec covers f16, bf16 and the four fp8 formats: a format is (exponent bits, mantissa
// bits, bias, how it spells inf/NaN). Encoding rounds the exact value once (the input double holds
// every f32/f16/bf16/fp8 value exactly), so no double rounding happens on any path through here.
//
// Semantics (reference §5, measured on an H200 with triton 3.6, and Triton's NVIDIA FpToFp lowering,
// third_party/nvidia/lib/TritonNVIDIAGPUToLLVM/ElementwiseOpToLLVM.cpp):
// * rtne to f16/bf16 overflows to inf (`cvt.rn.f16.f32`, `llvm.nvvm.f2bf16.rn`): f32 70000 -> f16 inf.
// * rtz never overflows: values past the largest finite give the largest finite (`cvt.rz.f16.f32`:
//   3e9 -> 65504); an infinite input stays infinite where the format has inf.
// * rtne to f8E4M3FN / f8E5M2 is `cvt.rn.satfinite.{e4m3,e5m2}x2.{f32,f16x2}`: finite overflow and
//   +-inf give +-the largest finite value, NaN gives NaN. e4m3fn has no inf at all (OCP FP8 spec).
//   The fnuz formats (AMD only, no NVIDIA lowering) are treated the same way (saturate).
// * NaN inputs give the GPU's canonical NaN: 0x7FFF for f16 and bf16 (PTX canonical NaN), 0x7F for
//   e4m3fn and e5m2, 0x80 for the fnuz formats (their only NaN); f32/f64 NaNs keep their payload.
#include "src/exec/value.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "src/exec/plan.h"

namespace tilescope::exec {

namespace {

enum class Special {
  ieee,
  fn,
  fnuz
};  // ieee: inf + NaNs at max exponent; fn: only S.1111.111 is NaN;
    // fnuz: 0x80 is the only NaN, no inf, no -0
struct Format {
  int ebits, mbits, bias;
  Special special;
  uint64_t nan;    // canonical NaN bits
  bool satfinite;  // rtne saturates (the fp8 cvt.rn.satfinite); otherwise rtne overflows to inf
};

bool format_of(ir::Elem e, Format& f) {
  using ir::Elem;
  switch (e) {
    case Elem::f16: f = {5, 10, 15, Special::ieee, 0x7FFF, false}; return true;
    case Elem::bf16: f = {8, 7, 127, Special::ieee, 0x7FFF, false}; return true;
    case Elem::f8e5m2: f = {5, 2, 15, Special::ieee, 0x7F, true}; return true;
    case Elem::f8e4m3fn: f = {4, 3, 7, Special::fn, 0x7F, true}; return true;
    case Elem::f8e4m3fnuz: f = {4, 3, 8, Special::fnuz, 0x80, true}; return true;
    case Elem::f8e5m2fnuz: f = {5, 2, 16, Special::fnuz, 0x80, true}; return true;
    default: return false;
  }
}

uint64_t max_finite(const Format& f) {
  const uint64_t mmask = (uint64_t{1} << f.mbits) - 1;
  const uint64_t emax = (uint64_t{1} << f.ebits) - 1;
  switch (f.special) {
    case Special::ieee: return ((emax - 1) << f.mbits) | mmask;
    case Special::fn: return (emax << f.mbits) | (mmask - 1);
    case Special::fnuz: return (emax << f.mbits) | mmask;
  }
  return 0;
}

double decode(const Format& f, uint64_t bits) {
  const int width = 1 + f.ebits + f.mbits;
  const uint64_t sign_bit = uint64_t{1} << (width - 1);
  const bool neg = bits & sign_bit;
  const uint64_t mag = bits & (sign_bit - 1);
  const uint64_t mmask = (uint64_t{1} << f.mbits) - 1;
  const uint64_t emax = (uint64_t{1} << f.ebits) - 1;
  const uint64_t e = mag >> f.mbits, m = mag & mmask;
  const double qnan = std::numeric_limits<double>::quiet_NaN();
  switch (f.special) {
    case Special::ieee:
      if (e == emax) return m ? qnan : (neg ? -HUGE_VAL : HUGE_VAL);
      break;
    case Special::fn:
      if (mag == ((emax << f.mbits) | mmask)) return qnan;
      break;
    case Special::fnuz:
      if (bits == sign_bit) return qnan;
      break;
  }
  double v = e == 0
                 ? std::ldexp(static_cast<double>(m), 1 - f.bias - f.mbits)
                 : std::ldexp(static_cast<double>(m | (mmask + 1)), static_cast<int>(e) - f.bias - f.mbits);
  return neg ? -v : v;
}

uint64_t encode(const Format& f, double v, Rounding r) {
  if (std::isnan(v)) return f.nan;
  const int width = 1 + f.ebits + f.mbits;
  const uint64_t sign = std::signbit(v) ? uint64_t{1} << (width - 1) : 0;
  const uint64_t maxf = max_finite(f);
  const uint64_t inf = f.special == Special::ieee ? maxf + 1 : maxf;  // no inf: saturate
  double a = std::fabs(v);
  uint64_t mag;
  if (std::isinf(a)) {
    mag = (f.satfinite && r == Rounding::rtne) ? maxf : inf;
  } else if (a == 0) {
    mag = 0;
  } else {
    // The quantum (value of one unit in the last place) at a's binade, clamped to the subnormal one.
    const int emin = 1 - f.bias;
    int ex;
    std::frexp(a, &ex);  // a = m * 2^ex, m in [0.5, 1): unbiased exponent ex - 1
    const int e = std::max(ex - 1, emin);
    if (e - emin > (1 << f.ebits) + 2) {  // far beyond the format: saturate without building a huge count
      mag = maxf + 1;
    } else {
      const double n = std::ldexp(a, f.mbits - e);  // exact: a power-of-two scaling
      double q = std::floor(n);
      const double frac = n - q;  // exact
      if (r == Rounding::rtne && (frac > 0.5 || (frac == 0.5 && std::fmod(q, 2.0) != 0))) q += 1;
      // Monotonic encoding: (e - emin) binades above the subnormal one, plus the count within.
      mag = (static_cast<uint64_t>(e - emin) << f.mbits) + static_cast<uint64_t>(q);
    }
    if (mag > maxf) mag = (r == Rounding::rtz || f.satfinite) ? maxf : inf;
  }
  if (f.special == Special::fnuz && mag == 0) return 0;  // no negative zero: 0x80 is NaN
  return sign | mag;
}

}  // namespace

double float_from_bits(ir::Elem e, uint64_t bits) {
  if (e == ir::Elem::f32) return std::bit_cast<float>(static_cast<uint32_t>(bits));
  if (e == ir::Elem::f64) return std::bit_cast<double>(bits);
  Format f;
  if (!format_of(e, f)) return 0;
  return decode(f, bits);
}

uint64_t float_to_bits(ir::Elem e, double v, Rounding r) {
  if (e == ir::Elem::f64) return std::bit_cast<uint64_t>(v);
  if (e == ir::Elem::f32) {
    float x = static_cast<float>(v);  // RTNE, overflow to inf
    if (r == Rounding::rtz && !std::isnan(v) && std::fabs(static_cast<double>(x)) > std::fabs(v))
      x = std::nextafter(x, 0.0f);  // rounded away from zero: step back (inf -> FLT_MAX)
    return std::bit_cast<uint32_t>(x);
  }
  Format f;
  if (!format_of(e, f)) return 0;
  return encode(f, v, r);
}

uint64_t float_to_bits_f32(ir::Elem e, float v, Rounding r) {
  // A double holds every float exactly, so this is still a single rounding of v.
  if (e == ir::Elem::f32) return std::bit_cast<uint32_t>(v);
  return float_to_bits(e, static_cast<double>(v), r);
}

int64_t storage_bytes(const ir::Type& t) {
  if (t.is_block_ptr()) return static_cast<int64_t>(sizeof(BlockPtr));
  if (t.elem == ir::Elem::tensordesc) return static_cast<int64_t>(sizeof(TensorDesc));
  return t.numel() * ir::elem_bytes(t.elem);
}

}  // namespace tilescope::exec
