// The element table and the float codecs (see include/tilescope/ir/elem.h).
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
#include "tilescope/ir/elem.h"

#include <bit>
#include <cassert>
#include <cctype>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <utility>

namespace tilescope::ir {

namespace {

constexpr ElemInfo kElems[] = {
    {Elem::i1, "i1", 1, 1, true, false, "|b1"},
    {Elem::i8, "i8", 1, 8, true, false, "|i1"},
    {Elem::i16, "i16", 2, 16, true, false, "<i2"},
    {Elem::i32, "i32", 4, 32, true, false, "<i4"},
    {Elem::i64, "i64", 8, 64, true, false, "<i8"},
    {Elem::f8e4m3fn, "f8E4M3FN", 1, 8, false, true, "|u1"},
    {Elem::f8e5m2, "f8E5M2", 1, 8, false, true, "|u1"},
    {Elem::f8e4m3fnuz, "f8E4M3FNUZ", 1, 8, false, true, "|u1"},
    {Elem::f8e5m2fnuz, "f8E5M2FNUZ", 1, 8, false, true, "|u1"},
    {Elem::f16, "f16", 2, 16, false, true, "<f2"},
    {Elem::bf16, "bf16", 2, 16, false, true, "<u2"},
    {Elem::f32, "f32", 4, 32, false, true, "<f4"},
    {Elem::f64, "f64", 8, 64, false, true, "<f8"},
    {Elem::ptr, "ptr", 8, 64, false, false, "<u8"},
    {Elem::tensordesc, "tensordesc", 0, 0, false, false, ""},
    {Elem::none, "none", 0, 0, false, false, ""},
};
static_assert(std::size(kElems) == kNumElems, "one row per Elem");
constexpr bool rows_in_order() {
  for (int i = 0; i < kNumElems; ++i)
    if (static_cast<int>(kElems[i].elem) != i) return false;
  return true;
}
static_assert(rows_in_order(), "rows in Elem order");

// Other spellings (lower case; MLIR's own come from kElems): Triton's, torch's, numpy's.
constexpr std::pair<std::string_view, Elem> kAliases[] = {
    {"bool", Elem::i1},
    {"int1", Elem::i1},
    {"int8", Elem::i8},
    {"u8", Elem::i8},
    {"uint8", Elem::i8},
    {"int16", Elem::i16},
    {"u16", Elem::i16},
    {"uint16", Elem::i16},
    {"int32", Elem::i32},
    {"u32", Elem::i32},
    {"uint32", Elem::i32},
    {"int64", Elem::i64},
    {"u64", Elem::i64},
    {"uint64", Elem::i64},
    {"fp16", Elem::f16},
    {"float16", Elem::f16},
    {"half", Elem::f16},
    {"bfloat16", Elem::bf16},
    {"fp32", Elem::f32},
    {"float32", Elem::f32},
    {"float", Elem::f32},
    {"fp64", Elem::f64},
    {"float64", Elem::f64},
    {"double", Elem::f64},
    {"fp8e5", Elem::f8e5m2},
    {"f8e5", Elem::f8e5m2},
    {"float8_e5m2", Elem::f8e5m2},
    {"fp8e4nv", Elem::f8e4m3fn},
    {"f8e4nv", Elem::f8e4m3fn},
    {"float8_e4m3fn", Elem::f8e4m3fn},
    {"fp8e4b8", Elem::f8e4m3fnuz},
    {"float8_e4m3fnuz", Elem::f8e4m3fnuz},
    {"fp8e5b16", Elem::f8e5m2fnuz},
    {"float8_e5m2fnuz", Elem::f8e5m2fnuz},
    // Triton's float8e4b15 (e4m3 with exponent bias 15) has no MLIR type: TTIR carries it as i8 (Triton
    // 3.6's builder get_fp8e4b15_ty), and kernels convert it with inline PTX
    // (triton/language/extra/cuda/utils.py), so a buffer of it is a buffer of i8.
    {"fp8e4b15", Elem::i8},
};

bool iequal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

}  // namespace

const ElemInfo& elem_info(Elem e) {
  auto i = static_cast<size_t>(e);
  assert(i < std::size(kElems));
  return kElems[i];
}

std::optional<Elem> elem_from_mlir(std::string_view name) {
  for (const ElemInfo& r : kElems)
    if (r.is_int || r.is_float)
      if (name == r.mlir) return r.elem;
  return std::nullopt;
}

std::optional<Elem> elem_from_name(std::string_view name) {
  for (const ElemInfo& r : kElems)
    if ((r.is_int || r.is_float) && iequal(name, r.mlir)) return r.elem;
  for (auto& [alias, e] : kAliases)
    if (iequal(name, alias)) return e;
  return std::nullopt;
}

bool is_unsigned_name(std::string_view name) { return !name.empty() && (name[0] == 'u' || name[0] == 'U'); }

const char* elem_names_help() {
  return "one of i1/bool, i8, i16, i32, i64, u8..u64, f16, bf16, f32, f64, f8e5m2 (fp8e5), f8e4m3fn "
         "(fp8e4nv), "
         "f8e4m3fnuz, f8e5m2fnuz; Triton's int32/fp32/... and torch's float32/bfloat16/... names too";
}

// ------------------------------------------------------------------------------------------------
// Float codecs

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

bool format_of(Elem e, Format& f) {
  switch (e) {
    case Elem::f16: f = {5, 10, 15, Special::ieee, 0x7FFF, false}; return true;
    case Elem::bf16: f = {8, 7, 127, Special::ieee, 0x7FFF, false}; return true;
    case Elem::f8e5m2: f = {5, 2, 15, Special::ieee, 0x7F, true}; return true;
    case Elem::f8e4m3fn: f = {4, 3, 7, Special::fn, 0x7F, true}; return true;
    case Elem::f8e4m3fnuz: f = {4, 3, 8, Special::fnuz, 0x80, true}; return true;
    case Elem::f8e5m2fnuz: f = {5, 2, 16, Special::fnuz, 0x80, true}; return true;
    case Elem::f32:
    case Elem::f64:  // native C++ types: the callers convert them without a Format
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

double float_from_bits(Elem e, uint64_t bits) {
  if (e == Elem::f32) return std::bit_cast<float>(static_cast<uint32_t>(bits));
  if (e == Elem::f64) return std::bit_cast<double>(bits);
  Format f;
  if (!format_of(e, f)) return 0;
  return decode(f, bits);
}

uint64_t float_to_bits(Elem e, double v, Rounding r) {
  if (e == Elem::f64) return std::bit_cast<uint64_t>(v);
  if (e == Elem::f32) {
    float x = static_cast<float>(v);  // RTNE, overflow to inf
    if (r == Rounding::rtz && !std::isnan(v) && std::fabs(static_cast<double>(x)) > std::fabs(v))
      x = std::nextafter(x, 0.0f);  // rounded away from zero: step back (inf -> FLT_MAX)
    return std::bit_cast<uint32_t>(x);
  }
  Format f;
  if (!format_of(e, f)) return 0;
  return encode(f, v, r);
}

uint64_t float_to_bits_f32(Elem e, float v, Rounding r) {
  // A double holds every float exactly, so this is still a single rounding of v.
  if (e == Elem::f32) return std::bit_cast<uint32_t>(v);
  return float_to_bits(e, static_cast<double>(v), r);
}

}  // namespace tilescope::ir
