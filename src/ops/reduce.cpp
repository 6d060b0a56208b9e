// Reduction family kernels (see ops.h): tt.reduce, tt.scan, tt.map_elementwise (reference §1.1, §1.5).
//
// tt.reduce and tt.scan carry a combine region (entry block: N accumulators then N new values,
// ending in tt.reduce.return / tt.scan.return). A region that is one arith op of its two arguments
// (addf, maxnumf, xori, ...) runs as a tight typed loop; anything else (argmax, user combine
// functions) runs the region per element pair through Program::run.
//
// Order of combination:
// * reduce: a pairwise tree over the reduced axis, adjacent elements first:
//   ((x0+x1)+(x2+x3))+... (acc = left operand). The GPU also reduces as a tree, but each thread
//   first folds its own contiguous elements (sizePerThread) sequentially. Measured on an H200
//   (triton 3.6, f16 tl.sum of ones with one 2048): n = 16 and 128 match this tree bit for bit;
//   n = 1024 (8 elements per thread) gives 3064 on the GPU and 3070 here. Float sums of tiles larger
//   than the number of threads may therefore differ in the last bits.
// * scan: inclusive, sequential along the axis (from the end when `reverse`), acc = left operand.
// * f16/bf16 combines round to the element type after every combine, as the GPU's f16 arithmetic
//   does (one f32 op then one RTNE rounding is exact for add/mul of f16/bf16: 24 >= 2*11+2).
#include <bit>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "elementwise.h"
#include "ops.h"

namespace tilescope::ops {

namespace {

using exec::Program;

// ---------------------------------------------------------------------------------------------
// Geometry: src viewed as [outer, len, inner], reduced / scanned over len.

struct Geometry {
  int64_t outer = 1, len = 1, inner = 1;
};

Geometry geometry(const std::vector<int64_t>& shape, int64_t axis) {
  Geometry g;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < axis)
      g.outer *= shape[d];
    else if (d == axis)
      g.len = shape[d];
    else
      g.inner *= shape[d];
  }
  return g;
}

// ---------------------------------------------------------------------------------------------
// Combine functors on compute values. Float min/max follow arith (reference §5.2):
// maxnumf/minnumf are IEEE maxNum/minNum (a NaN operand loses), maximumf/minimumf propagate NaN;
// both order -0 below +0.

// Written with selects only (no branches) so the compiler can vectorise the reduction loops.
// Equal operands are the same value or +-0: for those, AND of the bits is the max (+0 wins) and
// OR the min (-0 wins).
template <class C>
using Bits = std::conditional_t<sizeof(C) == 4, uint32_t, uint64_t>;
template <class C>
inline C and_bits(C a, C b) {
  return std::bit_cast<C>(std::bit_cast<Bits<C>>(a) & std::bit_cast<Bits<C>>(b));
}
template <class C>
inline C or_bits(C a, C b) {
  return std::bit_cast<C>(std::bit_cast<Bits<C>>(a) | std::bit_cast<Bits<C>>(b));
}

template <class C>
inline C fmax_num(C a, C b) {
  C r = a > b ? a : b;  // a NaN operand: b
  r = a == b ? and_bits(a, b) : r;
  return b != b ? a : r;  // b NaN: a (NaN only if both are)
}
template <class C>
inline C fmin_num(C a, C b) {
  C r = a < b ? a : b;
  r = a == b ? or_bits(a, b) : r;
  return b != b ? a : r;
}
template <class C>
inline C fmax_prop(C a, C b) {
  C r = a > b ? a : b;
  r = a == b ? and_bits(a, b) : r;
  return (a != a || b != b) ? a + b : r;  // NaN propagates
}
template <class C>
inline C fmin_prop(C a, C b) {
  C r = a < b ? a : b;
  r = a == b ? or_bits(a, b) : r;
  return (a != a || b != b) ? a + b : r;
}

enum class Fast {
  none,
  addf,
  mulf,
  maxnumf,
  minnumf,
  maximumf,
  minimumf,
  addi,
  muli,
  maxsi,
  minsi,
  maxui,
  minui,
  andi,
  ori,
  xori
};

