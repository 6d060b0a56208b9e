// The SSE4.1 routines (the build's baseline, x86-64-v2) and the choice between them and the AVX2 ones
// (vmath_avx2.cpp, compiled with -mavx2 -mfma and called only where the CPU has both). See vmath.h.
#include "vmath.h"

#include <sleef.h>

#include <cstring>

namespace tilescope::ops::vmath {

namespace avx2 {
F32Map f32(Fn f);
F64Map f64(Fn f);
}  // namespace avx2

namespace {

bool has_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}

// Whole vectors, then the tail padded with ones (in the domain of every function) through the same routine.
template <class E, class V, auto F>  // F: V(V) (SLEEF declares a const V result)
void map(const E* in, E* out, int64_t n) {
  constexpr int64_t W = sizeof(V) / sizeof(E);
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    V v;
    std::memcpy(&v, in + i, sizeof v);
    v = F(v);
    std::memcpy(out + i, &v, sizeof v);
  }
  if (i < n) {
    E buf[W];
    for (auto& b : buf) b = E(1);
    std::memcpy(buf, in + i, static_cast<size_t>(n - i) * sizeof(E));
    V v;
    std::memcpy(&v, buf, sizeof v);
    v = F(v);
    std::memcpy(buf, &v, sizeof v);
    std::memcpy(out + i, buf, static_cast<size_t>(n - i) * sizeof(E));
  }
}

F32Map sse4_f32(Fn f) {
  switch (f) {
#define TS_VMATH_CASE(name) \
  case Fn::name: return map<float, __m128, Sleef_##name##f4_u10sse4>;
    TS_VMATH_FUNCS(TS_VMATH_CASE)
#undef TS_VMATH_CASE
    case Fn::none: break;
  }
  return nullptr;
}

F64Map sse4_f64(Fn f) {
  switch (f) {
#define TS_VMATH_CASE(name) \
  case Fn::name: return map<double, __m128d, Sleef_##name##d2_u10sse4>;
    TS_VMATH_FUNCS(TS_VMATH_CASE)
#undef TS_VMATH_CASE
    case Fn::none: break;
  }
  return nullptr;
}

}  // namespace

F32Map f32(Fn f, Isa isa) { return isa != Isa::sse4 && has_avx2() ? avx2::f32(f) : sse4_f32(f); }
F64Map f64(Fn f, Isa isa) { return isa != Isa::sse4 && has_avx2() ? avx2::f64(f) : sse4_f64(f); }

const char* best_isa() { return has_avx2() ? "avx2" : "sse4"; }

}  // namespace tilescope::ops::vmath
