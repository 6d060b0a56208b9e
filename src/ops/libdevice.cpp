// tt.extern_elementwise: the CUDA libdevice functions (`__nv_*`) that Triton's
// `triton.language.extra.cuda.libdevice` exposes (reference §1.1), as C++ functions.
//
// The table covers every symbol of triton 3.6's libdevice.py (313 names) with the signature it
// declares there; the planner checks the op's operand and result types against that signature.
// Accuracy: libm (glibc) where libdevice is itself a correctly rounded or few-ulp function; the
// `fast_*` variants use the accurate function (the GPU's approximations differ by a few ulp).
// Directed-rounding variants (`_rd`, `_ru`, `_rz`) are computed exactly: the round-to-nearest result
// is stepped by one ulp according to the sign of the exact error (TwoSum / fma residuals), which needs
// no change of the FPU rounding mode. `__nv_fma_{rd,ru,rz}` (f64) determine that sign in long double:
// exact except for pathological cancellations.
#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "elementwise.h"
#include "ops.h"

namespace tilescope::ops {

using exec::KernelFn;
using exec::Program;
using ir::Elem;

namespace {

// ------------------------------------------------------------------------------------------------
// Directed rounding

enum class Dir { rn, rz, rd, ru };

template <class F>
int sgn(F x) {
  return (x > 0) - (x < 0);  // NaN -> 0
}

/// Step the round-to-nearest result `r` one ulp as `d` requires, given cmp = sign(exact - r).
template <class F>
F adjust(F r, int cmp, Dir d) {
  if (cmp == 0 || d == Dir::rn || std::isnan(r)) return r;
  constexpr F inf = std::numeric_limits<F>::infinity();
  switch (d) {
    case Dir::rd: return cmp < 0 ? std::nextafter(r, -inf) : r;
    case Dir::ru: return cmp > 0 ? std::nextafter(r, inf) : r;
    case Dir::rz: return ((r > 0 && cmp < 0) || (r < 0 && cmp > 0)) ? std::nextafter(r, F(0)) : r;
    case Dir::rn: break;
  }
  return r;
}

// Overflow of finite operands to +-inf: the exact value is finite, so it lies below |r|.
template <class F>
bool overflowed(F r, std::initializer_list<F> in) {
  if (!std::isinf(r)) return false;
  for (F x : in)
    if (!std::isfinite(x)) return false;
  return true;
}

template <class F, Dir D>
F add_d(F a, F b) {
  const F r = a + b;
  if (overflowed(r, {a, b})) return adjust(r, -sgn(r), D);
  if (!std::isfinite(r)) return r;
  const F bb = r - a;
  const F e = (a - (r - bb)) + (b - bb);  // TwoSum: exact = r + e
  return adjust(r, sgn(e), D);
}
template <class F, Dir D>
F sub_d(F a, F b) {
  return add_d<F, D>(a, -b);
}

template <class F, Dir D>
F mul_d(F a, F b) {
  const F r = a * b;
  if (overflowed(r, {a, b})) return adjust(r, -sgn(r), D);
  if (!std::isfinite(r)) return r;
  if constexpr (sizeof(F) == 4)
    return adjust(r, sgn(double(a) * double(b) - double(r)), D);  // exact in double
  else
    return adjust(r, sgn(std::fma(a, b, -r)), D);
}

template <class F, Dir D>
F div_d(F a, F b) {
  const F r = a / b;
  if (overflowed(r, {a, b}) && b != 0) return adjust(r, -sgn(r), D);
  if (!std::isfinite(r)) return r;
  F rem;
  if constexpr (sizeof(F) == 4)
    rem = static_cast<F>(double(a) - double(r) * double(b));
  else
    rem = std::fma(-r, b, a);
  return adjust(r, sgn(rem) * sgn(b), D);
}

template <class F, Dir D>
F sqrt_d(F x) {
  const F r = std::sqrt(x);
  if (!std::isfinite(r)) return r;
  F rem;
  if constexpr (sizeof(F) == 4)
    rem = static_cast<F>(double(x) - double(r) * double(r));
  else
    rem = std::fma(-r, r, x);
  return adjust(r, sgn(rem), D);
}

template <class F, Dir D>
F rcp_d(F x) {
  return div_d<F, D>(F(1), x);
}

template <Dir D>
float fmaf_d(float a, float b, float c) {
  const float r = std::fma(a, b, c);
  if (overflowed(r, {a, b, c})) return adjust(r, -sgn(r), D);
  if (!std::isfinite(r)) return r;
  const double p = double(a) * double(b), dc = c;                       // p exact
  const double s = p + dc, bb = s - p, e = (p - (s - bb)) + (dc - bb);  // exact = s + e
  return adjust(r, sgn((s - double(r)) + e), D);
}

template <Dir D>
double fma_d(double a, double b, double c) {
  const double r = std::fma(a, b, c);
  if (overflowed(r, {a, b, c})) return adjust(r, -sgn(r), D);
  if (!std::isfinite(r)) return r;
  const double p = a * b, ep = std::fma(a, b, -p);
  const double s = p + c, bb = s - p, e2 = (p - (s - bb)) + (c - bb);  // exact = s + e2 + ep
  const long double diff = (static_cast<long double>(s) - r) + e2 + ep;
  return adjust(r, sgn(diff), D);
}

// Conversions with a rounding mode into float/double: the RN result compared exactly (long double
// holds every int64 and double exactly).
template <class To, Dir D, class From>
To conv_d(From x) {
  const To r = static_cast<To>(x);
  if constexpr (std::is_floating_point_v<From>) {
    if (std::isnan(x)) return r;
    if (std::isinf(r) && std::isfinite(x)) return adjust(r, -sgn(r), D);
  }
  const long double ex = static_cast<long double>(x), rr = static_cast<long double>(r);
  return adjust(r, (ex > rr) - (ex < rr), D);
}

// float/double -> integer with a rounding mode: round, then saturate, as cvt.r*i does (libdevice's
// __nv_{float,double}2{int,uint,ll,ull}_r* wrap the nvvm f2i/d2i/f2ll/... intrinsics, i.e. cvt). A NaN
// gives 0, or 1 << (N-1) from a double or into 64 bits (PTX ISA, cvt "Integer Notes"; ew::cvt_nan_to_int).
template <class I, Dir D, class F>
I to_int(F x) {
  if (std::isnan(x))
    return static_cast<I>(ew::cvt_nan_to_int(std::is_same_v<F, double>, 8 * static_cast<int>(sizeof(I))));
  F r;
  switch (D) {
    case Dir::rn: r = std::nearbyint(x); break;
    case Dir::rz: r = std::trunc(x); break;
    case Dir::rd: r = std::floor(x); break;
    case Dir::ru: r = std::ceil(x); break;
  }
  constexpr I lo = std::numeric_limits<I>::min(), hi = std::numeric_limits<I>::max();
  if (r <= static_cast<F>(lo)) return lo;
  if (r >= std::ldexp(F(1), std::numeric_limits<I>::digits)) return hi;
  return static_cast<I>(r);
}

// ------------------------------------------------------------------------------------------------
// Special functions libm lacks

constexpr long double kSqrtPiL = 1.772453850905516027298167483341145182798L;

long double erfcx_l(long double x) {
  if (x < 100) return std::exp(x * x) * std::erfc(x);
  const long double t = 1 / (x * x);
  return (1 - t / 2 + 3 * t * t / 4) / (x * kSqrtPiL);
}

double erfcinv_d(double c) {
  if (std::isnan(c) || c < 0 || c > 2) return std::numeric_limits<double>::quiet_NaN();
  if (c == 0) return HUGE_VAL;
  if (c == 2) return -HUGE_VAL;
  if (c > 1) return -erfcinv_d(2 - c);  // exact: Sterbenz
  if (c == 1) return 0;
  // Winitzki's approximation, then Newton on log(erfc(x)) = log(c) in long double.
  const long double a = 0.147L, pi = 3.141592653589793238462643383279502884L;
  const long double ln =
      std::log(static_cast<long double>(c) * (2 - static_cast<long double>(c)));  // log(1-y^2)
  const long double t = 2 / (pi * a) + ln / 2;
  long double x = std::sqrt(std::sqrt(t * t - ln / a) - t);
  const long double lc = std::log(static_cast<long double>(c));
  for (int i = 0; i < 6; ++i) x += (std::log(std::erfc(x)) - lc) * erfcx_l(x) * kSqrtPiL / 2;
  return static_cast<double>(x);
}

double erfinv_d(double y) {
  if (std::isnan(y) || y < -1 || y > 1) return std::numeric_limits<double>::quiet_NaN();
  if (std::fabs(y) > 0.5) return std::copysign(erfcinv_d(1 - std::fabs(y)), y);
  if (y == 0) return y;
  long double x = y * kSqrtPiL / 2;  // erf(x) ~ 2x/sqrt(pi) near 0
  for (int i = 0; i < 8; ++i) x -= (std::erf(x) - y) * kSqrtPiL / 2 * std::exp(x * x);
  return static_cast<double>(x);
}

template <class F>
F sinpi_t(F x) {
  if (!std::isfinite(x)) return std::numeric_limits<F>::quiet_NaN();
  const double r = std::remainder(double(x), 2.0);  // exact, in [-1, 1]
  if (r == 0) return std::copysign(F(0), x);
  if (std::fabs(r) == 1) return std::copysign(F(0), F(r));
  return static_cast<F>(std::sin(static_cast<long double>(r) * 3.141592653589793238462643383279502884L));
}
template <class F>
F cospi_t(F x) {
  if (!std::isfinite(x)) return std::numeric_limits<F>::quiet_NaN();
  const double r = std::fabs(std::remainder(double(x), 2.0));
  if (r == 0.5) return F(0);
  return static_cast<F>(std::cos(static_cast<long double>(r) * 3.141592653589793238462643383279502884L));
}

template <class F>
F bessel_i(int order, F x) {
  if (std::isnan(x)) return x;
  const F v = std::cyl_bessel_i(F(order), std::fabs(x));
  return (order == 1 && x < 0) ? -v : v;
}

// ------------------------------------------------------------------------------------------------
// The kernel: one instantiation per signature; the function pointer is plan-time data.

struct ExternData {
  void (*fn)();
};

template <class R, class... A>
void extern_kernel(Program& p, const exec::Step& s) {
  auto f = reinterpret_cast<R (*)(A...)>(s.data<ExternData>().fn);
  R* o = p.at<R>(s.out[0]);
  const int64_t n = s.n;
  [&]<size_t... I>(std::index_sequence<I...>) {
    const std::tuple<const A*...> in{p.at<A>(s.in[I])...};
    for (int64_t i = 0; i < n; ++i) o[i] = f(std::get<I>(in)[i]...);
  }
  (std::index_sequence_for<A...>{});
}

template <class T>
constexpr Elem elem_of() {
  if constexpr (std::is_same_v<T, float>)
    return Elem::f32;
  else if constexpr (std::is_same_v<T, double>)
    return Elem::f64;
  else if constexpr (sizeof(T) == 4)
    return Elem::i32;
  else
    return Elem::i64;
}

struct Entry {
  KernelFn kernel;
  void (*fn)();
  std::vector<Elem> args;
  Elem ret;
};

template <class R, class... A>
Entry entry(R (*f)(A...)) {
  return Entry{extern_kernel<R, A...>, reinterpret_cast<void (*)()>(f), {elem_of<A>()...}, elem_of<R>()};
}

using i32 = int32_t;
using u32 = uint32_t;
using i64 = int64_t;
using u64 = uint64_t;

#define F1(name, expr)                                                 \
  {"__nv_" name "f", entry(+[](float x) -> float { return expr; })}, { \
    "__nv_" name, entry(+[](double x) -> double { return expr; })      \
  }
#define F2(name, expr)                                                          \
  {"__nv_" name "f", entry(+[](float x, float y) -> float { return expr; })}, { \
    "__nv_" name, entry(+[](double x, double y) -> double { return expr; })     \
  }

const std::unordered_map<std::string_view, Entry>& table() {
  static const std::unordered_map<std::string_view, Entry> t = {
      // Unary float functions, `__nv_<name>f` (f32) and `__nv_<name>` (f64).
      F1("acos", std::acos(x)),
      F1("acosh", std::acosh(x)),
      F1("asin", std::asin(x)),
      F1("asinh", std::asinh(x)),
      F1("atan", std::atan(x)),
      F1("atanh", std::atanh(x)),
      F1("cbrt", std::cbrt(x)),
      F1("ceil", std::ceil(x)),
      F1("cos", std::cos(x)),
      F1("cosh", std::cosh(x)),
      F1("cospi", cospi_t(x)),
      F1("erf", std::erf(x)),
      F1("erfc", std::erfc(x)),
      F1("erfcx", static_cast<decltype(x)>(erfcx_l(x))),
      F1("erfinv", static_cast<decltype(x)>(erfinv_d(x))),
      F1("erfcinv", static_cast<decltype(x)>(erfcinv_d(x))),
      F1("exp", std::exp(x)),
      F1("exp2", std::exp2(x)),
      F1("exp10", static_cast<decltype(x)>(std::pow(10.0L, static_cast<long double>(x)))),
      F1("expm1", std::expm1(x)),
      F1("fabs", std::fabs(x)),
      F1("floor", std::floor(x)),
      F1("j0", static_cast<decltype(x)>(::j0(x))),
      F1("j1", static_cast<decltype(x)>(::j1(x))),
      F1("y0", static_cast<decltype(x)>(::y0(x))),
      F1("y1", static_cast<decltype(x)>(::y1(x))),
      F1("lgamma", ([](auto v) {
           int sg;
           return static_cast<decltype(v)>(::lgamma_r(v, &sg));
         })(x)),
      F1("tgamma", std::tgamma(x)),
      F1("log", std::log(x)),
      F1("log10", std::log10(x)),
      F1("log1p", std::log1p(x)),
      F1("log2", std::log2(x)),
      F1("logb", std::logb(x)),
      F1("nearbyint", std::nearbyint(x)),
      F1("rint", std::nearbyint(x)),
      F1("round", std::round(x)),
      F1("trunc", std::trunc(x)),
      F1("sin", std::sin(x)),
      F1("sinh", std::sinh(x)),
      F1("sinpi", sinpi_t(x)),
      F1("tan", std::tan(x)),
      F1("tanh", std::tanh(x)),
      F1("sqrt", std::sqrt(x)),
      F1("rsqrt", decltype(x)(1) / std::sqrt(x)),
      F1("rcbrt", decltype(x)(1) / std::cbrt(x)),
      F1("normcdf", decltype(x)(0.5) * std::erfc(-x / std::sqrt(decltype(x)(2)))),
      F1("normcdfinv", static_cast<decltype(x)>(-1.4142135623730950488 * erfcinv_d(2.0 * double(x)))),
      F1("cyl_bessel_i0", bessel_i(0, x)),
      F1("cyl_bessel_i1", bessel_i(1, x)),
      {"__nv_fast_cosf", entry(+[](float x) -> float { return std::cos(x); })},
      {"__nv_fast_sinf", entry(+[](float x) -> float { return std::sin(x); })},
      {"__nv_fast_tanf", entry(+[](float x) -> float { return std::tan(x); })},
      {"__nv_fast_expf", entry(+[](float x) -> float { return std::exp(x); })},
      {"__nv_fast_exp10f", entry(+[](float x) -> float { return float(std::pow(10.0, double(x))); })},
      {"__nv_fast_logf", entry(+[](float x) -> float { return std::log(x); })},
      {"__nv_fast_log2f", entry(+[](float x) -> float { return std::log2(x); })},
      {"__nv_fast_log10f", entry(+[](float x) -> float { return std::log10(x); })},
      {"__nv_saturatef", entry(+[](float x) -> float {
         return x != x ? 0.0f : x < 0 ? 0.0f : x > 1 ? 1.0f : x;
       })},
      {"__nv_frsqrt_rn", entry(+[](float x) -> float { return 1.0f / std::sqrt(x); })},
      {"__nv_rcp64h", entry(+[](double x) -> double { return 1.0 / x; })},
      // Binary float functions.
      F2("atan2", std::atan2(x, y)),
      F2("copysign", std::copysign(x, y)),
      F2("fdim", std::fdim(x, y)),
      F2("fmod", std::fmod(x, y)),
      F2("hypot", std::hypot(x, y)),
      F2("nextafter", std::nextafter(x, y)),
      F2("pow", std::pow(x, y)),
      F2("remainder", std::remainder(x, y)),
      F2("rhypot", decltype(x)(1) / std::hypot(x, y)),
      {"__nv_fmaxf", entry(+[](float x, float y) -> float { return std::fmax(x, y); })},
      {"__nv_fminf", entry(+[](float x, float y) -> float { return std::fmin(x, y); })},
      {"__nv_fmax", entry(+[](double x, double y) -> double { return std::fmax(x, y); })},
      {"__nv_fmin", entry(+[](double x, double y) -> double { return std::fmin(x, y); })},
      {"__nv_fast_fdividef", entry(+[](float x, float y) -> float { return x / y; })},
      {"__nv_fast_powf", entry(+[](float x, float y) -> float { return std::pow(x, y); })},
      // Ternary / quaternary.
      {"__nv_fmaf", entry(+[](float a, float b, float c) -> float { return std::fma(a, b, c); })},
      {"__nv_fma", entry(+[](double a, double b, double c) -> double { return std::fma(a, b, c); })},
      {"__nv_norm3df", entry(+[](float a, float b, float c) -> float {
         return float(std::hypot(double(a), double(b), double(c)));
       })},
      {"__nv_norm3d", entry(+[](double a, double b, double c) -> double { return std::hypot(a, b, c); })},
      {"__nv_rnorm3df", entry(+[](float a, float b, float c) -> float {
         return float(1.0 / std::hypot(double(a), double(b), double(c)));
       })},
      {"__nv_rnorm3d",
       entry(+[](double a, double b, double c) -> double { return 1.0 / std::hypot(a, b, c); })},
      {"__nv_norm4df", entry(+[](float a, float b, float c, float d) -> float {
         return float(std::hypot(std::hypot(double(a), double(b)), std::hypot(double(c), double(d))));
       })},
      {"__nv_norm4d", entry(+[](double a, double b, double c, double d) -> double {
         return std::hypot(std::hypot(a, b), std::hypot(c, d));
       })},
      {"__nv_rnorm4df", entry(+[](float a, float b, float c, float d) -> float {
         return float(1.0 / std::hypot(std::hypot(double(a), double(b)), std::hypot(double(c), double(d))));
       })},
      {"__nv_rnorm4d", entry(+[](double a, double b, double c, double d) -> double {
         return 1.0 / std::hypot(std::hypot(a, b), std::hypot(c, d));
       })},
      // float with an int.
      {"__nv_ldexpf", entry(+[](float x, i32 e) -> float { return std::ldexp(x, e); })},
      {"__nv_ldexp", entry(+[](double x, i32 e) -> double { return std::ldexp(x, e); })},
      {"__nv_scalbnf", entry(+[](float x, i32 e) -> float { return std::scalbn(x, e); })},
      {"__nv_scalbn", entry(+[](double x, i32 e) -> double { return std::scalbn(x, e); })},
      {"__nv_powif", entry(+[](float x, i32 e) -> float { return float(std::pow(double(x), double(e))); })},
      {"__nv_powi", entry(+[](double x, i32 e) -> double { return std::pow(x, double(e)); })},
      {"__nv_jnf", entry(+[](i32 n, float x) -> float { return float(::jn(n, double(x))); })},
      {"__nv_jn", entry(+[](i32 n, double x) -> double { return ::jn(n, x); })},
      {"__nv_ynf", entry(+[](i32 n, float x) -> float { return float(::yn(n, double(x))); })},
      {"__nv_yn", entry(+[](i32 n, double x) -> double { return ::yn(n, x); })},
      // Classification -> i32 (0 or 1).
      {"__nv_isnanf", entry(+[](float x) -> i32 { return std::isnan(x); })},
      {"__nv_isnand", entry(+[](double x) -> i32 { return std::isnan(x); })},
      {"__nv_isinff", entry(+[](float x) -> i32 { return std::isinf(x); })},
      {"__nv_isinfd", entry(+[](double x) -> i32 { return std::isinf(x); })},
      {"__nv_finitef", entry(+[](float x) -> i32 { return std::isfinite(x); })},
      {"__nv_isfinited", entry(+[](double x) -> i32 { return std::isfinite(x); })},
      {"__nv_signbitf", entry(+[](float x) -> i32 { return std::signbit(x); })},
      {"__nv_signbitd", entry(+[](double x) -> i32 { return std::signbit(x); })},
      {"__nv_ilogbf", entry(+[](float x) -> i32 { return std::ilogb(x); })},
      {"__nv_ilogb", entry(+[](double x) -> i32 { return std::ilogb(x); })},
  // Arithmetic with a rounding mode.
#define TS_DIR(sfx, D)                                                                                     \
  {"__nv_fadd_" sfx, entry(+[](float a, float b) -> float { return add_d<float, D>(a, b); })},             \
      {"__nv_fsub_" sfx, entry(+[](float a, float b) -> float { return sub_d<float, D>(a, b); })},         \
      {"__nv_fmul_" sfx, entry(+[](float a, float b) -> float { return mul_d<float, D>(a, b); })},         \
      {"__nv_fdiv_" sfx, entry(+[](float a, float b) -> float { return div_d<float, D>(a, b); })},         \
      {"__nv_frcp_" sfx, entry(+[](float a) -> float { return rcp_d<float, D>(a); })},                     \
      {"__nv_fsqrt_" sfx, entry(+[](float a) -> float { return sqrt_d<float, D>(a); })},                   \
      {"__nv_fmaf_" sfx, entry(+[](float a, float b, float c) -> float { return fmaf_d<D>(a, b, c); })},   \
      {"__nv_dadd_" sfx, entry(+[](double a, double b) -> double { return add_d<double, D>(a, b); })},     \
      {"__nv_dsub_" sfx, entry(+[](double a, double b) -> double { return sub_d<double, D>(a, b); })},     \
      {"__nv_dmul_" sfx, entry(+[](double a, double b) -> double { return mul_d<double, D>(a, b); })},     \
      {"__nv_ddiv_" sfx, entry(+[](double a, double b) -> double { return div_d<double, D>(a, b); })},     \
      {"__nv_drcp_" sfx, entry(+[](double a) -> double { return rcp_d<double, D>(a); })},                  \
      {"__nv_dsqrt_" sfx, entry(+[](double a) -> double { return sqrt_d<double, D>(a); })},                \
      {"__nv_fma_" sfx, entry(+[](double a, double b, double c) -> double { return fma_d<D>(a, b, c); })}, \
      {"__nv_float2int_" sfx, entry(+[](float x) -> i32 { return to_int<i32, D>(x); })},                   \
      {"__nv_float2uint_" sfx, entry(+[](float x) -> i32 { return i32(to_int<u32, D>(x)); })},             \
      {"__nv_float2ll_" sfx, entry(+[](float x) -> i64 { return to_int<i64, D>(x); })},                    \
      {"__nv_float2ull_" sfx, entry(+[](float x) -> i64 { return i64(to_int<u64, D>(x)); })},              \
      {"__nv_double2int_" sfx, entry(+[](double x) -> i32 { return to_int<i32, D>(x); })},                 \
      {"__nv_double2uint_" sfx, entry(+[](double x) -> i32 { return i32(to_int<u32, D>(x)); })},           \
      {"__nv_double2ll_" sfx, entry(+[](double x) -> i64 { return to_int<i64, D>(x); })},                  \
      {"__nv_double2ull_" sfx, entry(+[](double x) -> i64 { return i64(to_int<u64, D>(x)); })},            \
      {"__nv_int2float_" sfx, entry(+[](i32 x) -> float { return conv_d<float, D>(x); })},                 \
      {"__nv_uint2float_" sfx, entry(+[](i32 x) -> float { return conv_d<float, D>(u32(x)); })},           \
      {"__nv_ll2float_" sfx, entry(+[](i64 x) -> float { return conv_d<float, D>(x); })},                  \
      {"__nv_ull2float_" sfx, entry(+[](i64 x) -> float { return conv_d<float, D>(u64(x)); })},            \
      {"__nv_ll2double_" sfx, entry(+[](i64 x) -> double { return conv_d<double, D>(x); })},               \
      {"__nv_ull2double_" sfx, entry(+[](i64 x) -> double { return conv_d<double, D>(u64(x)); })},         \
      {"__nv_double2float_" sfx, entry(+[](double x) -> float { return conv_d<float, D>(x); })}
      TS_DIR("rn", Dir::rn),
      TS_DIR("rz", Dir::rz),
      TS_DIR("rd", Dir::rd),
      TS_DIR("ru", Dir::ru),
#undef TS_DIR
      {"__nv_int2double_rn", entry(+[](i32 x) -> double { return double(x); })},
      {"__nv_uint2double_rn", entry(+[](i32 x) -> double { return double(u32(x)); })},
      {"__nv_llrintf", entry(+[](float x) -> i64 { return to_int<i64, Dir::rn>(x); })},
      {"__nv_llrint", entry(+[](double x) -> i64 { return to_int<i64, Dir::rn>(x); })},
      {"__nv_llroundf", entry(+[](float x) -> i64 { return to_int<i64, Dir::rz>(std::round(x)); })},
      {"__nv_llround", entry(+[](double x) -> i64 { return to_int<i64, Dir::rz>(std::round(x)); })},
      // Bit reinterpretations.
      {"__nv_float_as_int", entry(+[](float x) -> i32 { return std::bit_cast<i32>(x); })},
      {"__nv_float_as_uint", entry(+[](float x) -> i32 { return std::bit_cast<i32>(x); })},
      {"__nv_int_as_float", entry(+[](i32 x) -> float { return std::bit_cast<float>(x); })},
      {"__nv_uint_as_float", entry(+[](i32 x) -> float { return std::bit_cast<float>(x); })},
      {"__nv_double_as_longlong", entry(+[](double x) -> i64 { return std::bit_cast<i64>(x); })},
      {"__nv_longlong_as_double", entry(+[](i64 x) -> double { return std::bit_cast<double>(x); })},
      {"__nv_double2hiint", entry(+[](double x) -> i32 { return i32(std::bit_cast<u64>(x) >> 32); })},
      {"__nv_double2loint", entry(+[](double x) -> i32 { return i32(u32(std::bit_cast<u64>(x))); })},
      {"__nv_hiloint2double", entry(+[](i32 hi, i32 lo) -> double {
         return std::bit_cast<double>((u64(u32(hi)) << 32) | u32(lo));
       })},
      // Integer functions (wrapping, as the GPU's).
      {"__nv_abs", entry(+[](i32 x) -> i32 { return x < 0 ? i32(0u - u32(x)) : x; })},
      {"__nv_llabs", entry(+[](i64 x) -> i64 { return x < 0 ? i64(0ull - u64(x)) : x; })},
      {"__nv_brev", entry(+[](i32 x) -> i32 {
         u32 v = u32(x), r = 0;
         for (int i = 0; i < 32; ++i) r |= ((v >> i) & 1u) << (31 - i);
         return i32(r);
       })},
      {"__nv_brevll", entry(+[](i64 x) -> i64 {
         u64 v = u64(x), r = 0;
         for (int i = 0; i < 64; ++i) r |= ((v >> i) & 1u) << (63 - i);
         return i64(r);
       })},
      {"__nv_clz", entry(+[](i32 x) -> i32 { return std::countl_zero(u32(x)); })},
      {"__nv_clzll", entry(+[](i64 x) -> i32 { return std::countl_zero(u64(x)); })},
      {"__nv_ffs", entry(+[](i32 x) -> i32 { return x == 0 ? 0 : std::countr_zero(u32(x)) + 1; })},
      {"__nv_ffsll", entry(+[](i64 x) -> i32 { return x == 0 ? 0 : std::countr_zero(u64(x)) + 1; })},
      {"__nv_popc", entry(+[](i32 x) -> i32 { return std::popcount(u32(x)); })},
      {"__nv_popcll", entry(+[](i64 x) -> i32 { return std::popcount(u64(x)); })},
      {"__nv_hadd", entry(+[](i32 x, i32 y) -> i32 { return i32((i64(x) + y) >> 1); })},
      {"__nv_rhadd", entry(+[](i32 x, i32 y) -> i32 { return i32((i64(x) + y + 1) >> 1); })},
      {"__nv_uhadd", entry(+[](i32 x, i32 y) -> i32 { return i32((u64(u32(x)) + u32(y)) >> 1); })},
      {"__nv_urhadd", entry(+[](i32 x, i32 y) -> i32 { return i32((u64(u32(x)) + u32(y) + 1) >> 1); })},
      {"__nv_mul24", entry(+[](i32 x, i32 y) -> i32 {
         const i64 a = i32(u32(x) << 8) >> 8, b = i32(u32(y) << 8) >> 8;  // sign-extended low 24 bits
         return i32(u32(u64(a * b)));
       })},
      {"__nv_umul24", entry(+[](i32 x, i32 y) -> i32 {
         return i32(u32((u64(u32(x) & 0xFFFFFFu) * (u32(y) & 0xFFFFFFu))));
       })},
      {"__nv_mulhi", entry(+[](i32 x, i32 y) -> i32 { return i32((i64(x) * i64(y)) >> 32); })},
      {"__nv_umulhi", entry(+[](i32 x, i32 y) -> i32 { return i32((u64(u32(x)) * u32(y)) >> 32); })},
      {"__nv_mul64hi", entry(+[](i64 x, i64 y) -> i64 { return i64((__int128(x) * __int128(y)) >> 64); })},
      {"__nv_umul64hi", entry(+[](i64 x, i64 y) -> i64 {
         return i64((static_cast<unsigned __int128>(u64(x)) * u64(y)) >> 64);
       })},
      {"__nv_sad", entry(+[](i32 x, i32 y, i32 z) -> i32 {
         const i64 d = i64(x) - y;
         return i32(u32(u64(d < 0 ? -d : d) + u32(z)));
       })},
      {"__nv_usad", entry(+[](i32 x, i32 y, i32 z) -> i32 {
         const u32 a = u32(x), b = u32(y);
         return i32(u32((a > b ? a - b : b - a) + u32(z)));
       })},
      {"__nv_byte_perm", entry(+[](i32 x, i32 y, i32 s) -> i32 {
         const u64 v = (u64(u32(y)) << 32) | u32(x);  // bytes 0-3 from x, 4-7 from y (PTX prmt)
         u32 r = 0;
         for (int i = 0; i < 4; ++i) r |= u32((v >> (8 * ((u32(s) >> (4 * i)) & 7u))) & 0xFFu) << (8 * i);
         return i32(r);
       })},
  };
  return t;
}
#undef F1
#undef F2

}  // namespace

void lower_extern(const Op& op, Planner& p, Step& s) {
  const ir::Attr* sym = op.attr("symbol");
  if (!sym || (sym->kind != ir::Attr::Kind::String && sym->kind != ir::Attr::Kind::Symbol &&
               sym->kind != ir::Attr::Kind::Keyword))
    p.unsupported(op, "tt.extern_elementwise without a symbol");
  const auto& t = table();
  auto it = t.find(sym->s);
  if (it == t.end()) p.unsupported(op, fmt::format("unsupported extern function '{}'", sym->s));
  const Entry& e = it->second;
  bool ok = s.out.size() == 1 && s.out_types.size() == 1 && s.in_types.size() == e.args.size() &&
            s.out_types[0]->elem == e.ret;
  for (size_t i = 0; ok && i < e.args.size(); ++i) ok = s.in_types[i]->elem == e.args[i];
  if (!ok) {
    std::string want;
    for (Elem a : e.args) want += fmt::format("{}{}", want.empty() ? "" : ", ", ir::elem_name(a));
    p.unsupported(op,
                  fmt::format("extern function '{}' takes ({}) -> {}", sym->s, want, ir::elem_name(e.ret)));
  }
  s.aux = std::make_shared<ExternData>(ExternData{e.fn});
  s.fn = e.kernel;
}

}  // namespace tilescope::ops