Fast fast_kind(ir::Opcode code) {
  using ir::Opcode;
  static constexpr std::pair<Opcode, Fast> kMap[] = {
      {Opcode::arith_addf, Fast::addf},         {Opcode::arith_mulf, Fast::mulf},
      {Opcode::arith_maxnumf, Fast::maxnumf},   {Opcode::arith_minnumf, Fast::minnumf},
      {Opcode::arith_maximumf, Fast::maximumf}, {Opcode::arith_minimumf, Fast::minimumf},
      {Opcode::arith_addi, Fast::addi},         {Opcode::arith_muli, Fast::muli},
      {Opcode::arith_maxsi, Fast::maxsi},       {Opcode::arith_minsi, Fast::minsi},
      {Opcode::arith_maxui, Fast::maxui},       {Opcode::arith_minui, Fast::minui},
      {Opcode::arith_andi, Fast::andi},         {Opcode::arith_ori, Fast::ori},
      {Opcode::arith_xori, Fast::xori}};
  return pick(code, kMap);
}

/// The even and the odd lanes of the 2W lanes lo, hi (W = 2, 4 or 8 lanes per register).
template <class V>
std::pair<V, V> even_odd(V lo, V hi) {
  constexpr size_t W = sizeof(V) / sizeof(lo[0]);
  if constexpr (W == 8)
    return {__builtin_shufflevector(lo, hi, 0, 2, 4, 6, 8, 10, 12, 14),
            __builtin_shufflevector(lo, hi, 1, 3, 5, 7, 9, 11, 13, 15)};
  else if constexpr (W == 4)
    return {__builtin_shufflevector(lo, hi, 0, 2, 4, 6), __builtin_shufflevector(lo, hi, 1, 3, 5, 7)};
  else
    return {__builtin_shufflevector(lo, hi, 0, 2), __builtin_shufflevector(lo, hi, 1, 3)};
}

/// Float combine with storage trait `Tr` (values kept as compute type, rounded to the storage format
/// after add/mul; min/max return an operand and need no rounding).
template <class Tr, Fast K>
struct FloatOp {
  using C = typename Tr::C;
  // max/min are associative and commutative (NaN and +-0 rules included), so any order gives
  // the tree's result, except which NaN's bits come out when a row holds NaNs of different payloads
  // (the GPU gives its canonical NaN); sums and products keep the tree order.
  static constexpr bool kOrderFree = K != Fast::addf && K != Fast::mulf;
  static C round(C v) {
    if constexpr (std::is_same_v<typename Tr::S, C>)
      return v;
    else
      return Tr::load(Tr::store(v));
  }
  static C apply(C a, C b) {
    if constexpr (K == Fast::addf)
      return round(a + b);
    else if constexpr (K == Fast::mulf)
      return round(a * b);
    else if constexpr (K == Fast::maxnumf)
      return fmax_num(a, b);
    else if constexpr (K == Fast::minnumf)
      return fmin_num(a, b);
    else if constexpr (K == Fast::maximumf)
      return fmax_prop(a, b);
    else
      return fmin_prop(a, b);
  }

