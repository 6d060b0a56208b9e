// arith, math and the tt elementwise ops (reference §1.1, §2.1, §2.2, semantics §5).
//
// Every lowering hook picks, at plan time, one kernel instantiated for the op's element type(s);
// kernels are tight loops over `step.n` lanes with no per-lane dispatch. Integer storage is the
// unsigned type of the width (TTIR is signless: the op says signed or unsigned); i1 is a byte 0/1.
// f16/bf16/fp8 lanes are computed in float (f64 in double) and rounded back once, RTNE, which for
// +,-,*,/ gives the correctly rounded f16/bf16 result (float has > 2p+2 bits), as the GPU's native
// f16 ops do (§5.2).
//
// GPU semantics kept here (reference §5, measured on an H200, triton 3.6):
// * integer ops wrap (two's complement); divsi/remsi truncate (C); x/0 = -1 (all ones) and x%0 = x
//   for both signednesses; INT_MIN / -1 = INT_MIN and INT_MIN % -1 = 0.
// * shifts: an amount >= the bit width (taken as unsigned) gives 0 for shli/shrui and the sign fill
//   for shrsi. LLVM calls this poison; PTX `shl/shr` clamp the amount to the register width, which is
//   what the GPU computes for a runtime amount. (§5 does not measure it: documented choice.)
// * fptosi/fptoui are PTX cvt.rzi: truncate, saturate to the destination range; NaN gives 0, or
//   1 << (N-1) from an f64 source or into a 64-bit destination (f32 NaN -> i64 is INT64_MIN). An i8
//   result is converted at 16 bits and keeps the low byte (f.to(int8) of 3e9 stores -1). See float_to_int.
// * minnumf/maxnumf are IEEE minNum/maxNum (a NaN operand is ignored); minimumf/maximumf propagate
//   NaN. Both order -0 below +0.
// * remf is LLVM NVPTX's frem expansion fma(-trunc(x / y), y, x), x when |y| is inf (see RemF; not C
//   fmod). math.fma is fused (one rounding). divf is IEEE and the transcendental math.* are SLEEF's
//   1-ulp routines (vmath.h) or libm here, where the GPU uses approximations (div.full, ex2.approx): a
//   few ulp of difference is expected (§2.2).
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "elementwise.h"
#include "ops.h"
#include "tilescope/exec/value.h"
#include "vmath.h"

