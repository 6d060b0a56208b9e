// Vectorised transcendental math for the float unaries (math.exp, math.log, math.sin, ...): SLEEF's
// 1.0-ulp routines (https://sleef.org, Debian libsleef-dev) over whole arrays, 8 lanes at a time with
// AVX2+FMA, 4 with SSE4.1 where the CPU has no AVX2.
//
// Fidelity: every SLEEF `_u10` routine is within 1.0 ulp of the exact result over its whole domain, with
// C99's results for infinities, NaN, signed zeros and subnormals. The GPU's own lowering is further off
// (math.exp / log are ex2.approx / lg2.approx based, sin / cos are sin.approx: a few ulp, reference
// §5.2), so the written policy of the GPU ground truth (tests/python/test_gpu_truth.py, ulps per row) holds
// as it did with libm. A lane's result does not depend on its position (the tail of an array goes through
// the same vector routine, padded); it may differ in the last bit between a CPU with AVX2 and one without.
#pragma once

#include <cstdint>

namespace tilescope::ops::vmath {

// The functions with a vectorised routine; X(name) for each.
#define TS_VMATH_FUNCS(X) \
  X(exp)                  \
  X(exp2)                 \
  X(expm1)                \
  X(log)                  \
  X(log2)                 \
  X(log10)                \
  X(log1p)                \
  X(sin)                  \
  X(cos)                  \
  X(tan)                  \
  X(sinh)                 \
  X(cosh)                 \
  X(tanh)                 \
  X(asin)                 \
  X(acos)                 \
  X(atan)                 \
  X(asinh)                \
  X(acosh)                \
  X(atanh)                \
  X(erf)                  \
  X(cbrt)

enum class Fn : uint8_t {
  none,
#define TS_VMATH_ENUM(name) name,
  TS_VMATH_FUNCS(TS_VMATH_ENUM)
#undef TS_VMATH_ENUM
};

// The instruction sets with routines: `best` is the widest this CPU runs (AVX2 needs FMA as well).
enum class Isa : uint8_t { best, sse4, avx2 };

// out[i] = f(in[i]) for i in [0, n); `in` and `out` may be the same array (not otherwise overlapping).
using F32Map = void (*)(const float* in, float* out, int64_t n);
using F64Map = void (*)(const double* in, double* out, int64_t n);

// The routine of `f` (not Fn::none) for `isa`; Isa::avx2 on a CPU without AVX2+FMA gives the SSE4 one.
F32Map f32(Fn f, Isa isa = Isa::best);
F64Map f64(Fn f, Isa isa = Isa::best);

// The instruction set Isa::best picks on this CPU: "avx2" or "sse4".
const char* best_isa();

}  // namespace tilescope::ops::vmath