  // The order-free combines of f32 / f64 data on a SIMD register of lanes at once (GCC vector types:
  // a compare gives a lane mask, `?:` selects lane by lane), the same lane results as apply.
#ifdef __AVX2__
  static constexpr int kVecBytes = 32;
#else
  static constexpr int kVecBytes = 16;
#endif
  using VF32 = float __attribute__((vector_size(kVecBytes)));
  using VF64 = double __attribute__((vector_size(kVecBytes)));
  using VI32 = int32_t __attribute__((vector_size(kVecBytes)));
  using VI64 = int64_t __attribute__((vector_size(kVecBytes)));
  /// Whether vec_apply exists: f32 / f64 data stored as the compute type (no rounding step); kVector
  /// for the order-free min/max, kVectorTree for sums and products (in the tree's order).
  static constexpr bool kVectorData =
      std::is_same_v<typename Tr::S, C> && (std::is_same_v<C, float> || std::is_same_v<C, double>);
  static constexpr bool kVector = kOrderFree && kVectorData;
  static constexpr bool kVectorTree = !kOrderFree && kVectorData;
  using V = std::conditional_t<sizeof(C) == 4, VF32, VF64>;
  using VI = std::conditional_t<sizeof(C) == 4, VI32, VI64>;
  static constexpr int64_t kLanes = kVecBytes / sizeof(C);
  static V vec_apply(V a, V b) {
    if constexpr (K == Fast::addf)
      return a + b;
    else if constexpr (K == Fast::mulf)
      return a * b;
    const VI ia = std::bit_cast<VI>(a), ib = std::bit_cast<VI>(b);
    V r;
    if constexpr (K == Fast::maxnumf || K == Fast::maximumf) {
      r = a > b ? a : b;
      const VI both = ia & ib;  // max(+0, -0) = +0
      r = a == b ? std::bit_cast<V>(both) : r;
    } else {
      r = a < b ? a : b;
      const VI either = ia | ib;  // min(+0, -0) = -0
      r = a == b ? std::bit_cast<V>(either) : r;
    }
    if constexpr (K == Fast::maxnumf || K == Fast::minnumf)
      return b != b ? a : r;  // b NaN: a (NaN only if both are)
    else
      return ((a != a) | (b != b)) ? a + b : r;  // NaN propagates
  }
};

/// Integer combine on storage type U (unsigned, wrapping); signed min/max via the signed type.
/// i1 (stored 0/1) maps every op to its one-bit meaning: addi = xor, muli = and, and as a signed
/// 1-bit number 1 is -1, so maxsi = and, minsi = or.
template <class U, bool I1, Fast K>
struct IntOp {
  using C = U;
  static constexpr bool kOrderFree = true;  // wrapping integer ops are associative and commutative
  using Sg = std::make_signed_t<U>;
  static C apply(C a, C b) {
    if constexpr (I1) {
      if constexpr (K == Fast::addi || K == Fast::xori)
        return a ^ b;
      else if constexpr (K == Fast::muli || K == Fast::andi || K == Fast::maxsi || K == Fast::minui)
        return a & b;
      else
        return a | b;  // ori, minsi, maxui
    } else {
      if constexpr (K == Fast::addi)
        return static_cast<U>(a + b);
      else if constexpr (K == Fast::muli)
        return static_cast<U>(a * b);
      else if constexpr (K == Fast::maxsi)
        return static_cast<Sg>(a) > static_cast<Sg>(b) ? a : b;
      else if constexpr (K == Fast::minsi)
        return static_cast<Sg>(a) < static_cast<Sg>(b) ? a : b;
      else if constexpr (K == Fast::maxui)
        return a > b ? a : b;
      else if constexpr (K == Fast::minui)
        return a < b ? a : b;
      else if constexpr (K == Fast::andi)
        return a & b;
      else if constexpr (K == Fast::ori)
        return a | b;
      else
        return a ^ b;
    }
  }
};

template <class U, bool I1>
struct IntTr {
  using S = U;
  using C = U;
  static C load(S s) { return s; }
  static S store(C c) { return c; }
};

// ---------------------------------------------------------------------------------------------
// Fast reduce / scan