namespace tilescope::ops {

using exec::KernelFn;
using exec::Program;
using ir::Elem;

namespace ew {

namespace {
struct Fp8Tables {
  float t[4][256];
  Fp8Tables() {
    const Elem es[4] = {Elem::f8e4m3fn, Elem::f8e5m2, Elem::f8e4m3fnuz, Elem::f8e5m2fnuz};
    for (int k = 0; k < 4; ++k)
      for (int b = 0; b < 256; ++b) t[k][b] = static_cast<float>(ir::float_from_bits(es[k], b));
  }
};
const Fp8Tables kFp8;
}  // namespace

const float* fp8_table(Elem e) {
  switch (e) {
    case Elem::f8e4m3fn: return kFp8.t[0];
    case Elem::f8e5m2: return kFp8.t[1];
    case Elem::f8e4m3fnuz: return kFp8.t[2];
    case Elem::f8e5m2fnuz: return kFp8.t[3];
    case Elem::i1:
    case Elem::i8:
    case Elem::i16:
    case Elem::i32:
    case Elem::i64:
    case Elem::f16:
    case Elem::bf16:
    case Elem::f32:
    case Elem::f64:
    case Elem::ptr:
    case Elem::tensordesc:
    case Elem::none: break;
  }
  assert(false && "fp8_table is only asked for the fp8 formats (FP8<E>)");
  return kFp8.t[3];
}

}  // namespace ew

namespace {

// ------------------------------------------------------------------------------------------------
// Small helpers

template <class U>
using Wide = std::conditional_t<(sizeof(U) < 4), uint32_t, U>;  // avoids int promotion of u8/u16

void expect_operands(const Op& op, Planner& p, const Step& s, size_t n) {
  if (s.in.size() != n || s.out.size() != 1 || s.in_types.size() != n || s.out_types.size() != 1)
    p.unsupported(op, fmt::format("expects {} operand(s) and one result", n));
}

// The keyword of an enum attribute written as a keyword/string, or its integer value mapped through
// `names` (MLIR's enum numbering, for the generic form).
std::string enum_attr(const Op& op, const char* key,
                      std::initializer_list<std::pair<int64_t, const char*>> names) {
  const ir::Attr* a = op.attr(key);
  if (!a) return {};
  if (a->kind == ir::Attr::Kind::Keyword || a->kind == ir::Attr::Kind::String) return a->s;
  if (a->kind == ir::Attr::Kind::Int)
    for (auto& [v, n] : names)
      if (v == a->i) return n;
  return "?";
}

// ------------------------------------------------------------------------------------------------
// Integer binaries. Op::f works on the unsigned storage type U; an i1 lane is first widened to 0 or
// all ones so that 8-bit arithmetic on it, truncated back to one bit, is exactly 1-bit arithmetic
// (ring ops, signed and unsigned order, division, and shift amounts >= width all agree).

template <class T, class OpT>
void int_binary(Program& p, const exec::Step& s) {
  using U = typename T::S;
  const U* a = p.at<U>(s.in[0]);
  const U* b = p.at<U>(s.in[1]);
  U* o = p.at<U>(s.out[0]);
  const int64_t n = s.n;
  for (int64_t i = 0; i < n; ++i) {
    U x = a[i], y = b[i];
    if constexpr (T::i1) {
      x = static_cast<U>(0u - x);
      y = static_cast<U>(0u - y);
    }
    U r = OpT::template f<U>(x, y);
    if constexpr (T::i1) r &= 1u;
    o[i] = r;
  }
}

struct AddI {
  template <class U>
  static U f(U a, U b) {
    return U(Wide<U>(a) + Wide<U>(b));
  }
};
struct SubI {
  template <class U>
  static U f(U a, U b) {
    return U(Wide<U>(a) - Wide<U>(b));
  }
};
struct MulI {
  template <class U>
  static U f(U a, U b) {
    return U(Wide<U>(a) * Wide<U>(b));
  }
};
struct AndI {
  template <class U>
  static U f(U a, U b) {
    return U(a & b);
  }
};
struct OrI {
  template <class U>
  static U f(U a, U b) {
    return U(a | b);
  }
};
struct XorI {
  template <class U>
  static U f(U a, U b) {
    return U(a ^ b);
  }
};
struct DivSI {
  template <class U>
  static U f(U a, U b) {
    using S = std::make_signed_t<U>;
    const S x = S(a), y = S(b);
    if (y == 0) return U(~U(0));               // GPU: all ones (§5)
    if (y == S(-1)) return U(Wide<U>(0) - a);  // wraps: INT_MIN / -1 = INT_MIN
    return U(S(x / y));
  }
};
struct DivUI {
  template <class U>
  static U f(U a, U b) {
    return b == 0 ? U(~U(0)) : U(a / b);
  }
};
struct RemSI {
  template <class U>
  static U f(U a, U b) {
    using S = std::make_signed_t<U>;
    const S x = S(a), y = S(b);
    if (y == 0) return a;  // GPU: the dividend (§5)
    if (y == S(-1)) return 0;
    return U(S(x % y));
  }
};
struct RemUI {
  template <class U>
  static U f(U a, U b) {
    return b == 0 ? a : U(a % b);
  }
};
struct ShlI {
  template <class U>
  static U f(U a, U b) {
    return b >= 8 * sizeof(U) ? U(0) : U(Wide<U>(a) << b);
  }
};
struct ShrUI {
  template <class U>
  static U f(U a, U b) {
    return b >= 8 * sizeof(U) ? U(0) : U(a >> b);
  }
};
struct ShrSI {
  template <class U>
  static U f(U a, U b) {
    using S = std::make_signed_t<U>;
    const U amt = b >= 8 * sizeof(U) ? U(8 * sizeof(U) - 1) : b;
    return U(S(S(a) >> amt));
  }
};
struct MinSI {
  template <class U>
  static U f(U a, U b) {
    using S = std::make_signed_t<U>;
    return S(a) < S(b) ? a : b;
  }
};
struct MaxSI {
  template <class U>
  static U f(U a, U b) {
    using S = std::make_signed_t<U>;
    return S(a) > S(b) ? a : b;
  }
};
struct MinUI {
  template <class U>
  static U f(U a, U b) {
    return a < b ? a : b;
  }
};
struct MaxUI {
  template <class U>
  static U f(U a, U b) {
    return a > b ? a : b;
  }
};
struct MulHiUI {
  template <class U>
  static U f(U a, U b) {
    if constexpr (sizeof(U) == 8) {
      return U((static_cast<unsigned __int128>(a) * b) >> 64);
    } else {
      return U((static_cast<uint64_t>(a) * b) >> (8 * sizeof(U)));
    }
  }
};

template <class OpT>
KernelFn int_binary_kernel(Elem e) {
  KernelFn fn = nullptr;
  ew::with_int(e, [&]<class T>() { fn = int_binary<T, OpT>; });
  return fn;
}

// ------------------------------------------------------------------------------------------------
// Float binaries

template <class T, class OpT>
void float_binary(Program& p, const exec::Step& s) {
  using S = typename T::S;
  const S* a = p.at<S>(s.in[0]);
  const S* b = p.at<S>(s.in[1]);
  S* o = p.at<S>(s.out[0]);
  const int64_t n = s.n;
  for (int64_t i = 0; i < n; ++i) o[i] = T::store(OpT::f(T::load(a[i]), T::load(b[i])));
}

struct AddF {
  template <class C>
  static C f(C a, C b) {
    return a + b;
  }
};
struct SubF {
  template <class C>
  static C f(C a, C b) {
    return a - b;
  }
};
struct MulF {
  template <class C>
  static C f(C a, C b) {
    return a * b;
  }
};
struct DivF {
  template <class C>
  static C f(C a, C b) {
    return a / b;
  }
};
// arith.remf as the GPU computes it, which is not C fmod. Triton lowers remf to LLVM `frem`; PTX has no
// remainder instruction and LLVM's NVPTX backend expands it (llvm/lib/Target/NVPTX/NVPTXISelLowering.cpp,
// `lowerFREM`, FREM is Custom for f32/f64):
//   r = x - trunc(x / y) * y, the mul and sub flagged contractable (one fma), and r = x when |y| == inf.
// The select is dropped only under unsafe-fp-math or `ninf`, which Triton does not set. The division is
// a plain FDIV: div.rn.f32 (getDivF32Level() is 2 without unsafe-fp-math) or div.rn.f64. f16 and bf16
// FREM are Promote: extend to f32, run the f32 expansion, round back once (the lane traits do that).
// Measured on the H200 (tests/gpu/data, edge_float row 4): -3e9 % 3 = +0 (fmod: -0) and
// 3e38 % 10 = -1.0141205e31 (fmod: 2; the quotient 3e37 is inexact); the fma matters for the latter.
struct RemF {
  template <class C>
  static C f(C a, C b) {
    if (std::isinf(b)) return a;
    return std::fma(-std::trunc(a / b), b, a);
  }
};
// IEEE minNum/maxNum: a NaN operand is ignored; -0 < +0.
struct MinNumF {
  template <class C>
  static C f(C a, C b) {
    if (a != a) return b;
    if (b != b) return a;
    return (a < b || (a == b && std::signbit(a))) ? a : b;
  }
};
struct MaxNumF {
  template <class C>
  static C f(C a, C b) {
    if (a != a) return b;
    if (b != b) return a;
    return (a > b || (a == b && !std::signbit(a))) ? a : b;
  }
};
// minimum/maximum: NaN propagates; -0 < +0.
struct MinimumF {
  template <class C>
  static C f(C a, C b) {
    if (a != a || b != b) return a + b;
    return (a < b || (a == b && std::signbit(a))) ? a : b;
  }
};
struct MaximumF {
  template <class C>
  static C f(C a, C b) {
    if (a != a || b != b) return a + b;
    return (a > b || (a == b && !std::signbit(a))) ? a : b;
  }
};

template <class OpT>
KernelFn float_binary_kernel(Elem e) {
  KernelFn fn = nullptr;
  ew::with_float(e, [&]<class T>() { fn = float_binary<T, OpT>; });
  return fn;
}

// ------------------------------------------------------------------------------------------------
// Float unaries (arith.negf, math.*, tt.precise_sqrt)

// The ops with a vectorised routine (OpT::vec, vmath.h: SLEEF, 1 ulp) run it over the whole array; f16 /
// bf16 / fp8 lanes go through it in float, a chunk at a time, and are rounded back once as before.
template <class T, class OpT>
void float_unary(Program& p, const exec::Step& s) {
  using S = typename T::S;
  using C = typename T::C;
  const S* a = p.at<S>(s.in[0]);
  S* o = p.at<S>(s.out[0]);
  const int64_t n = s.n;
  if constexpr (OpT::vec != vmath::Fn::none) {
    static const auto map = [] {
      if constexpr (std::is_same_v<C, float>)
        return vmath::f32(OpT::vec);
      else
        return vmath::f64(OpT::vec);
    }();
    if constexpr (std::is_same_v<S, C>) {
      map(a, o, n);
    } else {
      constexpr int64_t kChunk = 256;
      C buf[kChunk];
      for (int64_t i = 0; i < n; i += kChunk) {
        const int64_t m = std::min(kChunk, n - i);
        for (int64_t j = 0; j < m; ++j) buf[j] = T::load(a[i + j]);
        map(buf, buf, m);
        for (int64_t j = 0; j < m; ++j) o[i + j] = T::store(buf[j]);
      }
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) o[i] = T::store(OpT::f(T::load(a[i])));
}

// Name, the scalar definition (the reference semantics; ops without a routine run it), the vmath routine.
#define TS_UNARY_V(Name, expr, routine)                  \
  struct Name {                                          \
    static constexpr vmath::Fn vec = vmath::Fn::routine; \
    template <class C>                                   \
    static C f(C x) {                                    \
      return expr;                                       \
    }                                                    \
  };
#define TS_UNARY(Name, expr) TS_UNARY_V(Name, expr, none)
TS_UNARY(NegF, -x)
TS_UNARY_V(Exp, std::exp(x), exp)
TS_UNARY_V(Exp2, std::exp2(x), exp2)
TS_UNARY_V(Log, std::log(x), log)
TS_UNARY_V(Log2, std::log2(x), log2)
TS_UNARY(Sqrt, std::sqrt(x))
TS_UNARY(Rsqrt, C(1) / std::sqrt(x))
TS_UNARY(AbsF, std::fabs(x))
TS_UNARY(Floor, std::floor(x))
TS_UNARY(Ceil, std::ceil(x))
TS_UNARY_V(Erf, std::erf(x), erf)
TS_UNARY_V(Sin, std::sin(x), sin)
TS_UNARY_V(Cos, std::cos(x), cos)
TS_UNARY_V(Tan, std::tan(x), tan)
TS_UNARY_V(Tanh, std::tanh(x), tanh)
TS_UNARY_V(Expm1, std::expm1(x), expm1)
TS_UNARY_V(Log1p, std::log1p(x), log1p)
TS_UNARY_V(Log10, std::log10(x), log10)
TS_UNARY_V(Cbrt, std::cbrt(x), cbrt)
TS_UNARY(Trunc, std::trunc(x))
TS_UNARY(Round, std::round(x))          // half away from zero (math.round)
TS_UNARY(RoundEven, std::nearbyint(x))  // default rounding mode: to nearest, ties to even
TS_UNARY_V(Sinh, std::sinh(x), sinh)
TS_UNARY_V(Cosh, std::cosh(x), cosh)
TS_UNARY_V(Asin, std::asin(x), asin)
TS_UNARY_V(Acos, std::acos(x), acos)
TS_UNARY_V(Atan, std::atan(x), atan)
TS_UNARY_V(Asinh, std::asinh(x), asinh)
TS_UNARY_V(Acosh, std::acosh(x), acosh)
TS_UNARY_V(Atanh, std::atanh(x), atanh)
#undef TS_UNARY
#undef TS_UNARY_V

template <class OpT>
KernelFn float_unary_kernel(Elem e) {
  KernelFn fn = nullptr;
  ew::with_float(e, [&]<class T>() { fn = float_unary<T, OpT>; });
  return fn;
}

// ------------------------------------------------------------------------------------------------
// fma, clampf, absi

template <class T>
void fma_kernel(Program& p, const exec::Step& s) {
  using S = typename T::S;
  const S* a = p.at<S>(s.in[0]);
  const S* b = p.at<S>(s.in[1]);
  const S* c = p.at<S>(s.in[2]);
  S* o = p.at<S>(s.out[0]);
  const int64_t n = s.n;
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, ew::F32> || std::is_same_v<T, ew::F64>) {
      o[i] = std::fma(a[i], b[i], c[i]);
    } else {
      // Narrow formats: the product is exact in double; round the double sum once into the format.
      const double r = std::fma(double(T::load(a[i])), double(T::load(b[i])), double(T::load(c[i])));
      o[i] = static_cast<S>(ir::float_to_bits(T::elem, r));
    }
  }
}

// tt.clampf. Triton's generic lowering is min(max(x, lo), hi) with maxNum/minNum for propagateNan = none
// (a NaN x gives lo, then min(lo, hi)), and NaN for a NaN x with propagateNan = all.
// On sm_90+ the NVIDIA backend (ElementwiseOpToLLVM.cpp, ClampFOpConversion::isClipPattern) rewrites
// clamp(x, -limit, limit) for f32/f16 into one `min{.NaN}.xorsign.abs(x, limit)` when lo is
// `arith.subf 0, hi` or lo and hi are splat constants with lo == -hi (see clip_pattern below). PTX ISA
// (min): the magnitude is min(|x|, |limit|), the sign is sign(x) xor sign(limit); a single NaN operand is
// ignored without .NaN (both NaN, or any NaN with .NaN: canonical NaN). So a NaN x clamps to +limit
// (or -limit for a negative NaN), and -0.0 stays -0.0. Measured on the H200 (tests/gpu/data,
// edge_float row 11, clamp(x, -1.0, 1.0)): NaN -> 1.0, -0.0 -> -0.0.
template <class C, bool PropagateNan>
C min_xorsign_abs(C x, C limit) {
  const bool xn = x != x, ln = limit != limit;
  if ((xn && ln) || (PropagateNan && (xn || ln))) return std::numeric_limits<C>::quiet_NaN();
  const C ax = std::fabs(x), al = std::fabs(limit);
  const C m = xn ? al : ln ? ax : (al < ax ? al : ax);
  return std::signbit(x) != std::signbit(limit) ? -m : m;
}

template <class T, bool PropagateNan, bool Xorsign>
void clampf_kernel(Program& p, const exec::Step& s) {
  using S = typename T::S;
  const S* x = p.at<S>(s.in[0]);
  const S* lo = p.at<S>(s.in[1]);
  const S* hi = p.at<S>(s.in[2]);
  S* o = p.at<S>(s.out[0]);
  const int64_t n = s.n;
  for (int64_t i = 0; i < n; ++i) {
    auto v = T::load(x[i]);
    if constexpr (Xorsign) {
      o[i] = T::store(min_xorsign_abs<decltype(v), PropagateNan>(v, T::load(hi[i])));
    } else {
      auto r = MinNumF::f(MaxNumF::f(v, T::load(lo[i])), T::load(hi[i]));
      if constexpr (PropagateNan) r = v != v ? v : r;
      o[i] = T::store(r);
    }
  }
}

template <class T>
void absi_kernel(Program& p, const exec::Step& s) {
  using U = typename T::S;
  using SI = std::make_signed_t<U>;
  const U* a = p.at<U>(s.in[0]);
  U* o = p.at<U>(s.out[0]);
  const int64_t n = s.n;
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (T::i1) {
      o[i] = a[i];  // |-1| = 1 wraps back to the one-bit pattern 1
    } else {
      o[i] = SI(a[i]) < 0 ? U(Wide<U>(0) - a[i]) : a[i];  // |INT_MIN| = INT_MIN (wraps)
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Comparisons: result i1 (a byte 0/1).

template <class T, class Pred>
void cmp_int(Program& p, const exec::Step& s) {
  using U = typename T::S;
  const U* a = p.at<U>(s.in[0]);
  const U* b = p.at<U>(s.in[1]);
  uint8_t* o = p.at<uint8_t>(s.out[0]);
  const int64_t n = s.n;
  for (int64_t i = 0; i < n; ++i) {
    U x = a[i], y = b[i];
    if constexpr (T::i1) {
      x = U(0u - x);
      y = U(0u - y);
    }
    o[i] = Pred::template f<U>(x, y) ? 1 : 0;
  }
}

#define TS_ICMP(Name, expr)            \
  struct Name {                        \
    template <class U>                 \
    static bool f(U a, U b) {          \
      using S = std::make_signed_t<U>; \
      (void)sizeof(S);                 \
      return expr;                     \
    }                                  \
  };
TS_ICMP(Eq, a == b)
TS_ICMP(Ne, a != b)
TS_ICMP(Slt, S(a) < S(b))
TS_ICMP(Sle, S(a) <= S(b))
TS_ICMP(Sgt, S(a) > S(b))
TS_ICMP(Sge, S(a) >= S(b))
TS_ICMP(Ult, a < b)
TS_ICMP(Ule, a <= b)
TS_ICMP(Ugt, a > b)
TS_ICMP(Uge, a >= b)
#undef TS_ICMP

template <class T, class Pred>
void cmp_float(Program& p, const exec::Step& s) {
  using S = typename T::S;
  const S* a = p.at<S>(s.in[0]);
  const S* b = p.at<S>(s.in[1]);
  uint8_t* o = p.at<uint8_t>(s.out[0]);
  const int64_t n = s.n;
  for (int64_t i = 0; i < n; ++i) o[i] = static_cast<uint8_t>(Pred::f(T::load(a[i]), T::load(b[i])));
}

// Ordered predicates are false when either operand is NaN, unordered ones true (LLVM fcmp).
#define TS_FCMP(Name, expr)   \
  struct Name {               \
    template <class C>        \
    static bool f(C a, C b) { \
      return expr;            \
    }                         \
  };
TS_FCMP(FOeq, a == b)
TS_FCMP(FOgt, a > b)
TS_FCMP(FOge, a >= b)
TS_FCMP(FOlt, a < b)
TS_FCMP(FOle, a <= b)
TS_FCMP(FOne, a<b || a> b)
TS_FCMP(FOrd, a == a && b == b)
TS_FCMP(FUeq, !(a < b || a > b))
TS_FCMP(FUgt, !(a <= b))
TS_FCMP(FUge, !(a < b))
TS_FCMP(FUlt, !(a >= b))
TS_FCMP(FUle, !(a > b))
TS_FCMP(FUne, a != b)
TS_FCMP(FUno, a != a || b != b)
#undef TS_FCMP
struct FFalse {
  template <class C>
  static bool f(C, C) {
    return false;
  }
};
struct FTrue {
  template <class C>
  static bool f(C, C) {
    return true;
  }
};

template <class Pred>
KernelFn int_cmp_kernel(Elem e) {
  KernelFn fn = nullptr;
  ew::with_int(e, [&]<class T>() { fn = cmp_int<T, Pred>; });
  return fn;
}

template <class Pred>
KernelFn float_cmp_kernel(Elem e) {
  KernelFn fn = nullptr;
  ew::with_float(e, [&]<class T>() { fn = cmp_float<T, Pred>; });
  return fn;
}

// ------------------------------------------------------------------------------------------------
// select

template <class T, bool ScalarCond>
void select_kernel(Program& p, const exec::Step& s) {
  const uint8_t* c = p.at<uint8_t>(s.in[0]);
  const T* a = p.at<T>(s.in[1]);
  const T* b = p.at<T>(s.in[2]);
  T* o = p.at<T>(s.out[0]);
  const int64_t n = s.n;
  if constexpr (ScalarCond) {
    const T* src = c[0] ? a : b;
    std::memcpy(o, src, sizeof(T) * n);
  } else {
    // Mask blend rather than `c ? a : b`, which GCC keeps as a branch per lane.
    for (int64_t i = 0; i < n; ++i) {
      const T m = static_cast<T>(T(0) - T(c[i] & 1u));
      o[i] = static_cast<T>((a[i] & m) | (b[i] & static_cast<T>(~m)));
    }
  }
}

// Values that are not arrays of 1/2/4/8-byte lanes (block pointers, descriptors): whole-slot copy.
struct SelectBytes {
  int64_t bytes;
};
void select_bytes_kernel(Program& p, const exec::Step& s) {
  const uint8_t* c = p.at<uint8_t>(s.in[0]);
  std::memcpy(p.at<std::byte>(s.out[0]), p.at<std::byte>(c[0] ? s.in[1] : s.in[2]),
              static_cast<size_t>(s.data<SelectBytes>().bytes));
}

// ------------------------------------------------------------------------------------------------
// Casts

// Integer value of an integer lane as int64 (sign- or zero-extended per the op).
template <class T, bool Signed>
inline int64_t int_value(typename T::S x) {
  using U = typename T::S;
  if constexpr (T::i1)
    return Signed ? -int64_t(x & 1u) : int64_t(x & 1u);
  else if constexpr (Signed)
    return int64_t(std::make_signed_t<U>(x));
  else
    return int64_t(uint64_t(x));
}

template <class T>
inline typename T::S int_store(int64_t v) {
  using U = typename T::S;
  if constexpr (T::i1)
    return U(v & 1);
  else
    return U(uint64_t(v));
}

template <class Src, class Dst, bool Signed>
void int_cast(Program& p, const exec::Step& s) {
  using SS = typename Src::S;
  using DS = typename Dst::S;
  const SS* a = p.at<SS>(s.in[0]);
  DS* o = p.at<DS>(s.out[0]);
  const int64_t n = s.n;
  for (int64_t i = 0; i < n; ++i) o[i] = int_store<Dst>(int_value<Src, Signed>(a[i]));
}

// int -> float. Exact in the compute type for narrow ints; for wide ints into f32/f64 the C++
// conversion rounds once (RTNE). Wide ints into f16/bf16/fp8 are rounded once through
// int_to_format (integer RTNE to the format's precision, then an exact encode).
int significand_bits(Elem e) {  // with the implicit leading one
  switch (e) {
    case Elem::f16: return 11;
    case Elem::bf16: return 8;
    case Elem::f8e5m2:
    case Elem::f8e5m2fnuz: return 3;
    case Elem::f8e4m3fn:
    case Elem::f8e4m3fnuz: return 4;
    case Elem::i1:
    case Elem::i8:
    case Elem::i16:
    case Elem::i32:
    case Elem::i64:
    case Elem::f32:
    case Elem::f64:
    case Elem::ptr:
    case Elem::tensordesc:
    case Elem::none: break;
  }
  assert(false && "int_to_format rounds to f16, bf16 and fp8 only (f32/f64 convert in C++)");
  return 4;
}
uint64_t int_to_format(Elem e, uint64_t mag, bool neg) {
  const int p = significand_bits(e);
  const int k = 64 - std::countl_zero(mag);
  if (k > p) {
    const int sh = k - p;
    const uint64_t q = mag >> sh, rem = mag & ((uint64_t{1} << sh) - 1), half = uint64_t{1} << (sh - 1);
    const uint64_t qq = q + ((rem > half || (rem == half && (q & 1))) ? 1 : 0);
    // qq << sh may be 2^64: build the double directly.
    const double v = std::ldexp(static_cast<double>(qq), sh);
    return ir::float_to_bits(e, neg ? -v : v);
  }
  const double v = static_cast<double>(mag);
  return ir::float_to_bits(e, neg ? -v : v);
}

template <class Src, bool Signed, class Dst>
void int_to_float(Program& p, const exec::Step& s) {
  using SS = typename Src::S;
  using DS = typename Dst::S;
  using C = typename Dst::C;
  const SS* a = p.at<SS>(s.in[0]);
  DS* o = p.at<DS>(s.out[0]);
  const int64_t n = s.n;
  constexpr bool exact = Src::bits <= 16 || std::is_same_v<Dst, ew::F32> || std::is_same_v<Dst, ew::F64>;
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (exact) {
      C v;
      if constexpr (Src::i1)
        v = Signed ? -C(a[i] & 1u) : C(a[i] & 1u);
      else if constexpr (Signed)
        v = static_cast<C>(std::make_signed_t<SS>(a[i]));
      else
        v = static_cast<C>(a[i]);
      o[i] = Dst::store(v);
    } else {
      const int64_t v = int_value<Src, Signed>(a[i]);
      const bool neg = Signed && v < 0;
      const uint64_t mag = neg ? uint64_t(0) - uint64_t(v) : uint64_t(v);
      o[i] = static_cast<DS>(int_to_format(Dst::elem, mag, neg));
    }
  }
}

// float -> int (arith.fptosi / fptoui) as the GPU's `cvt.rzi.{s,u}N.{f32,f64}` computes it. LLVM calls
// an out-of-range or NaN source poison; the NVPTX backend selects cvt, whose result is defined:
// * rounded toward zero, then "clamped to the destination range by default" (PTX ISA, cvt, saturation);
// * NaN gives 0 if the source is not .f64 and the destination is not .s64/.u64, otherwise
//   1 << (N-1), i.e. INT_MIN / 2^(N-1) (PTX ISA, cvt, "Integer Notes"). Measured on the H200
//   (tests/gpu/data, edge_f2i): f32 NaN -> i32 0, -> u32 0, -> i16 0, -> i64 0x8000000000000000.
// * i8: PTX has no 8-bit registers, so LLVM promotes the result type and converts with cvt.rzi.s16 /
//   cvt.rzi.u16 (saturating at 16 bits); storing the i8 keeps the low byte. Measured (edge_f2i i8_ptr):
//   3e9 -> -1 (low byte of 32767), 256.0 -> 0, 65504 -> -1, -32769 -> 0. A later extsi/extui on the GPU
//   reads the whole 16-bit register (f.to(uint8).to(int32) of 256.0 is 256, reference §5); our i8
//   storage holds only the byte a store would write.
// f16/bf16/fp8 sources behave as f32 (cvt from .f16/.bf16, or an exact extension to f32 first).
template <class Src, class Dst, bool Signed>
void float_to_int(Program& p, const exec::Step& s) {
  using SS = typename Src::S;
  using DS = typename Dst::S;
  using C = typename Src::C;
  const SS* a = p.at<SS>(s.in[0]);
  DS* o = p.at<DS>(s.out[0]);
  const int64_t n = s.n;
  constexpr int W = Dst::bits == 8 ? 16 : Dst::bits;  // the width cvt converts at
  // Bounds of the cvt destination as values in C (powers of two are exact).
  constexpr int64_t imax = Signed
                               ? (W == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (W - 1)) - 1)
                               : (W == 64 ? -1 : (int64_t{1} << W) - 1);  // -1: all ones for u64
  constexpr int64_t imin =
      Signed ? (W == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (W - 1))) : 0;
  const C hi = Signed ? std::ldexp(C(1), W - 1) : std::ldexp(C(1), W);  // first value past the top
  const C lo = Signed ? -std::ldexp(C(1), W - 1) : C(0);
  if constexpr (Dst::i1) {
    for (int64_t i = 0; i < n; ++i) {
      const C x = Src::load(a[i]);
      int64_t r;
      if (x != x)
        r = 0;
      else if (x >= hi)
        r = imax;
      else if (x <= lo)
        r = imin;
      else
        r = static_cast<int64_t>(x);
      o[i] = int_store<Dst>(r);
    }
  } else {
    constexpr uint64_t nan_bits = ew::cvt_nan_to_int(std::is_same_v<Src, ew::F64>, W);
    // Straight-line form so the common f32 -> i32 loop vectorises: clamp into the convertible range
    // (the largest C below `hi` converts exactly), convert, then patch the top and NaN lanes.
    using U = std::conditional_t<W == 16, uint16_t, DS>;  // the cvt register (16 bits for i8)
    using R = std::conditional_t<Signed, std::make_signed_t<U>, U>;
    const C hb = std::nextafter(hi, C(0));
    for (int64_t i = 0; i < n; ++i) {
      const C x = Src::load(a[i]);
      C xc = x < lo ? lo : x;
      xc = xc > hb ? hb : xc;
      xc = x != x ? C(0) : xc;
      R r = static_cast<R>(xc);
      r = x >= hi ? static_cast<R>(imax) : r;
      r = x != x ? static_cast<R>(nan_bits) : r;
      o[i] = static_cast<DS>(static_cast<U>(r));  // i8: the low byte of the 16-bit result
    }
  }
}

