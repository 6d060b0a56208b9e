// Dot family kernels (see ops.h): tt.dot and tt.dot_scaled (reference §1.5, §5.3).
//
// tt.dot d = a·b + c, [M,K]x[K,N] or batched [B,M,K]x[B,K,N]. Numerics, as measured on an H200 with
// triton 3.6 (dot of a 16x16 f32 tile with the identity, and 32x32x32 randn against fp64):
// * f16 / bf16 / fp8 inputs: converted to f32 exactly; products are exact in f32 and are summed in
//   f32 (Eigen's GEMM, accumulator initialised with c). An f16 (or bf16) result rounds once at the end.
//   fp8 `maxNumImpreciseAcc` (Hopper's reduced-precision partial sums) is not modelled.
// * f32, inputPrecision = tf32: the tensor core ignores the low 13 mantissa bits of each input
//   (truncation toward zero: 1+3*2^-11 reads as 1+2^-10, a 32x32x32 randn product matched a
//   truncation emulation to 2.7e-6 but a round-to-nearest one only to 2.1e-2). The products of
//   tf32 values are exact in f32; sums in f32.
// * tf32x3 (pass F32DotTC, lib/Dialect/TritonGPU/Transforms/F32DotTC.cpp): big = cvt.rna.tf32.f32(x)
//   (round to nearest, ties away), small = x - big; acc = 0; acc += small_a·big_b; acc += big_a·small_b
//   (tf32 dots, so their inputs are truncated as above); NaN lanes of acc become 0;
//   acc += big_a·big_b; d = acc + c. Measured: 1+2^-11+2^-23 gives 1+2^-11+2^-22, as this predicts.
// * bf16x3 / bf16x6 (same pass, pattern BF16xN): x splits by repeated RTNE truncf into hi, mid (and
//   lo for x6); acc = 0; [x6: acc += mid·mid; acc += lo·hi; acc += hi·lo;] acc += mid·hi;
//   acc += hi·mid; NaN lanes -> 0; acc += hi·hi; d = acc + c. bf16 products are exact in f32.
// * ieee: fp32 FMA in k order starting from c: d = fma(a[i,k], b[k,j], d) for k = 0..K-1, the FMA
//   dot's order. (Hardware FMA when the CPU has it, else std::fma: both are exact fused ops.)
// * f64: double GEMM (Eigen). i8 x i8 -> i32: exact, wrapping two's-complement sums.
//
// tt.dot_scaled (microscaling): a and b are dequantized to f32 and multiplied in f32 with c as the
// accumulator. Element types (ScaleDotElemType): e2m1 (fp4: sign, 2 exponent bits with bias 1, 1
// mantissa bit; values 0, .5, 1, 1.5, 2, 3, 4, 6) packed two per i8, the element with the even index
// in the low nibble (measured on an H200: byte 0x35 at k = 0,1 held 3 then 1.5 before scaling);
// e2m3 / e3m2 (fp6, one per byte, low 6 bits); e4m3 / e5m2 (fp8); bf16; fp16. lhs_k_pack = true
// (default) packs fp4 pairs along K (a is [M, K/2]); false packs them along M (a is [M/2, K]); the same
// for b with N (b is [K/2, N] or [K, N/2]). Scales are e8m0 bytes, one per 32 elements along K:
// a_scale [M, K/32], b_scale [N, K/32]; value 2^(s-127), 255 is NaN. NVIDIA's nvfp4 (tutorial 10's
// default) has one e4m3 scale (f8E4M3FN in TTIR) per 16 elements: a_scale [M, K/16], value the e4m3
// number (not measured: that needs an sm_100 GPU; the product is the definition, value x scale). Scale byte 0
// gives 0 on an H200 (the sm_90 emulation builds the scale as a bf16 with exponent field s, so 2^-127 flushes
// to zero); we follow that. fp16 operands keep full fp16 precision (measured: 1.0029296875 x scale 2 gave
// 2.005859375). lhs_k_pack = false did not compile for sm_90 in triton 3.6 (not measured). Layouts
// and packing agree with tl.dot_scaled's docstring (triton 3.6 python/triton/language/core.py: "Fp4
// elements are packed into uint8 inputs with the first element in lower bits", lhs_scale
// [M, K//32], rhs_scale [N, K//32], lhs_k_pack=False packs along M). Only 2-D dot_scaled runs here.
//
// Sources for the tf32x3 / bf16xN terms: F32DotTC.cpp in triton-lang/triton (the BF16xN pattern as in
// the 3.6-era file, e.g. the woct0rdho/triton-windows mirror of it); cvt.rna.tf32.f32 rounds to
// nearest with ties away from zero (PTX ISA, cvt .rna).
#include <fmt/format.h>
#include <immintrin.h>