template <class Tr, class Op>
void reduce_fast(Program& p, const Step& s) {
  using S = typename Tr::S;
  using C = typename Tr::C;
  const auto& g = s.data<Geometry>();
  const S* x = p.at<S>(s.in[0]);
  S* out = p.at<S>(s.out[0]);
  thread_local std::vector<C> buf;
  buf.resize(static_cast<size_t>(g.len * g.inner));
  for (int64_t o = 0; o < g.outer; ++o) {
    const S* src = x + o * g.len * g.inner;
    if constexpr (requires { Op::kVector; }) {
      if constexpr (Op::kVector) {
        // Four registers of accumulators over contiguous data, then their lanes combined by apply
        // (order-free: any order gives the same result).
        using V = typename Op::V;
        constexpr int64_t W = Op::kLanes;
        if (g.inner == 1 && g.len >= 4 * W) {
          V acc[4];
          std::memcpy(acc, src, sizeof acc);
          int64_t i = 4 * W;
          for (; i + 4 * W <= g.len; i += 4 * W)
            for (int j = 0; j < 4; ++j) {
              V v;
              std::memcpy(&v, src + i + j * W, sizeof v);
              acc[j] = Op::vec_apply(acc[j], v);
            }
          C r = src[i < g.len ? i : 0];
          for (; i < g.len; ++i) r = Op::apply(r, src[i]);
          for (int j = 0; j < 4; ++j)
            for (int64_t l = 0; l < W; ++l) r = Op::apply(r, acc[j][l]);
          out[o] = Tr::store(r);
          continue;
        }
      }
    }
    if constexpr (Op::kOrderFree) {
      if (g.inner == 1 && g.len >= 16) {
        // Order does not matter: 16 independent accumulators over contiguous data vectorise.
        C acc[16];
        for (int j = 0; j < 16; ++j) acc[j] = Tr::load(src[j]);
        int64_t i = 16;
        for (; i + 16 <= g.len; i += 16)
          for (int j = 0; j < 16; ++j) acc[j] = Op::apply(acc[j], Tr::load(src[i + j]));
        for (; i < g.len; ++i) acc[0] = Op::apply(acc[0], Tr::load(src[i]));
        for (int w = 8; w >= 1; w /= 2)
          for (int j = 0; j < w; ++j) acc[j] = Op::apply(acc[j], acc[j + w]);
        out[o] = Tr::store(acc[0]);
        continue;
      }
    }
    for (int64_t i = 0; i < g.len * g.inner; ++i) buf[i] = Tr::load(src[i]);
    if (g.inner == 1) {
      // The same tree, level by level with the partial results compacted to the front, so each
      // level is a contiguous loop: c[i] = x[2i] op x[2i+1] (an odd last element moves up as is).
      C* b = buf.data();
      for (int64_t n = g.len; n > 1;) {
        const int64_t h = n / 2;
        int64_t i = 0;
        if constexpr (requires { Op::kVectorTree; }) {
          if constexpr (Op::kVectorTree) {
            // A register of outputs at a time: the even and odd lanes of two registers of inputs,
            // combined lane by lane (the same pairs; each write lands below the reads still to come).
            using V = typename Op::V;
            constexpr int64_t W = Op::kLanes;
            for (; i + W <= h; i += W) {
              V lo, hi;
              std::memcpy(&lo, b + 2 * i, sizeof lo);
              std::memcpy(&hi, b + 2 * i + W, sizeof hi);
              const auto [even, odd] = even_odd(lo, hi);
              const V r = Op::vec_apply(even, odd);
              std::memcpy(b + i, &r, sizeof r);
            }
          }
        }
        for (; i < h; ++i) b[i] = Op::apply(b[2 * i], b[2 * i + 1]);
        if (n & 1) b[h] = b[n - 1];
        n = h + (n & 1);
      }
      out[o] = Tr::store(b[0]);
      continue;
    }
    // Pairwise tree over rows of `inner` values: row k absorbs row k + step.
    for (int64_t step = 1; step < g.len; step *= 2)
      for (int64_t k = 0; k + step < g.len; k += 2 * step) {
        C* a = buf.data() + k * g.inner;
        const C* b = buf.data() + (k + step) * g.inner;
        for (int64_t i = 0; i < g.inner; ++i) a[i] = Op::apply(a[i], b[i]);
      }
    for (int64_t i = 0; i < g.inner; ++i) out[o * g.inner + i] = Tr::store(buf[i]);
  }
}

struct ScanGeometry {
  Geometry g;
  bool reverse = false;
};

template <class Tr, class Op>
void scan_fast(Program& p, const Step& s) {
  using S = typename Tr::S;
  using C = typename Tr::C;
  const auto& sg = s.data<ScanGeometry>();
  const auto& g = sg.g;
  const S* x = p.at<S>(s.in[0]);
  S* out = p.at<S>(s.out[0]);
  thread_local std::vector<C> acc;
  acc.resize(static_cast<size_t>(g.inner));
  for (int64_t o = 0; o < g.outer; ++o) {
    const int64_t base = o * g.len * g.inner;
    for (int64_t t = 0; t < g.len; ++t) {
      const int64_t k = sg.reverse ? g.len - 1 - t : t;
      const S* row = x + base + k * g.inner;
      S* orow = out + base + k * g.inner;
      if (t == 0) {
        for (int64_t i = 0; i < g.inner; ++i) {
          acc[i] = Tr::load(row[i]);
          orow[i] = row[i];
        }
      } else {
        for (int64_t i = 0; i < g.inner; ++i) {
          acc[i] = Op::apply(acc[i], Tr::load(row[i]));
          orow[i] = Tr::store(acc[i]);
        }
      }
    }
  }
}