// float -> float, RTNE (or rtz), one rounding from the exact source value.
template <class Src, class Dst, bool Rtz>
void float_cast(Program& p, const exec::Step& s) {
  using SS = typename Src::S;
  using DS = typename Dst::S;
  const SS* a = p.at<SS>(s.in[0]);
  DS* o = p.at<DS>(s.out[0]);
  const int64_t n = s.n;
  for (int64_t i = 0; i < n; ++i) {
    using V = typename Src::C;
    const V v = Src::load(a[i]);
    if constexpr (!Rtz && std::is_same_v<typename Dst::C, V>) {
      o[i] = Dst::store(v);  // the compute types match: the store is the one rounding
    } else if constexpr (!Rtz && std::is_same_v<Dst, ew::F64>) {
      o[i] = double(v);
    } else if constexpr (!Rtz && std::is_same_v<Dst, ew::F32>) {
      o[i] = static_cast<float>(v);  // f64 -> f32, RTNE
    } else if constexpr (Rtz && std::is_same_v<Dst, ew::F16> && std::is_same_v<V, float>) {
      o[i] = ew::f32_to_f16_rtz(v);
    } else if constexpr (Rtz && std::is_same_v<Dst, ew::BF16> && std::is_same_v<V, float>) {
      o[i] = ew::f32_to_bf16_rtz(v);
    } else {
      o[i] = static_cast<DS>(
          ir::float_to_bits(Dst::elem, double(v), Rtz ? ir::Rounding::rtz : ir::Rounding::rtne));
    }
  }
}

