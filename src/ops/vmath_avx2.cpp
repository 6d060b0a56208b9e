// The AVX2+FMA routines of vmath.h. This file alone is compiled with -mavx2 -mfma (CMakeLists.txt) and is
// only reached through vmath::f32 / f64 on a CPU that has both. It uses no inline function of a header
// (std::memcpy and the like): a copy compiled here with AVX2 could be the one the linker keeps for the
// rest of the program, which must run on x86-64-v2.
#include <immintrin.h>
#include <sleef.h>

#include "vmath.h"

namespace tilescope::ops::vmath::avx2 {

namespace {

template <class E, class V, auto F>  // F: V(V) (SLEEF declares a const V result)
void map(const E* in, E* out, int64_t n) {
  constexpr int64_t W = sizeof(V) / sizeof(E);
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    V v;
    __builtin_memcpy(&v, in + i, sizeof v);
    v = F(v);
    __builtin_memcpy(out + i, &v, sizeof v);
  }
  if (i < n) {
    E buf[W];
    for (int64_t j = 0; j < W; ++j) buf[j] = j < n - i ? in[i + j] : E(1);
    V v;
    __builtin_memcpy(&v, buf, sizeof v);
    v = F(v);
    __builtin_memcpy(buf, &v, sizeof v);
    for (int64_t j = 0; j < n - i; ++j) out[i + j] = buf[j];
  }
}

}  // namespace

F32Map f32(Fn f) {
  switch (f) {
#define TS_VMATH_CASE(name) \
  case Fn::name: return map<float, __m256, Sleef_##name##f8_u10avx2>;
    TS_VMATH_FUNCS(TS_VMATH_CASE)
#undef TS_VMATH_CASE
    case Fn::none: break;
  }
  return nullptr;
}

F64Map f64(Fn f) {
  switch (f) {
#define TS_VMATH_CASE(name) \
  case Fn::name: return map<double, __m256d, Sleef_##name##d4_u10avx2>;
    TS_VMATH_FUNCS(TS_VMATH_CASE)
#undef TS_VMATH_CASE
    case Fn::none: break;
  }
  return nullptr;
}

}  // namespace tilescope::ops::vmath::avx2