template <bool Scan, class Tr, class Op>
exec::KernelFn pick() {
  if constexpr (Scan)
    return &scan_fast<Tr, Op>;
  else
    return &reduce_fast<Tr, Op>;
}

template <bool Scan, class Tr>
exec::KernelFn pick_float(Fast k) {
  switch (k) {
    case Fast::addf: return pick<Scan, Tr, FloatOp<Tr, Fast::addf>>();
    case Fast::mulf: return pick<Scan, Tr, FloatOp<Tr, Fast::mulf>>();
    case Fast::maxnumf: return pick<Scan, Tr, FloatOp<Tr, Fast::maxnumf>>();
    case Fast::minnumf: return pick<Scan, Tr, FloatOp<Tr, Fast::minnumf>>();
    case Fast::maximumf: return pick<Scan, Tr, FloatOp<Tr, Fast::maximumf>>();
    case Fast::minimumf: return pick<Scan, Tr, FloatOp<Tr, Fast::minimumf>>();
    case Fast::none:
    case Fast::addi:
    case Fast::muli:
    case Fast::maxsi:
    case Fast::minsi:
    case Fast::maxui:
    case Fast::minui:
    case Fast::andi:
    case Fast::ori:
    case Fast::xori: return nullptr;  // not a float combine: the generic kernel runs it
  }
  return nullptr;
}

template <bool Scan, class U, bool I1>
exec::KernelFn pick_int(Fast k) {
  using Tr = IntTr<U, I1>;
  switch (k) {
    case Fast::addi: return pick<Scan, Tr, IntOp<U, I1, Fast::addi>>();
    case Fast::muli: return pick<Scan, Tr, IntOp<U, I1, Fast::muli>>();
    case Fast::maxsi: return pick<Scan, Tr, IntOp<U, I1, Fast::maxsi>>();
    case Fast::minsi: return pick<Scan, Tr, IntOp<U, I1, Fast::minsi>>();
    case Fast::maxui: return pick<Scan, Tr, IntOp<U, I1, Fast::maxui>>();
    case Fast::minui: return pick<Scan, Tr, IntOp<U, I1, Fast::minui>>();
    case Fast::andi: return pick<Scan, Tr, IntOp<U, I1, Fast::andi>>();
    case Fast::ori: return pick<Scan, Tr, IntOp<U, I1, Fast::ori>>();
    case Fast::xori: return pick<Scan, Tr, IntOp<U, I1, Fast::xori>>();
    case Fast::none:
    case Fast::addf:
    case Fast::mulf:
    case Fast::maxnumf:
    case Fast::minnumf:
    case Fast::maximumf:
    case Fast::minimumf: return nullptr;  // not an integer combine: the generic kernel runs it
  }
  return nullptr;
}

template <bool Scan>
exec::KernelFn pick_fast(ir::Elem e, Fast k) {
  using ir::Elem;
  switch (e) {
    case Elem::f16: return pick_float<Scan, ew::F16>(k);
    case Elem::bf16: return pick_float<Scan, ew::BF16>(k);
    case Elem::f32: return pick_float<Scan, ew::F32>(k);
    case Elem::f64: return pick_float<Scan, ew::F64>(k);
    case Elem::i1: return pick_int<Scan, uint8_t, true>(k);
    case Elem::i8: return pick_int<Scan, uint8_t, false>(k);
    case Elem::i16: return pick_int<Scan, uint16_t, false>(k);
    case Elem::i32: return pick_int<Scan, uint32_t, false>(k);
    case Elem::i64: return pick_int<Scan, uint64_t, false>(k);
    case Elem::f8e4m3fn:
    case Elem::f8e5m2:
    case Elem::f8e4m3fnuz:
    case Elem::f8e5m2fnuz:
    case Elem::ptr:
    case Elem::tensordesc:
    case Elem::none: return nullptr;  // no fast kernel: the generic kernel runs the region
  }
  return nullptr;
}