template <size_t B>
struct Bytes {
  uint8_t b[B];
};

// Same-width reinterpretation (arith.bitcast, tt.bitcast, int<->ptr of equal width).
void copy_kernel(Program& p, const exec::Step& s) {
  std::memcpy(p.at<std::byte>(s.out[0]), p.at<std::byte>(s.in[0]), s.data<SelectBytes>().bytes);
}

// tt.int_to_ptr: integers are host addresses; one inside a registered buffer becomes a pointer into
// it (exec::Memory::from_host), any other stays a null or wild pointer. An i32 is zero-extended.
template <class From>
void int_to_ptr_kernel(Program& p, const exec::Step& s) {
  const From* a = p.at<From>(s.in[0]);
  auto* o = p.at<uint64_t>(s.out[0]);
  for (int64_t i = 0; i < s.n; ++i) o[i] = p.memory->from_host(static_cast<uint64_t>(a[i]));
}

// tt.ptr_to_int: the pointer's host address (exec::Memory::to_host), truncated to an i32 if asked.
template <class To>
void ptr_to_int_kernel(Program& p, const exec::Step& s) {
  const auto* a = p.at<uint64_t>(s.in[0]);
  To* o = p.at<To>(s.out[0]);
  for (int64_t i = 0; i < s.n; ++i) o[i] = static_cast<To>(p.memory->to_host(a[i]));
}