#include <Eigen/Core>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "elementwise.h"
#include "ops.h"

namespace tilescope::ops {

namespace {

using exec::Program;
using ir::Elem;
using MatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// ---------------------------------------------------------------------------------------------
// Small float formats, decoded exactly. `bias`, exponent and mantissa widths per OCP / MLIR.

float decode_minifloat(uint32_t bits, int ebits, int mbits, int bias, bool ieee_special, bool fn_nan,
                       bool fnuz) {
  const int total = 1 + ebits + mbits;
  bits &= (1u << total) - 1;
  const bool neg = (bits >> (ebits + mbits)) & 1;
  const uint32_t e = (bits >> mbits) & ((1u << ebits) - 1);
  const uint32_t m = bits & ((1u << mbits) - 1);
  const uint32_t emax = (1u << ebits) - 1;
  if (fnuz && bits == (1u << (total - 1))) return NAN;  // fnuz: the "negative zero" pattern is NaN
  if (ieee_special && e == emax) return m ? NAN : (neg ? -INFINITY : INFINITY);
  if (fn_nan && e == emax && m == (1u << mbits) - 1) return NAN;  // e4m3fn: S.1111.111
  float v = e == 0 ? std::ldexp(static_cast<float>(m), 1 - bias - mbits)
                   : std::ldexp(static_cast<float>(m | (1u << mbits)), static_cast<int>(e) - bias - mbits);
  return neg ? -v : v;
}

struct Table256 {
  float v[256];
};

const Table256& fp8_lut(Elem e) {
  auto build = [](auto f) {
    Table256 t;
    for (uint32_t i = 0; i < 256; ++i) t.v[i] = f(i);
    return t;
  };
  static const Table256 e4m3fn =
      build([](uint32_t b) { return decode_minifloat(b, 4, 3, 7, false, true, false); });
  static const Table256 e5m2 =
      build([](uint32_t b) { return decode_minifloat(b, 5, 2, 15, true, false, false); });
  static const Table256 e4m3fnuz =
      build([](uint32_t b) { return decode_minifloat(b, 4, 3, 8, false, false, true); });
  static const Table256 e5m2fnuz =
      build([](uint32_t b) { return decode_minifloat(b, 5, 2, 16, false, false, true); });
  switch (e) {
    case Elem::f8e4m3fn: return e4m3fn;
    case Elem::f8e5m2: return e5m2;
    case Elem::f8e4m3fnuz: return e4m3fnuz;
    case Elem::f8e5m2fnuz: return e5m2fnuz;
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
  assert(false && "fp8_lut is only asked for the fp8 formats");
  return e4m3fn;
}

// ---------------------------------------------------------------------------------------------
// Conversions between storage and f32 matrices (chosen at plan time).

using ToF32 = void (*)(const std::byte*, float*, int64_t);
using FromF32 = void (*)(const float*, std::byte*, int64_t);

template <class Tr>
void to_f32(const std::byte* src, float* dst, int64_t n) {
  const auto* s = reinterpret_cast<const typename Tr::S*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(Tr::load(s[i]));
}
template <Elem E>
void fp8_to_f32(const std::byte* src, float* dst, int64_t n) {
  const float* t = fp8_lut(E).v;
  const auto* s = reinterpret_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = t[s[i]];
}
template <class Tr>
void from_f32(const float* src, std::byte* dst, int64_t n) {
  auto* d = reinterpret_cast<typename Tr::S*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = Tr::store(static_cast<typename Tr::C>(src[i]));
}

ToF32 to_f32_for(Elem e) {
  switch (e) {
    case Elem::f16: return &to_f32<ew::F16>;
    case Elem::bf16: return &to_f32<ew::BF16>;
    case Elem::f32: return &to_f32<ew::F32>;
    case Elem::f8e4m3fn: return &fp8_to_f32<Elem::f8e4m3fn>;
    case Elem::f8e5m2: return &fp8_to_f32<Elem::f8e5m2>;
    case Elem::f8e4m3fnuz: return &fp8_to_f32<Elem::f8e4m3fnuz>;
    case Elem::f8e5m2fnuz: return &fp8_to_f32<Elem::f8e5m2fnuz>;
    case Elem::i1:
    case Elem::i8:
    case Elem::i16:
    case Elem::i32:
    case Elem::i64:
    case Elem::f64:
    case Elem::ptr:
    case Elem::tensordesc:
    case Elem::none: return nullptr;
  }
  return nullptr;
}
FromF32 from_f32_for(Elem e) {
  switch (e) {
    case Elem::f16: return &from_f32<ew::F16>;
    case Elem::bf16: return &from_f32<ew::BF16>;
    case Elem::f32: return &from_f32<ew::F32>;
    case Elem::i1:
    case Elem::i8:
    case Elem::i16:
    case Elem::i32:
    case Elem::i64:
    case Elem::f8e4m3fn:
    case Elem::f8e5m2:
    case Elem::f8e4m3fnuz:
    case Elem::f8e5m2fnuz:
    case Elem::f64:
    case Elem::ptr:
    case Elem::tensordesc:
    case Elem::none: return nullptr;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// tf32 and bf16 splitting (see the header comment for the sources).

inline float tf32_trunc(float x) {  // what the tensor core reads of an f32 operand
  uint32_t u = std::bit_cast<uint32_t>(x);
  return std::isnan(x) ? x : std::bit_cast<float>(u & 0xffffe000u);
}
inline float tf32_rna(float x) {  // cvt.rna.tf32.f32: nearest, ties away from zero (magnitude rounding)
  uint32_t u = std::bit_cast<uint32_t>(x);
  if ((u & 0x7f800000u) == 0x7f800000u) return x;  // inf, NaN
  return std::bit_cast<float>((u + 0x1000u) & 0xffffe000u);
}
inline float bf16_rtne(float x) { return ew::bf16_to_f32(ew::f32_to_bf16(x)); }

enum class Prec { tf32, tf32x3, ieee, bf16x3, bf16x6 };

// ---------------------------------------------------------------------------------------------
// fp32 FMA GEMM (ieee): d[i,j] = fma(a[i,k], b[k,j], d[i,j]) for k in order.

// The same loop twice: GCC only emits vfmadd (and vectorises the j loop) inside a function that
// carries the target attribute itself.
__attribute__((target("avx2,fma"))) void fma_rows_hw(const float* A, const float* Bm, float* D, int64_t i0,
                                                     int64_t i1, int64_t j0, int64_t N, int64_t K) {
  for (int64_t i = i0; i < i1; ++i) {
    float* d = D + i * N;
    for (int64_t k = 0; k < K; ++k) {
      const float a = A[i * K + k];
      const float* b = Bm + k * N;
      for (int64_t j = j0; j < N; ++j) d[j] = __builtin_fmaf(a, b[j], d[j]);
    }
  }
}
// Blocks of 4 rows x 16 columns whose 8 accumulator registers stay in registers over the whole k
// range, each row of b loaded once per block: every output is still the one FMA chain in k order
// from c, so the bits are those of the plain loop (fma_rows_hw), which takes the rows and columns
// left over.
__attribute__((target("avx2,fma"))) void fma_gemm_hw(const float* A, const float* Bm, float* D, int64_t M,
                                                     int64_t N, int64_t K) {
  constexpr int64_t R = 4, C = 16;
  int64_t i = 0;
  for (; i + R <= M; i += R) {
    int64_t j = 0;
    for (; j + C <= N; j += C) {
      __m256 acc[R][2];
      for (int64_t r = 0; r < R; ++r) {
        acc[r][0] = _mm256_loadu_ps(D + (i + r) * N + j);
        acc[r][1] = _mm256_loadu_ps(D + (i + r) * N + j + 8);
      }
      for (int64_t k = 0; k < K; ++k) {
        const __m256 b0 = _mm256_loadu_ps(Bm + k * N + j), b1 = _mm256_loadu_ps(Bm + k * N + j + 8);
        for (int64_t r = 0; r < R; ++r) {
          const __m256 a = _mm256_broadcast_ss(A + (i + r) * K + k);
          acc[r][0] = _mm256_fmadd_ps(a, b0, acc[r][0]);
          acc[r][1] = _mm256_fmadd_ps(a, b1, acc[r][1]);
        }
      }
      for (int64_t r = 0; r < R; ++r) {
        _mm256_storeu_ps(D + (i + r) * N + j, acc[r][0]);
        _mm256_storeu_ps(D + (i + r) * N + j + 8, acc[r][1]);
      }
    }
    if (j < N) fma_rows_hw(A, Bm, D, i, i + R, j, N, K);
  }
  if (i < M) fma_rows_hw(A, Bm, D, i, M, 0, N, K);
}
void fma_gemm_sw(const float* A, const float* Bm, float* D, int64_t M, int64_t N, int64_t K) {
  for (int64_t i = 0; i < M; ++i) {
    float* d = D + i * N;
    for (int64_t k = 0; k < K; ++k) {
      const float a = A[i * K + k];
      const float* b = Bm + k * N;
      for (int64_t j = 0; j < N; ++j) d[j] = std::fma(a, b[j], d[j]);
    }
  }
}
void fma_gemm(const float* A, const float* Bm, float* D, int64_t M, int64_t N, int64_t K) {
  static const bool hw = __builtin_cpu_supports("fma") && __builtin_cpu_supports("avx2");
  if (hw)
    fma_gemm_hw(A, Bm, D, M, N, K);
  else
    fma_gemm_sw(A, Bm, D, M, N, K);
}

// ---------------------------------------------------------------------------------------------
// tt.dot

struct DotAux {
  int64_t batch = 1, M = 0, N = 0, K = 0;
  ToF32 load_a = nullptr, load_b = nullptr, load_c = nullptr;
  FromF32 store_d = nullptr;
  int bytes_a = 0, bytes_b = 0, bytes_c = 0, bytes_d = 0;
  Prec prec = Prec::ieee;
  bool f32_inputs = false;
  bool f32_out = false;  // c and d are f32: the sums can accumulate straight into d
};

/// acc (M x N, row-major) += X (M x K) · Y (K x N), f32 sums (Eigen).
inline void gemm_acc(const float* X, const float* Y, float* acc, int64_t M, int64_t N, int64_t K) {
  Eigen::Map<const MatF> x(X, M, K);
  Eigen::Map<const MatF> y(Y, K, N);
  Eigen::Map<MatF> d(acc, M, N);
  d.noalias() += x * y;
}

void zero_nans(float* v, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (std::isnan(v[i])) v[i] = 0.0f;
}

void dot_f32(Program& p, const Step& s) {
  const auto& a = s.data<DotAux>();
  const int64_t M = a.M, N = a.N, K = a.K;
  thread_local std::vector<float> A, Bm, C, D, t0, t1, t2, t3, t4, t5;
  A.resize(M * K);
  Bm.resize(K * N);
  C.resize(M * N);
  // Where the sums go straight into an f32 accumulator, they go into d itself (a result never shares
  // bytes with an operand of its own op: plan.cpp), and ieee reads f32 inputs where they are.
  const bool ieee = a.f32_inputs && a.prec == Prec::ieee;
  const bool into_d = a.f32_out && (!a.f32_inputs || ieee || a.prec == Prec::tf32);
  for (int64_t bi = 0; bi < a.batch; ++bi) {
    const std::byte* xa = p.slot[s.in[0]] + bi * M * K * a.bytes_a;
    const std::byte* xb = p.slot[s.in[1]] + bi * K * N * a.bytes_b;
    const std::byte* xc = p.slot[s.in[2]] + bi * M * N * a.bytes_c;
    std::byte* xd = p.slot[s.out[0]] + bi * M * N * a.bytes_d;
    float* acc = C.data();
    if (into_d) {
      acc = reinterpret_cast<float*>(xd);
      std::memcpy(acc, xc, static_cast<size_t>(M * N) * 4);
    } else {
      a.load_c(xc, C.data(), M * N);
    }
    if (!ieee) {
      a.load_a(xa, A.data(), M * K);
      a.load_b(xb, Bm.data(), K * N);
    }
    if (ieee) {
      fma_gemm(reinterpret_cast<const float*>(xa), reinterpret_cast<const float*>(xb), acc, M, N, K);
    } else if (!a.f32_inputs) {
      gemm_acc(A.data(), Bm.data(), acc, M, N, K);  // exact products, f32 sums
    } else if (a.prec == Prec::tf32) {
      for (auto& v : A) v = tf32_trunc(v);
      for (auto& v : Bm) v = tf32_trunc(v);
      gemm_acc(A.data(), Bm.data(), acc, M, N, K);
    } else if (a.prec == Prec::tf32x3) {
      // t0/t1: big/small of a; t2/t3: big/small of b.
      t0.resize(M * K);
      t1.resize(M * K);
      t2.resize(K * N);
      t3.resize(K * N);
      for (int64_t i = 0; i < M * K; ++i) {
        t0[i] = tf32_rna(A[i]);
        t1[i] = A[i] - t0[i];
      }
      for (int64_t i = 0; i < K * N; ++i) {
        t2[i] = tf32_rna(Bm[i]);
        t3[i] = Bm[i] - t2[i];
      }
      D.assign(M * N, 0.0f);
      t4.resize(M * K);
      t5.resize(K * N);
      for (int64_t i = 0; i < M * K; ++i) t4[i] = tf32_trunc(t1[i]);
      gemm_acc(t4.data(), t2.data(), D.data(), M, N, K);  // small_a · big_b
      for (int64_t i = 0; i < K * N; ++i) t5[i] = tf32_trunc(t3[i]);
      gemm_acc(t0.data(), t5.data(), D.data(), M, N, K);  // big_a · small_b
      zero_nans(D.data(), M * N);
      gemm_acc(t0.data(), t2.data(), D.data(), M, N, K);  // big_a · big_b
      for (int64_t i = 0; i < M * N; ++i) C[i] = D[i] + C[i];
    } else {  // bf16x3, bf16x6
      const bool six = a.prec == Prec::bf16x6;
      std::vector<float>* ap[3] = {&t0, &t1, &t2};
      std::vector<float>* bp[3] = {&t3, &t4, &t5};
      auto split = [six](const std::vector<float>& x, std::vector<float>* parts[3]) {
        const int64_t n = static_cast<int64_t>(x.size());
        for (int k = 0; k < 3; ++k) parts[k]->resize(n);
        for (int64_t i = 0; i < n; ++i) {
          float r = x[i];
          float hi = bf16_rtne(r);
          r = r - hi;
          float mid = bf16_rtne(r);
          float lo = 0.0f;
          if (six) {
            r = r - mid;
            lo = bf16_rtne(r);
          }
          (*parts[0])[i] = hi;
          (*parts[1])[i] = mid;
          (*parts[2])[i] = lo;
        }
      };
      split(A, ap);
      split(Bm, bp);
      D.assign(M * N, 0.0f);
      auto dot = [&](int i, int j) { gemm_acc(ap[i]->data(), bp[j]->data(), D.data(), M, N, K); };
      if (six) {
        dot(1, 1);
        dot(2, 0);
        dot(0, 2);
      }
      dot(1, 0);
      dot(0, 1);
      zero_nans(D.data(), M * N);
      dot(0, 0);
      for (int64_t i = 0; i < M * N; ++i) C[i] = D[i] + C[i];
    }
    if (!into_d) a.store_d(C.data(), xd, M * N);
  }
}

void dot_f64(Program& p, const Step& s) {
  const auto& a = s.data<DotAux>();
  const int64_t M = a.M, N = a.N, K = a.K;
  for (int64_t bi = 0; bi < a.batch; ++bi) {
    Eigen::Map<const MatD> x(p.at<double>(s.in[0]) + bi * M * K, M, K);
    Eigen::Map<const MatD> y(p.at<double>(s.in[1]) + bi * K * N, K, N);
    Eigen::Map<const MatD> c(p.at<double>(s.in[2]) + bi * M * N, M, N);
    Eigen::Map<MatD> d(p.at<double>(s.out[0]) + bi * M * N, M, N);
    thread_local MatD tmp;
    tmp = c;
    tmp.noalias() += x * y;
    d = tmp;
  }
}

void dot_i8(Program& p, const Step& s) {
  const auto& a = s.data<DotAux>();
  const int64_t M = a.M, N = a.N, K = a.K;
  thread_local std::vector<uint32_t> acc;
  acc.resize(M * N);
  for (int64_t bi = 0; bi < a.batch; ++bi) {
    const int8_t* A = p.at<int8_t>(s.in[0]) + bi * M * K;
    const int8_t* Bm = p.at<int8_t>(s.in[1]) + bi * K * N;
    std::memcpy(acc.data(), p.at<uint32_t>(s.in[2]) + bi * M * N, M * N * 4);
    for (int64_t i = 0; i < M; ++i) {
      uint32_t* d = acc.data() + i * N;
      for (int64_t k = 0; k < K; ++k) {
        const int32_t x = A[i * K + k];
        const int8_t* b = Bm + k * N;
        for (int64_t j = 0; j < N; ++j) d[j] += static_cast<uint32_t>(x * static_cast<int32_t>(b[j]));
      }
    }
    std::memcpy(p.at<uint32_t>(s.out[0]) + bi * M * N, acc.data(), M * N * 4);
  }
}

Prec precision(const Op& op, Planner& p) {
  const ir::Attr* a = op.attr("inputPrecision");
  if (!a) return Prec::ieee;  // the default is not printed (reference §1.5)
  if (a->kind == ir::Attr::Kind::Int) {
    if (a->i >= 0 && a->i <= 4)
      return static_cast<Prec>(a->i);  // tf32(0) tf32x3(1) ieee(2) bf16x3(3) bf16x6(4)
  } else {
    static const std::pair<const char*, Prec> kNames[] = {{"tf32", Prec::tf32},
                                                          {"tf32x3", Prec::tf32x3},
                                                          {"ieee", Prec::ieee},
                                                          {"bf16x3", Prec::bf16x3},
                                                          {"bf16x6", Prec::bf16x6}};
    for (auto& [n, v] : kNames)
      if (a->s == n) return v;
  }
  p.unsupported(op, "unknown inputPrecision");
}

/// Checks [B,]M,K x [B,]K,N -> [B,]M,N and fills the geometry.
void dot_shapes(const Op& op, Planner& p, const std::vector<int64_t>& sa, const std::vector<int64_t>& sb,
                const std::vector<int64_t>& sc, const std::vector<int64_t>& sd, DotAux& a,
                int64_t ka_mult = 1, int64_t kb_mult = 1, int64_t ma_mult = 1, int64_t nb_mult = 1) {
  const size_t r = sd.size();
  if ((r != 2 && r != 3) || sa.size() != r || sb.size() != r || sc != sd)
    p.unsupported(op, "operands must be 2-D (or 3-D batched) with c and d of the same shape");
  const size_t o = r - 2;
  if (r == 3 && (sa[0] != sd[0] || sb[0] != sd[0])) p.unsupported(op, "batch dimensions differ");
  a.batch = r == 3 ? sd[0] : 1;
  a.M = sd[o];
  a.N = sd[o + 1];
  a.K = sa[o + 1] * ka_mult;
  if (sa[o] * ma_mult != a.M || sb[o] * kb_mult != a.K || sb[o + 1] * nb_mult != a.N)
    p.unsupported(op, "shapes do not form a matrix product");
}

// ---------------------------------------------------------------------------------------------
// tt.dot_scaled

enum class Fmt { e4m3, e5m2, e2m3, e3m2, e2m1, bf16, fp16 };

struct ScaledAux {
  int64_t M = 0, N = 0, K = 0;
  Fmt fa = Fmt::e4m3, fb = Fmt::e4m3;
  bool a_kpack = true, b_kpack = true;
  int ia = 0, ias = -1, ib = 0, ibs = -1, ic = 0;
  int64_t vec = 32;                                 // elements along K per scale: 32 (MX), 16 (nvfp4)
  bool a_scale_e4m3 = false, b_scale_e4m3 = false;  // scales are e4m3 values (nvfp4), else e8m0
  ToF32 load_c = nullptr;
  FromF32 store_d = nullptr;
};

float decode_fmt(Fmt f, const std::byte* base, int64_t i) {
  switch (f) {
    case Fmt::bf16: {
      uint16_t h;
      std::memcpy(&h, base + 2 * i, 2);
      return ew::bf16_to_f32(h);
    }
    case Fmt::fp16: {
      uint16_t h;
      std::memcpy(&h, base + 2 * i, 2);
      return ew::f16_to_f32(h);
    }
    case Fmt::e4m3: return fp8_lut(Elem::f8e4m3fn).v[static_cast<uint8_t>(base[i])];
    case Fmt::e5m2: return fp8_lut(Elem::f8e5m2).v[static_cast<uint8_t>(base[i])];
    case Fmt::e2m3:  // fp6: no inf / NaN
      return decode_minifloat(static_cast<uint8_t>(base[i]), 2, 3, 1, false, false, false);
    case Fmt::e3m2: return decode_minifloat(static_cast<uint8_t>(base[i]), 3, 2, 3, false, false, false);
    case Fmt::e2m1: break;
  }
  assert(false && "e2m1 packs two elements per byte: dot_scaled_run decodes it with fp4");
  return 0.0f;
}

inline float fp4(uint8_t nib) { return decode_minifloat(nib, 2, 1, 1, false, false, false); }

inline float e8m0(uint8_t s) {
  if (s == 255) return NAN;
  if (s == 0) return 0.0f;  // measured on sm_90 (see the header comment)
  return std::ldexp(1.0f, static_cast<int>(s) - 127);
}

inline float scale_value(bool e4m3, std::byte s) {
  return e4m3 ? fp8_lut(Elem::f8e4m3fn).v[static_cast<uint8_t>(s)] : e8m0(static_cast<uint8_t>(s));
}

void dot_scaled_run(Program& p, const Step& s) {
  const auto& a = s.data<ScaledAux>();
  const int64_t M = a.M, N = a.N, K = a.K;
  thread_local std::vector<float> A, Bm, C;
  A.resize(M * K);
  Bm.resize(K * N);
  C.resize(M * N);
  const std::byte* pa = p.slot[s.in[a.ia]];
  const std::byte* pb = p.slot[s.in[a.ib]];
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) {
      float v;
      if (a.fa == Fmt::e2m1) {
        uint8_t byte = a.a_kpack ? static_cast<uint8_t>(pa[m * (K / 2) + k / 2])
                                 : static_cast<uint8_t>(pa[(m / 2) * K + k]);
        int sh = a.a_kpack ? (k & 1) * 4 : (m & 1) * 4;
        v = fp4((byte >> sh) & 15);
      } else {
        v = decode_fmt(a.fa, pa, m * K + k);
      }
      if (a.ias >= 0) v *= scale_value(a.a_scale_e4m3, p.slot[s.in[a.ias]][m * (K / a.vec) + k / a.vec]);
      A[m * K + k] = v;
    }
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n) {
      float v;
      if (a.fb == Fmt::e2m1) {
        uint8_t byte = a.b_kpack ? static_cast<uint8_t>(pb[(k / 2) * N + n])
                                 : static_cast<uint8_t>(pb[k * (N / 2) + n / 2]);
        int sh = a.b_kpack ? (k & 1) * 4 : (n & 1) * 4;
        v = fp4((byte >> sh) & 15);
      } else {
        v = decode_fmt(a.fb, pb, k * N + n);
      }
      if (a.ibs >= 0) v *= scale_value(a.b_scale_e4m3, p.slot[s.in[a.ibs]][n * (K / a.vec) + k / a.vec]);
      Bm[k * N + n] = v;
    }
  a.load_c(p.slot[s.in[a.ic]], C.data(), M * N);
  gemm_acc(A.data(), Bm.data(), C.data(), M, N, K);
  a.store_d(C.data(), p.slot[s.out[0]], M * N);
}

Fmt scaled_fmt(const Op& op, Planner& p, std::initializer_list<const char*> names) {
  for (const char* nm : names) {
    const ir::Attr* a = op.attr(nm);
    if (!a) continue;
    if (a->kind == ir::Attr::Kind::Int) {
      if (a->i >= 0 && a->i <= 6)
        return static_cast<Fmt>(a->i);  // e4m3(0) e5m2(1) e2m3(2) e3m2(3) e2m1(4) bf16(5) fp16(6)
    } else {
      static const std::pair<const char*, Fmt> kNames[] = {
          {"e4m3", Fmt::e4m3}, {"e5m2", Fmt::e5m2}, {"e2m3", Fmt::e2m3}, {"e3m2", Fmt::e3m2},
          {"e2m1", Fmt::e2m1}, {"bf16", Fmt::bf16}, {"fp16", Fmt::fp16}};
      for (auto& [n, v] : kNames)
        if (a->s == n) return v;
    }
    p.unsupported(op, std::string("unknown element type in '") + nm + "'");
  }
  p.unsupported(op, "missing element type attribute");
}

bool bool_attr(const Op& op, const char* name, bool dflt) {
  const ir::Attr* a = op.attr(name);
  if (!a) return dflt;
  if (a->kind == ir::Attr::Kind::Bool) return a->b;
  if (a->kind == ir::Attr::Kind::Int) return a->i != 0;
  if (a->kind == ir::Attr::Kind::Unit) return true;
  return dflt;
}

}  // namespace

void lower_dot(const Op& op, Planner& p, Step& s) {
  if (s.in.size() != 3 || s.out.size() != 1) p.unsupported(op, "expected a, b, c and one result");
  auto a = std::make_shared<DotAux>();
  const ir::Type *ta = s.in_types[0], *tb = s.in_types[1], *tc = s.in_types[2], *td = s.out_types[0];
  dot_shapes(op, p, ta->shape, tb->shape, tc->shape, td->shape, *a);
  if (tc->elem != td->elem) p.unsupported(op, "c and d element types differ");
  a->prec = precision(op, p);
  const Elem ea = ta->elem, eb = tb->elem, ed = td->elem;
  if (ea == Elem::i8 || eb == Elem::i8) {
    if (ea != Elem::i8 || eb != Elem::i8 || ed != Elem::i32)
      p.unsupported(op, "integer dot needs i8 x i8 -> i32");
    s.aux = a;
    s.fn = &dot_i8;
    return;
  }
  if (ed == Elem::f64 || ea == Elem::f64 || eb == Elem::f64) {
    if (ea != Elem::f64 || eb != Elem::f64 || ed != Elem::f64)
      p.unsupported(op, "f64 dot needs f64 x f64 -> f64");
    s.aux = a;
    s.fn = &dot_f64;
    return;
  }
  a->load_a = to_f32_for(ea);
  a->load_b = to_f32_for(eb);
  a->load_c = to_f32_for(ed);
  a->store_d = from_f32_for(ed);
  if (!a->load_a || !a->load_b || !a->load_c || !a->store_d)
    p.unsupported(op, fmt::format("no kernel for {} x {} -> {}", ta->str(), tb->str(), td->str()));
  a->bytes_a = ir::elem_bytes(ea);
  a->bytes_b = ir::elem_bytes(eb);
  a->bytes_c = a->bytes_d = ir::elem_bytes(ed);
  // inputPrecision only matters for f32 x f32 (the CUDA default tf32 is printed on f16/i8 dots too).
  a->f32_inputs = ea == Elem::f32 && eb == Elem::f32;
  a->f32_out = ed == Elem::f32;
  s.aux = a;
  s.fn = &dot_f32;
}

void lower_dot_scaled(const Op& op, Planner& p, Step& s) {
  const size_t n = s.in.size();
  if (n < 3 || n > 5 || s.out.size() != 1)
    p.unsupported(op, "expected a[, a_scale], b[, b_scale], c and one result");
  auto a = std::make_shared<ScaledAux>();
  bool has_as = false, has_bs = false;
  const ir::Attr* seg = op.attr("operandSegmentSizes");
  if (seg && seg->kind == ir::Attr::Kind::IntArray && seg->ints.size() == 5) {
    has_as = seg->ints[1] != 0;
    has_bs = seg->ints[3] != 0;
  } else if (n == 5) {
    has_as = has_bs = true;
  } else if (n == 4) {
    // (a, a_scale, b, c) or (a, b, b_scale, c): a_scale is [M, K/32], b is [K(/2), N], b_scale [N, K/32].
    const auto& cs = s.in_types[3]->shape;
    const auto& s1 = s.in_types[1]->shape;
    const auto& s2 = s.in_types[2]->shape;
    if (cs.size() != 2 || s1.size() != 2 || s2.size() != 2) p.unsupported(op, "operands must be 2-D");
    bool x = s1[0] == cs[0] && s2[1] == cs[1];
    bool y = s1[1] == cs[1] && s2[0] == cs[1];
    if (x == y)
      p.unsupported(op, "cannot tell which operand is scaled; write the op with operandSegmentSizes");
    has_as = x;
    has_bs = y;
  }
  int i = 0;
  a->ia = i++;
  a->ias = has_as ? i++ : -1;
  a->ib = i++;
  a->ibs = has_bs ? i++ : -1;
  a->ic = i++;
  if (static_cast<size_t>(i) != n) p.unsupported(op, "operand count does not match operandSegmentSizes");
  a->fa = scaled_fmt(op, p, {"a_elem_type", "lhs_type", "lhs"});
  a->fb = scaled_fmt(op, p, {"b_elem_type", "rhs_type", "rhs"});
  a->a_kpack = bool_attr(op, "lhs_k_pack", true);
  a->b_kpack = bool_attr(op, "rhs_k_pack", true);
  const auto& sa = s.in_types[a->ia]->shape;
  const auto& sb = s.in_types[a->ib]->shape;
  const auto& sc = s.in_types[a->ic]->shape;
  const auto& sd = s.out_types[0]->shape;
  if (sd.size() != 2) p.unsupported(op, "only 2-D dot_scaled is supported");
  DotAux g;
  const bool a4 = a->fa == Fmt::e2m1, b4 = a->fb == Fmt::e2m1;
  dot_shapes(op, p, sa, sb, sc, sd, g, a4 && a->a_kpack ? 2 : 1, b4 && a->b_kpack ? 2 : 1,
             a4 && !a->a_kpack ? 2 : 1, b4 && !a->b_kpack ? 2 : 1);
  a->M = g.M;
  a->N = g.N;
  a->K = g.K;
  auto storage_ok = [](Fmt f, const ir::Type* t) {
    int b = ir::elem_bytes(t->elem);
    return (f == Fmt::bf16 || f == Fmt::fp16) ? b == 2 : b == 1;
  };
  if (!storage_ok(a->fa, s.in_types[a->ia]) || !storage_ok(a->fb, s.in_types[a->ib]))
    p.unsupported(op, "operand storage does not match its element type");
  // One scale per 32 elements along K (MX formats, e8m0 scales) or per 16 (nvfp4, e4m3 scales): the
  // group size is K over the scale's columns.
  if (has_as || has_bs) {
    const auto& ss = s.in_types[has_as ? a->ias : a->ibs]->shape;
    if (ss.size() == 2 && ss[1] > 0 && a->K % ss[1] == 0) a->vec = a->K / ss[1];
    if (a->vec != 32 && a->vec != 16) a->vec = 32;  // reported by the shape checks below
  }
  if (a->K % a->vec != 0 && (has_as || has_bs)) p.unsupported(op, "K must be a multiple of 32 with scales");
  auto scale_ok = [&](int i, int64_t rows) {
    const ir::Type* t = s.in_types[i];
    return t->shape == std::vector<int64_t>{rows, a->K / a->vec} && ir::elem_bytes(t->elem) == 1;
  };
  if (has_as && !scale_ok(a->ias, a->M)) p.unsupported(op, "a_scale must be [M, K/32] or [M, K/16] bytes");
  if (has_bs && !scale_ok(a->ibs, a->N)) p.unsupported(op, "b_scale must be [N, K/32] or [N, K/16] bytes");
  a->a_scale_e4m3 = has_as && s.in_types[a->ias]->elem == Elem::f8e4m3fn;
  a->b_scale_e4m3 = has_bs && s.in_types[a->ibs]->elem == Elem::f8e4m3fn;
  const Elem ed = s.out_types[0]->elem;
  if (s.in_types[a->ic]->elem != ed) p.unsupported(op, "c and d element types differ");
  a->load_c = to_f32_for(ed);
  a->store_d = from_f32_for(ed);
  if (!a->load_c || !a->store_d) p.unsupported(op, "the result must be f32, f16 or bf16");
  s.aux = a;
  s.fn = &dot_scaled_run;
}

}  // namespace tilescope::ops