/// The single-op combine of a one-operand reduce/scan region, or Fast::none.
Fast recognise(const Op& op) {
  if (op.operands.size() != 1 || op.regions.size() != 1) return Fast::none;
  const ir::Region& r = *op.regions[0];
  if (r.blocks.size() != 1) return Fast::none;
  const ir::Block& b = *r.blocks[0];
  if (b.args.size() != 2 || b.ops.size() != 2) return Fast::none;
  const ir::Op& c = *b.ops[0];
  const ir::Op& t = *b.ops[1];
  Fast k = fast_kind(c.code());
  if (k == Fast::none || c.operands.size() != 2 || c.results.size() != 1) return Fast::none;
  if (!(c.operands[0] == b.args[0].get() && c.operands[1] == b.args[1].get()) &&
      !(c.operands[0] == b.args[1].get() && c.operands[1] == b.args[0].get()))
    return Fast::none;  // all the fast ops are commutative, so either order is the same op
  if (t.operands.size() != 1 || t.operands[0] != c.result(0)) return Fast::none;
  if (c.result(0)->type->elem != op.operands[0]->type->elem) return Fast::none;
  return k;
}

// ---------------------------------------------------------------------------------------------
// Generic reduce / scan: the combine region runs per pair of elements.

struct GenericAux {
  Geometry g;
  bool reverse = false;
  std::vector<int> bytes;  // element storage size of each operand
};

/// Run the combine region on (acc[j], x[j]) for all operands j; results go back into acc. Returns
/// false when the program was halted (the launch is stopping): the caller returns at once.
inline bool combine(Program& p, const Step& s, const std::vector<int>& bytes, std::byte* const* acc,
                    const std::byte* const* x) {
  const exec::RegionPlan& r = s.regions[0];
  const auto& args = r.blocks[0].args;
  const size_t n = bytes.size();
  for (size_t j = 0; j < n; ++j) {
    std::memcpy(p.slot[args[j]], acc[j], bytes[j]);
    std::memcpy(p.slot[args[n + j]], x[j], bytes[j]);
  }
  const exec::Terminator& t = p.run(r);
  if (p.halted) return false;
  for (size_t j = 0; j < n; ++j) std::memcpy(acc[j], p.slot[t.operands[j]], bytes[j]);
  return true;
}

void reduce_generic(Program& p, const Step& s) {
  const auto& a = s.data<GenericAux>();
  const auto& g = a.g;
  const size_t n = a.bytes.size();
  thread_local std::vector<std::vector<std::byte>> bufs;
  if (bufs.size() < n) bufs.resize(n);
  std::vector<std::byte*> accp(n);
  std::vector<const std::byte*> xp(n);
  const int64_t row = g.len * g.inner;
  for (size_t j = 0; j < n; ++j) bufs[j].resize(static_cast<size_t>(row * a.bytes[j]));
  for (int64_t o = 0; o < g.outer; ++o) {
    for (size_t j = 0; j < n; ++j)
      std::memcpy(bufs[j].data(), p.slot[s.in[j]] + o * row * a.bytes[j],
                  static_cast<size_t>(row * a.bytes[j]));
    for (int64_t step = 1; step < g.len; step *= 2)
      for (int64_t k = 0; k + step < g.len; k += 2 * step)
        for (int64_t i = 0; i < g.inner; ++i) {
          for (size_t j = 0; j < n; ++j) {
            accp[j] = bufs[j].data() + (k * g.inner + i) * a.bytes[j];
            xp[j] = bufs[j].data() + ((k + step) * g.inner + i) * a.bytes[j];
          }
          if (!combine(p, s, a.bytes, accp.data(), xp.data())) return;
        }
    for (size_t j = 0; j < n; ++j)
      std::memcpy(p.slot[s.out[j]] + o * g.inner * a.bytes[j], bufs[j].data(),
                  static_cast<size_t>(g.inner * a.bytes[j]));
  }
}