// ------------------------------------------------------------------------------------------------
// Constants and poison

struct ConstBytes {
  std::vector<std::byte> bytes;
};
void const_kernel(Program& p, const exec::Step& s) {
  const auto& c = s.data<ConstBytes>();
  std::memcpy(p.at<std::byte>(s.out[0]), c.bytes.data(), c.bytes.size());
}

void zero_kernel(Program& p, const exec::Step& s) {
  std::memset(p.at<std::byte>(s.out[0]), 0, static_cast<size_t>(s.data<SelectBytes>().bytes));
}

// One element of `t`'s element type from a scalar attribute, in storage encoding.
uint64_t scalar_bits(const Op& op, Planner& p, const ir::Attr& a, Elem e) {
  using K = ir::Attr::Kind;
  if (ir::is_int(e)) {
    int64_t v;
    if (a.kind == K::Int)
      v = a.i;
    else if (a.kind == K::Bool)
      v = a.b ? 1 : 0;
    else
      p.unsupported(op, "integer constant needs an integer value");
    if (e == Elem::i1) return uint64_t(v) & 1u;
    return uint64_t(v);
  }
  if (ir::is_float(e)) {
    double f;
    if (a.kind == K::Float)
      f = a.f;
    else if (a.kind == K::Int)
      f = static_cast<double>(a.i);
    else
      p.unsupported(op, "float constant needs a float value");
    // A NaN keeps its exact bits when the reader had them (`0x7FC00000 : f32`); any other value is
    // exact in the double and encodes exactly.
    if (std::isnan(f) && a.kind == K::Float && a.fbits != 0) return a.fbits;
    return ir::float_to_bits(e, f);
  }
  p.unsupported(op, fmt::format("constant of element type {}", ir::elem_name(e)));
}

