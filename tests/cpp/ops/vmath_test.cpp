// The vectorised math routines (src/ops/vmath.h, SLEEF) on both instruction sets: within 1 ulp of the exact
// value (double libm for float, long double libm for double), C99's results at infinities, NaN and signed
// zeros (as libm gives them), and a lane's result independent of its position in the array.
#include "src/ops/vmath.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

using namespace tilescope::ops;

namespace {

struct Func {
  const char* name;
  vmath::Fn fn;
  long double (*ref)(long double);
  double lo, hi;  // the sweep of ordinary arguments
};

const Func kFuncs[] = {
    {"exp", vmath::Fn::exp, [](long double x) { return std::exp(x); }, -100, 88},
    {"exp2", vmath::Fn::exp2, [](long double x) { return std::exp2(x); }, -140, 127},
    {"expm1", vmath::Fn::expm1, [](long double x) { return std::expm1(x); }, -20, 88},
    {"log", vmath::Fn::log, [](long double x) { return std::log(x); }, 1e-38, 1e30},
    {"log2", vmath::Fn::log2, [](long double x) { return std::log2(x); }, 1e-38, 1e30},
    {"log10", vmath::Fn::log10, [](long double x) { return std::log10(x); }, 1e-38, 1e30},
    {"log1p", vmath::Fn::log1p, [](long double x) { return std::log1p(x); }, -0.99, 1e30},
    {"sin", vmath::Fn::sin, [](long double x) { return std::sin(x); }, -1e4, 1e4},
    {"cos", vmath::Fn::cos, [](long double x) { return std::cos(x); }, -1e4, 1e4},
    {"tan", vmath::Fn::tan, [](long double x) { return std::tan(x); }, -1e3, 1e3},
    {"sinh", vmath::Fn::sinh, [](long double x) { return std::sinh(x); }, -88, 88},
    {"cosh", vmath::Fn::cosh, [](long double x) { return std::cosh(x); }, -88, 88},
    {"tanh", vmath::Fn::tanh, [](long double x) { return std::tanh(x); }, -20, 20},
    {"asin", vmath::Fn::asin, [](long double x) { return std::asin(x); }, -1, 1},
    {"acos", vmath::Fn::acos, [](long double x) { return std::acos(x); }, -1, 1},
    {"atan", vmath::Fn::atan, [](long double x) { return std::atan(x); }, -1e6, 1e6},
    {"asinh", vmath::Fn::asinh, [](long double x) { return std::asinh(x); }, -1e6, 1e6},
    {"acosh", vmath::Fn::acosh, [](long double x) { return std::acosh(x); }, 1, 1e6},
    {"atanh", vmath::Fn::atanh, [](long double x) { return std::atanh(x); }, -0.999, 0.999},
    {"erf", vmath::Fn::erf, [](long double x) { return std::erf(x); }, -5, 5},
    {"cbrt", vmath::Fn::cbrt, [](long double x) { return std::cbrt(x); }, -1e30, 1e30},
};

template <class F>
int64_t ulps(F a, F b) {
  using I = std::conditional_t<sizeof(F) == 4, int32_t, int64_t>;
  auto key = [](F f) {
    const auto u = std::bit_cast<I>(f);
    return u < 0 ? static_cast<long double>(std::numeric_limits<I>::min()) - u : static_cast<long double>(u);
  };
  return static_cast<int64_t>(std::fabs(key(a) - key(b)));
}

template <class F>
std::vector<F> arguments(const Func& f) {
  std::vector<F> xs;
  const int n = 2001;  // an odd count: every routine's tail is used
  for (int i = 0; i < n; ++i) {
    const double t = double(i) / (n - 1);
    // Both a linear and (for a positive range) a logarithmic sweep.
    xs.push_back(static_cast<F>(f.lo + (f.hi - f.lo) * t));
    if (f.lo > 0) xs.push_back(static_cast<F>(f.lo * std::pow(f.hi / f.lo, t)));
  }
  return xs;
}

template <class F, class Map>
void check(const Func& f, Map map, const char* isa) {
  const std::vector<F> xs = arguments<F>(f);
  std::vector<F> got(xs.size());
  map(xs.data(), got.data(), static_cast<int64_t>(xs.size()));
  for (size_t i = 0; i < xs.size(); ++i) {
    const long double want = f.ref(xs[i]);
    if (std::isnan(want) || std::isinf(static_cast<F>(want))) continue;  // the specials are checked below
    EXPECT_LE(ulps(got[i], static_cast<F>(want)), 1)
        << f.name << " (" << isa << ", " << sizeof(F) * 8 << "-bit) of " << xs[i] << ": " << got[i] << " vs "
        << static_cast<F>(want);
  }
  // Infinities, NaN, signed zeros, the ends of the domains: what libm gives (C99 Annex F).
  const F inf = std::numeric_limits<F>::infinity(), nan = std::numeric_limits<F>::quiet_NaN();
  const std::vector<F> special{inf, -inf, nan, F(0), -F(0), F(1), F(-1), F(2), F(-2), F(1e-40), F(-1e-40)};
  std::vector<F> sgot(special.size());
  map(special.data(), sgot.data(), static_cast<int64_t>(special.size()));
  for (size_t i = 0; i < special.size(); ++i) {
    const F want = static_cast<F>(f.ref(special[i]));
    const std::string what = std::string(f.name) + " (" + isa + ") of " + std::to_string(special[i]);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(sgot[i])) << what << ": " << sgot[i];
    } else if (std::isinf(want) || want == 0) {
      EXPECT_EQ(sgot[i], want) << what;
      EXPECT_EQ(std::signbit(sgot[i]), std::signbit(want)) << what;
    } else {
      EXPECT_LE(ulps(sgot[i], want), 1) << what << ": " << sgot[i] << " vs " << want;
    }
  }
  // A lane's result does not depend on where it is: one at a time, in place, equal to the whole array's.
  using Bits = std::conditional_t<sizeof(F) == 4, uint32_t, uint64_t>;
  for (size_t i = 0; i < 40 && i < xs.size(); ++i) {
    F one = xs[i];
    map(&one, &one, 1);
    EXPECT_EQ(std::bit_cast<Bits>(one), std::bit_cast<Bits>(got[i]))
        << f.name << " (" << isa << ") of " << xs[i];
  }
}

}  // namespace

TEST(Vmath, EveryRoutineWithinOneUlpOnBothInstructionSets) {
  for (const Func& f : kFuncs) {
    for (auto isa : {vmath::Isa::sse4, vmath::Isa::best}) {
      const char* name = isa == vmath::Isa::sse4 ? "sse4" : vmath::best_isa();
      check<float>(f, vmath::f32(f.fn, isa), name);
      check<double>(f, vmath::f64(f.fn, isa), name);
    }
  }
}

TEST(Vmath, BestIsTheWidestTheCpuRuns) {
  const std::string best = vmath::best_isa();
  EXPECT_TRUE(best == "avx2" || best == "sse4") << best;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    EXPECT_EQ(best, "avx2");
  }
}