void scan_generic(Program& p, const Step& s) {
  const auto& a = s.data<GenericAux>();
  const auto& g = a.g;
  const size_t n = a.bytes.size();
  thread_local std::vector<std::vector<std::byte>> accs;
  if (accs.size() < n) accs.resize(n);
  std::vector<std::byte*> accp(n);
  std::vector<const std::byte*> xp(n);
  for (size_t j = 0; j < n; ++j) accs[j].resize(static_cast<size_t>(a.bytes[j]));
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t i = 0; i < g.inner; ++i)
      for (int64_t t = 0; t < g.len; ++t) {
        const int64_t k = a.reverse ? g.len - 1 - t : t;
        const int64_t e = (o * g.len + k) * g.inner + i;
        for (size_t j = 0; j < n; ++j) {
          const std::byte* x = p.slot[s.in[j]] + e * a.bytes[j];
          if (t == 0) std::memcpy(accs[j].data(), x, a.bytes[j]);
          accp[j] = accs[j].data();
          xp[j] = x;
        }
        if (t > 0 && !combine(p, s, a.bytes, accp.data(), xp.data())) return;
        for (size_t j = 0; j < n; ++j)
          std::memcpy(p.slot[s.out[j]] + e * a.bytes[j], accs[j].data(), a.bytes[j]);
      }
}

int64_t axis_attr(const Op& op, Planner& p, int rank) {
  const ir::Attr* a = op.attr("axis");
  if (!a || a->kind != ir::Attr::Kind::Int) p.unsupported(op, "missing integer attribute 'axis'");
  if (a->i < 0 || a->i >= rank) p.unsupported(op, "axis " + std::to_string(a->i) + " is out of range");
  return a->i;
}

/// Checks shared by reduce and scan; returns the generic-path data.
std::shared_ptr<GenericAux> check_combine(const Op& op, Planner& p, Step& s, bool scan) {
  const size_t n = s.in.size();
  if (n == 0 || s.out.size() != n) p.unsupported(op, "needs as many results as operands");
  if (s.regions.size() != 1 || s.regions[0].blocks.empty()) p.unsupported(op, "missing combine region");
  const exec::BlockPlan& entry = s.regions[0].blocks[0];
  if (entry.args.size() != 2 * n) p.unsupported(op, "the combine region must take 2 x operands arguments");
  const auto& shape = s.in_types[0]->shape;
  for (size_t j = 0; j < n; ++j) {
    if (s.in_types[j]->shape != shape) p.unsupported(op, "operands must have the same shape");
    int b = ir::elem_bytes(s.in_types[j]->elem);
    if (b <= 0 || s.in_types[j]->is_block_ptr()) p.unsupported(op, "operand element type cannot be combined");
  }
  auto a = std::make_shared<GenericAux>();
  int64_t axis = axis_attr(op, p, static_cast<int>(shape.size()));
  a->g = geometry(shape, axis);
  for (size_t j = 0; j < n; ++j) a->bytes.push_back(ir::elem_bytes(s.in_types[j]->elem));
  if (scan) {
    const ir::Attr* r = op.attr("reverse");
    a->reverse = r && ((r->kind == ir::Attr::Kind::Bool && r->b) ||
                       (r->kind == ir::Attr::Kind::Int && r->i != 0) || r->kind == ir::Attr::Kind::Unit);
  }
  int64_t expect = scan ? s.in_types[0]->numel() : s.in_types[0]->numel() / std::max<int64_t>(a->g.len, 1);
  for (size_t j = 0; j < n; ++j)
    if (s.out_types[j]->numel() != expect || s.out_types[j]->elem != s.in_types[j]->elem)
      p.unsupported(op, "result types do not match the operands");
  return a;
}

}  // namespace

void lower_reduce(const Op& op, Planner& p, Step& s) {
  auto a = check_combine(op, p, s, false);
  Fast k = recognise(op);
  if (k != Fast::none) {
    if (exec::KernelFn fn = pick_fast<false>(s.in_types[0]->elem, k)) {
      s.aux = std::make_shared<Geometry>(a->g);
      s.fn = fn;
      return;
    }
  }
  s.aux = a;
  s.fn = &reduce_generic;
}