// The splat value of a dense float `arith.constant` defining `v` (Triton's getSplatInitializer in
// ClampFOpConversion); nullopt for anything else (block arguments, scalars, non-splat constants).
std::optional<double> splat_float_constant(const ir::Value* v) {
  if (!v || !v->def || v->def->code() != ir::Opcode::arith_constant) return std::nullopt;
  const ir::Attr* a = v->def->attr("value");
  if (!a || a->kind != ir::Attr::Kind::Dense || !a->dense.splat || !v->type) return std::nullopt;
  const Elem e = v->type->elem;
  const size_t eb = static_cast<size_t>(ir::elem_bytes(e));
  if (!ir::is_float(e) || a->dense.bytes.size() != eb || eb > 8) return std::nullopt;
  uint64_t bits = 0;
  std::memcpy(&bits, a->dense.bytes.data(), eb);  // little endian
  return ir::float_from_bits(e, bits);
}

// Triton's isClipPattern (NVIDIA ElementwiseOpToLLVM.cpp, sm_90+): tt.clampf(x, lo, hi) with
// lo = arith.subf(splat 0.0, hi), or lo and hi splat constants with lo == -hi.
bool clip_pattern(const Op& op) {
  const ir::Value* lo = op.operands[1];
  const ir::Value* hi = op.operands[2];
  if (lo->def && lo->def->code() == ir::Opcode::arith_subf) {
    const Op& sub = *lo->def;
    if (sub.operands.size() != 2 || sub.operands[1] != hi) return false;
    const auto zero = splat_float_constant(sub.operands[0]);
    return zero && *zero == 0.0;
  }
  const auto l = splat_float_constant(lo), h = splat_float_constant(hi);
  return l && h && *l == -*h;
}

/// `numel` copies of the `eb` bytes at `one` (eb: 1, 2, 4 or 8) at `out`, as whole words: a constant's
/// tile is made at its plan's lowering, which every kernel's first launch waits for.
void fill_elements(std::byte* out, const void* one, int eb, int64_t numel) {
  auto fill = [&](auto word) {
    std::memcpy(&word, one, sizeof word);
    std::fill_n(reinterpret_cast<decltype(word)*>(out), numel, word);
  };
  switch (eb) {
    case 1: return fill(uint8_t{});
    case 2: return fill(uint16_t{});
    case 4: return fill(uint32_t{});
    case 8: return fill(uint64_t{});
    default:
      for (int64_t i = 0; i < numel; ++i) std::memcpy(out + i * eb, one, static_cast<size_t>(eb));
  }
}

}  // namespace

// ==================================================================================================
// Lowering hooks

void lower_constant(const Op& op, Planner& p, Step& s) {
  if (s.out_types.size() != 1) p.unsupported(op, "arith.constant has one result");
  const ir::Type& t = *s.out_types[0];
  const ir::Attr* a = op.attr("value");
  if (!a) p.unsupported(op, "arith.constant without a value");
  const int eb = ir::elem_bytes(t.elem);
  const int64_t numel = t.numel();
  auto data = std::make_shared<ConstBytes>();
  data->bytes.resize(static_cast<size_t>(numel * eb));
  if (a->kind == ir::Attr::Kind::Dense) {
    const ir::DenseAttr& d = a->dense;
    const size_t need = static_cast<size_t>(d.splat ? eb : numel * eb);
    if (d.bytes.size() != need)
      p.unsupported(
          op, fmt::format("dense constant holds {} bytes, {} expects {}", d.bytes.size(), t.str(), need));
    if (d.splat) {
      fill_elements(data->bytes.data(), d.bytes.data(), eb, numel);
    } else {
      std::memcpy(data->bytes.data(), d.bytes.data(), need);
    }
  } else {
    const uint64_t bits = scalar_bits(op, p, *a, t.elem);
    fill_elements(data->bytes.data(), &bits, eb, numel);  // little endian: the low eb bytes
  }
  if (t.is_tensor && numel * eb >= Planner::kSharedConstantBytes) return p.share_constant(s, data->bytes);
  s.aux = data;
  s.fn = const_kernel;
}

void lower_int_binary(const Op& op, Planner& p, Step& s) {
  expect_operands(op, p, s, 2);
  const Elem e = s.out_types[0]->elem;
  using Pick = KernelFn (*)(Elem);
  static constexpr std::pair<ir::Opcode, Pick> kKernels[] = {
      {ir::Opcode::arith_addi, int_binary_kernel<AddI>},
      {ir::Opcode::arith_subi, int_binary_kernel<SubI>},
      {ir::Opcode::arith_muli, int_binary_kernel<MulI>},
      {ir::Opcode::arith_divsi, int_binary_kernel<DivSI>},
      {ir::Opcode::arith_divui, int_binary_kernel<DivUI>},
      {ir::Opcode::arith_remsi, int_binary_kernel<RemSI>},
      {ir::Opcode::arith_remui, int_binary_kernel<RemUI>},
      {ir::Opcode::arith_andi, int_binary_kernel<AndI>},
      {ir::Opcode::arith_ori, int_binary_kernel<OrI>},
      {ir::Opcode::arith_xori, int_binary_kernel<XorI>},
      {ir::Opcode::arith_shli, int_binary_kernel<ShlI>},
      {ir::Opcode::arith_shrsi, int_binary_kernel<ShrSI>},
      {ir::Opcode::arith_shrui, int_binary_kernel<ShrUI>},
      {ir::Opcode::arith_minsi, int_binary_kernel<MinSI>},
      {ir::Opcode::arith_maxsi, int_binary_kernel<MaxSI>},
      {ir::Opcode::arith_minui, int_binary_kernel<MinUI>},
      {ir::Opcode::arith_maxui, int_binary_kernel<MaxUI>},
      {ir::Opcode::tt_mulhiui, int_binary_kernel<MulHiUI>},
  };
  const Pick pick_kernel = pick(op.code(), kKernels);
  KernelFn fn = pick_kernel ? pick_kernel(e) : nullptr;
  if (!fn) p.unsupported(op, fmt::format("{} on {}", op.name, s.out_types[0]->str()));
  s.fn = fn;
}

void lower_float_binary(const Op& op, Planner& p, Step& s) {
  expect_operands(op, p, s, 2);
  const Elem e = s.out_types[0]->elem;
  // tt.approx_divf (3.9, tl.fdiv(x, y, approx=True)), f32 only. The GPU's div.approx.f32 is within 2 ulp
  // of the quotient for |y| in [2^-126, 2^126] (TritonOps.td); the correctly rounded quotient is inside
  // that bound. Outside that range of y the GPU may differ more (not emulated).
  if (op.code() == ir::Opcode::tt_approx_divf && e != Elem::f32)
    p.unsupported(op, "tt.approx_divf is defined on f32 only");
  using Pick = KernelFn (*)(Elem);
  static constexpr std::pair<ir::Opcode, Pick> kKernels[] = {
      {ir::Opcode::arith_addf, float_binary_kernel<AddF>},
      {ir::Opcode::arith_subf, float_binary_kernel<SubF>},
      {ir::Opcode::arith_mulf, float_binary_kernel<MulF>},
      {ir::Opcode::arith_divf, float_binary_kernel<DivF>},
      {ir::Opcode::tt_precise_divf, float_binary_kernel<DivF>},
      {ir::Opcode::tt_approx_divf, float_binary_kernel<DivF>},
      {ir::Opcode::arith_remf, float_binary_kernel<RemF>},
      {ir::Opcode::arith_minnumf, float_binary_kernel<MinNumF>},
      {ir::Opcode::arith_maxnumf, float_binary_kernel<MaxNumF>},
      {ir::Opcode::arith_minimumf, float_binary_kernel<MinimumF>},
      {ir::Opcode::arith_maximumf, float_binary_kernel<MaximumF>},
  };
  const Pick pick_kernel = pick(op.code(), kKernels);
  KernelFn fn = pick_kernel ? pick_kernel(e) : nullptr;
  if (!fn) p.unsupported(op, fmt::format("{} on {}", op.name, s.out_types[0]->str()));
  s.fn = fn;
}

void lower_float_unary(const Op& op, Planner& p, Step& s) {
  expect_operands(op, p, s, 1);
  const Elem e = s.out_types[0]->elem;
  using Pick = KernelFn (*)(Elem);
  static constexpr std::pair<ir::Opcode, Pick> kKernels[] = {
      {ir::Opcode::arith_negf, float_unary_kernel<NegF>},
      {ir::Opcode::tt_precise_sqrt, float_unary_kernel<Sqrt>},
      {ir::Opcode::math_exp, float_unary_kernel<Exp>},
      {ir::Opcode::math_exp2, float_unary_kernel<Exp2>},
      {ir::Opcode::math_log, float_unary_kernel<Log>},
      {ir::Opcode::math_log2, float_unary_kernel<Log2>},
      {ir::Opcode::math_sqrt, float_unary_kernel<Sqrt>},
      {ir::Opcode::math_rsqrt, float_unary_kernel<Rsqrt>},
      {ir::Opcode::math_absf, float_unary_kernel<AbsF>},
      {ir::Opcode::math_floor, float_unary_kernel<Floor>},
      {ir::Opcode::math_ceil, float_unary_kernel<Ceil>},
      {ir::Opcode::math_erf, float_unary_kernel<Erf>},
      {ir::Opcode::math_sin, float_unary_kernel<Sin>},
      {ir::Opcode::math_cos, float_unary_kernel<Cos>},
      {ir::Opcode::math_tan, float_unary_kernel<Tan>},
      {ir::Opcode::math_tanh, float_unary_kernel<Tanh>},
      {ir::Opcode::math_expm1, float_unary_kernel<Expm1>},
      {ir::Opcode::math_log1p, float_unary_kernel<Log1p>},
      {ir::Opcode::math_log10, float_unary_kernel<Log10>},
      {ir::Opcode::math_cbrt, float_unary_kernel<Cbrt>},
      {ir::Opcode::math_trunc, float_unary_kernel<Trunc>},
      {ir::Opcode::math_round, float_unary_kernel<Round>},
      {ir::Opcode::math_roundeven, float_unary_kernel<RoundEven>},
      {ir::Opcode::math_sinh, float_unary_kernel<Sinh>},
      {ir::Opcode::math_cosh, float_unary_kernel<Cosh>},
      {ir::Opcode::math_asin, float_unary_kernel<Asin>},
      {ir::Opcode::math_acos, float_unary_kernel<Acos>},
      {ir::Opcode::math_atan, float_unary_kernel<Atan>},
      {ir::Opcode::math_asinh, float_unary_kernel<Asinh>},
      {ir::Opcode::math_acosh, float_unary_kernel<Acosh>},
      {ir::Opcode::math_atanh, float_unary_kernel<Atanh>},
  };
  const Pick pick_kernel = pick(op.code(), kKernels);
  KernelFn fn = pick_kernel ? pick_kernel(e) : nullptr;
  if (!fn) p.unsupported(op, fmt::format("{} on {}", op.name, s.out_types[0]->str()));
  s.fn = fn;
}

void lower_int_unary(const Op& op, Planner& p, Step& s) {
  expect_operands(op, p, s, 1);
  KernelFn fn = nullptr;
  if (op.code() == ir::Opcode::math_absi)
    ew::with_int(s.out_types[0]->elem, [&]<class T>() { fn = absi_kernel<T>; });
  if (!fn) p.unsupported(op, fmt::format("{} on {}", op.name, s.out_types[0]->str()));
  s.fn = fn;
}

void lower_fma(const Op& op, Planner& p, Step& s) {
  expect_operands(op, p, s, 3);
  KernelFn fn = nullptr;
  ew::with_float(s.out_types[0]->elem, [&]<class T>() { fn = fma_kernel<T>; });
  if (!fn) p.unsupported(op, fmt::format("math.fma on {}", s.out_types[0]->str()));
  s.fn = fn;
}

namespace {
/// A compare's predicate (a keyword, or its integer in the predicate enum whose order `table` lists) and
/// the kernel `table` gives it (null for an unknown predicate).
template <class T, size_t N>
std::pair<std::string, T> predicate(const Op& op, const std::pair<std::string_view, T> (&table)[N]) {
  const ir::Attr* a = op.attr("predicate");
  std::string name = "?";
  if (a && (a->kind == ir::Attr::Kind::Keyword || a->kind == ir::Attr::Kind::String)) name = a->s;
  if (a && a->kind == ir::Attr::Kind::Int && a->i >= 0 && a->i < static_cast<int64_t>(N))
    name = std::string(table[a->i].first);
  for (const auto& [k, v] : table)
    if (k == name) return {name, v};
  return {name, T{}};
}
}  // namespace

void lower_compare(const Op& op, Planner& p, Step& s) {
  expect_operands(op, p, s, 2);
  const Elem e = s.in_types[0]->elem;
  using Pick = KernelFn (*)(Elem);
  KernelFn fn = nullptr;
  if (op.code() == ir::Opcode::arith_cmpi) {
    // CmpIPredicate, in its integer order (reference §2.1).
    static constexpr std::pair<std::string_view, Pick> kPredicates[] = {
        {"eq", int_cmp_kernel<Eq>},   {"ne", int_cmp_kernel<Ne>},   {"slt", int_cmp_kernel<Slt>},
        {"sle", int_cmp_kernel<Sle>}, {"sgt", int_cmp_kernel<Sgt>}, {"sge", int_cmp_kernel<Sge>},
        {"ult", int_cmp_kernel<Ult>}, {"ule", int_cmp_kernel<Ule>}, {"ugt", int_cmp_kernel<Ugt>},
        {"uge", int_cmp_kernel<Uge>}};
    const auto [pred, pick_kernel] = predicate(op, kPredicates);
    if (!pick_kernel) p.unsupported(op, fmt::format("unknown cmpi predicate '{}'", pred));
    // Pointers compare as unsigned 64-bit addresses (eq/ne in practice).
    fn = pick_kernel(e == Elem::ptr ? Elem::i64 : e);
  } else {
    // CmpFPredicate, in its integer order (reference §2.1).
    static constexpr std::pair<std::string_view, Pick> kPredicates[] = {
        {"false", float_cmp_kernel<FFalse>}, {"oeq", float_cmp_kernel<FOeq>}, {"ogt", float_cmp_kernel<FOgt>},
        {"oge", float_cmp_kernel<FOge>},     {"olt", float_cmp_kernel<FOlt>}, {"ole", float_cmp_kernel<FOle>},
        {"one", float_cmp_kernel<FOne>},     {"ord", float_cmp_kernel<FOrd>}, {"ueq", float_cmp_kernel<FUeq>},
        {"ugt", float_cmp_kernel<FUgt>},     {"uge", float_cmp_kernel<FUge>}, {"ult", float_cmp_kernel<FUlt>},
        {"ule", float_cmp_kernel<FUle>},     {"une", float_cmp_kernel<FUne>}, {"uno", float_cmp_kernel<FUno>},
        {"true", float_cmp_kernel<FTrue>}};
    const auto [pred, pick_kernel] = predicate(op, kPredicates);
    if (!pick_kernel) p.unsupported(op, fmt::format("unknown cmpf predicate '{}'", pred));
    fn = pick_kernel(e);
  }
  if (!fn) p.unsupported(op, fmt::format("{} on {}", op.name, s.in_types[0]->str()));
  s.fn = fn;
}