void lower_scan(const Op& op, Planner& p, Step& s) {
  auto a = check_combine(op, p, s, true);
  Fast k = recognise(op);
  if (k != Fast::none) {
    if (exec::KernelFn fn = pick_fast<true>(s.in_types[0]->elem, k)) {
      s.aux = std::make_shared<ScanGeometry>(ScanGeometry{a->g, a->reverse});
      s.fn = fn;
      return;
    }
  }
  s.aux = a;
  s.fn = &scan_generic;
}

// ---------------------------------------------------------------------------------------------
// map_elementwise: the region runs once per group of `pack` elements. Region arguments are the
// operands x pack, grouped per operand ([x0 x1 .. y0 y1 ..], Triton's repeat-interleave, Ops.cpp
// verifyRegions); the return values are grouped per result the same way.

namespace {

struct MapAux {
  int64_t pack = 1;
  std::vector<int> in_bytes, out_bytes;
};

void map_run(Program& p, const Step& s) {
  const auto& a = s.data<MapAux>();
  const exec::RegionPlan& r = s.regions[0];
  const auto& args = r.blocks[0].args;
  const int64_t P = a.pack;
  const size_t ni = a.in_bytes.size(), no = a.out_bytes.size();
  for (int64_t c = 0; c < s.n; c += P) {
    for (size_t j = 0; j < ni; ++j)
      for (int64_t q = 0; q < P; ++q)
        std::memcpy(p.slot[args[j * P + q]], p.slot[s.in[j]] + (c + q) * a.in_bytes[j], a.in_bytes[j]);
    const exec::Terminator& t = p.run(r);
    if (p.halted) return;  // the launch is stopping
    for (size_t j = 0; j < no; ++j)
      for (int64_t q = 0; q < P; ++q)
        std::memcpy(p.slot[s.out[j]] + (c + q) * a.out_bytes[j], p.slot[t.operands[j * P + q]],
                    a.out_bytes[j]);
  }
}

}  // namespace

void lower_map_elementwise(const Op& op, Planner& p, Step& s) {
  if (s.in.empty() || s.out.empty()) p.unsupported(op, "needs operands and results");
  if (s.regions.size() != 1 || s.regions[0].blocks.empty()) p.unsupported(op, "missing region");
  auto a = std::make_shared<MapAux>();
  if (const ir::Attr* pk = op.attr("pack")) {
    if (pk->kind != ir::Attr::Kind::Int || pk->i < 1) p.unsupported(op, "'pack' must be a positive integer");
    a->pack = pk->i;
  }
  if (s.n % a->pack != 0) p.unsupported(op, "the element count is not a multiple of 'pack'");
  for (size_t j = 0; j < s.in.size(); ++j) {
    if (s.in_types[j]->numel() != s.n) p.unsupported(op, "operands and results must have the same shape");
    a->in_bytes.push_back(ir::elem_bytes(s.in_types[j]->elem));
  }
  for (size_t j = 0; j < s.out.size(); ++j) {
    if (s.out_types[j]->numel() != s.n) p.unsupported(op, "operands and results must have the same shape");
    a->out_bytes.push_back(ir::elem_bytes(s.out_types[j]->elem));
  }
  if (s.regions[0].blocks[0].args.size() != s.in.size() * static_cast<size_t>(a->pack))
    p.unsupported(op, "the region must take operands x pack arguments");
  // The return's operand count is checked by the terminator: it must yield results x pack values.
  const ir::Region& reg = *op.regions[0];
  for (auto& b : reg.blocks)
    if (!b->ops.empty()) {
      const ir::Op& last = *b->ops.back();
      if (last.code() == ir::Opcode::tt_map_elementwise_return &&
          last.operands.size() != s.out.size() * static_cast<size_t>(a->pack))
        p.unsupported(op, "the region must return results x pack values");
    }
  s.aux = a;
  s.fn = &map_run;
}

}  // namespace tilescope::ops