void lower_select(const Op& op, Planner& p, Step& s) {
  expect_operands(op, p, s, 3);
  const ir::Type& t = *s.out_types[0];
  const bool scalar_cond = !s.in_types[0]->is_tensor || s.in_types[0]->numel() != s.n || s.n == 1;
  if (t.is_block_ptr() || t.elem == Elem::tensordesc) {
    if (!scalar_cond) p.unsupported(op, "select of block pointers needs a scalar condition");
    s.aux = std::make_shared<SelectBytes>(SelectBytes{exec::storage_bytes(t)});
    s.fn = select_bytes_kernel;
    return;
  }
  KernelFn fn = nullptr;
  switch (ir::elem_bytes(t.elem)) {
    case 1: fn = scalar_cond ? select_kernel<uint8_t, true> : select_kernel<uint8_t, false>; break;
    case 2: fn = scalar_cond ? select_kernel<uint16_t, true> : select_kernel<uint16_t, false>; break;
    case 4: fn = scalar_cond ? select_kernel<uint32_t, true> : select_kernel<uint32_t, false>; break;
    case 8: fn = scalar_cond ? select_kernel<uint64_t, true> : select_kernel<uint64_t, false>; break;
    default: p.unsupported(op, fmt::format("select on {}", t.str()));
  }
  s.fn = fn;
}

void lower_cast(const Op& op, Planner& p, Step& s) {
  expect_operands(op, p, s, 1);
  const ir::Type& from = *s.in_types[0];
  const ir::Type& to = *s.out_types[0];
  const Elem a = from.elem, b = to.elem;
  KernelFn fn = nullptr;
  auto bad = [&]() { p.unsupported(op, fmt::format("{} from {} to {}", op.name, from.str(), to.str())); };
  using ir::Opcode;
  const Opcode c = op.code();
  if (c == Opcode::arith_bitcast) {
    if (ir::elem_bits(a) != ir::elem_bits(b)) bad();
    s.aux = std::make_shared<SelectBytes>(SelectBytes{exec::storage_bytes(to)});
    s.fn = copy_kernel;
    return;
  }
  if (c == Opcode::arith_extsi || c == Opcode::arith_extui || c == Opcode::arith_trunci ||
      c == Opcode::arith_index_cast) {
    const bool sgn = c != Opcode::arith_extui;
    ew::with_int(a, [&]<class S>() {
      ew::with_int(b, [&]<class D>() { fn = sgn ? int_cast<S, D, true> : int_cast<S, D, false>; });
    });
  } else if (c == Opcode::arith_sitofp || c == Opcode::arith_uitofp) {
    const bool sgn = c == Opcode::arith_sitofp;
    ew::with_int(a, [&]<class S>() {
      ew::with_float(b, [&]<class D>() { fn = sgn ? int_to_float<S, true, D> : int_to_float<S, false, D>; });
    });
  } else if (c == Opcode::arith_fptosi || c == Opcode::arith_fptoui) {
    const bool sgn = c == Opcode::arith_fptosi;
    ew::with_float(a, [&]<class S>() {
      ew::with_int(b, [&]<class D>() { fn = sgn ? float_to_int<S, D, true> : float_to_int<S, D, false>; });
    });
  } else if (c == Opcode::arith_extf || c == Opcode::arith_truncf) {
    ew::with_float(a,
                   [&]<class S>() { ew::with_float(b, [&]<class D>() { fn = float_cast<S, D, false>; }); });
  }
  if (!fn) bad();
  s.fn = fn;
}

void lower_fp_to_fp(const Op& op, Planner& p, Step& s) {
  expect_operands(op, p, s, 1);
  const Elem a = s.in_types[0]->elem, b = s.out_types[0]->elem;
  const std::string r = enum_attr(op, "rounding", {{0, "rtz"}, {1, "rtne"}});
  if (!r.empty() && r != "rtz" && r != "rtne")
    p.unsupported(op, fmt::format("unknown rounding mode '{}'", r));
  const bool rtz = r == "rtz";
  KernelFn fn = nullptr;
  ew::with_float(a, [&]<class S>() {
    ew::with_float(b, [&]<class D>() { fn = rtz ? float_cast<S, D, true> : float_cast<S, D, false>; });
  });
  if (!fn)
    p.unsupported(op, fmt::format("tt.fp_to_fp from {} to {}", s.in_types[0]->str(), s.out_types[0]->str()));
  s.fn = fn;
}

void lower_bitcast(const Op& op, Planner& p, Step& s) {
  expect_operands(op, p, s, 1);
  const ir::Type& from = *s.in_types[0];
  const ir::Type& to = *s.out_types[0];
  if (ir::elem_bits(from.elem) != ir::elem_bits(to.elem) ||
      exec::storage_bytes(from) != exec::storage_bytes(to))
    p.unsupported(op, fmt::format("tt.bitcast between different widths ({} -> {})", from.str(), to.str()));
  s.aux = std::make_shared<SelectBytes>(SelectBytes{exec::storage_bytes(to)});
  s.fn = copy_kernel;
}

void lower_clampf(const Op& op, Planner& p, Step& s) {
  expect_operands(op, p, s, 3);
  const std::string nan = enum_attr(op, "propagateNan", {{0, "none"}, {0xFFFF, "all"}});
  if (nan != "none" && nan != "all" && !nan.empty())
    p.unsupported(op, fmt::format("unknown propagateNan '{}'", nan));
  const bool all = nan == "all";
  const Elem e = s.out_types[0]->elem;
  // The xorsign form exists for f32 and f16 only (Triton names the intrinsic by those two types).
  const bool xs = (e == Elem::f32 || e == Elem::f16) && clip_pattern(op);
  KernelFn fn = nullptr;
  ew::with_float(e, [&]<class T>() {
    if (xs)
      fn = all ? clampf_kernel<T, true, true> : clampf_kernel<T, false, true>;
    else
      fn = all ? clampf_kernel<T, true, false> : clampf_kernel<T, false, false>;
  });
  if (!fn) p.unsupported(op, fmt::format("tt.clampf on {}", s.out_types[0]->str()));
  s.fn = fn;
}

void lower_ptr_int(const Op& op, Planner& p, Step& s) {
  expect_operands(op, p, s, 1);
  const int from = ir::elem_bytes(s.in_types[0]->elem), to = ir::elem_bytes(s.out_types[0]->elem);
  const bool to_ptr = s.out_types[0]->elem == Elem::ptr;
  KernelFn fn = nullptr;
  if (to_ptr && from == 8)
    fn = int_to_ptr_kernel<uint64_t>;
  else if (to_ptr && from == 4)
    fn = int_to_ptr_kernel<uint32_t>;  // an i32 address: zero-extended
  else if (!to_ptr && to == 8)
    fn = ptr_to_int_kernel<uint64_t>;
  else if (!to_ptr && to == 4)
    fn = ptr_to_int_kernel<uint32_t>;
  if (!fn)
    p.unsupported(op, fmt::format("{} from {} to {}", op.name, s.in_types[0]->str(), s.out_types[0]->str()));
  s.fn = fn;
}

void lower_poison(const Op& op, Planner& p, Step& s) {
  if (s.out_types.size() != 1) p.unsupported(op, "ub.poison has one result");
  // Poison may be anything; zeros keep runs deterministic.
  s.aux = std::make_shared<SelectBytes>(SelectBytes{exec::storage_bytes(*s.out_types[0])});
  s.fn = zero_kernel;
}

}  // namespace tilescope::ops
