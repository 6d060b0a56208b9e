// Shape family kernels (see ops.h): tile moves, program ids and ranges (reference §1.4, §1.5).
//
// Shape ops only move bytes, so kernels are specialised on the element's storage size (1, 2, 4 or 8
// bytes; pointers are uint64 addresses, i1 is one byte). Index arithmetic (strides, permutations,
// gather bases) is done once at plan time and kept in Step::aux, so a run is pure tile work.
#include <algorithm>
#include <cassert>
#include <cstring>
#include <memory>
#include <vector>

#include "ops.h"

namespace tilescope::ops {

namespace {

using exec::Program;

template <int B>
struct UIntOf;
template <>
struct UIntOf<1> {
  using T = uint8_t;
};
template <>
struct UIntOf<2> {
  using T = uint16_t;
};
template <>
struct UIntOf<4> {
  using T = uint32_t;
};
template <>
struct UIntOf<8> {
  using T = uint64_t;
};

/// Storage size of one element of `t`, or 0 for values that are not plain elements (block
/// pointers, descriptors), which no shape op takes.
int elem_size(const ir::Type* t) {
  if (t->is_block_ptr() || t->elem == ir::Elem::tensordesc || t->elem == ir::Elem::none) return 0;
  return ir::elem_bytes(t->elem);
}

/// Picks `K<1>`, `K<2>`, `K<4>` or `K<8>` for an element size.
template <template <int> class K>
exec::KernelFn by_size(int bytes) {
  switch (bytes) {
    case 1: return &K<1>::run;
    case 2: return &K<2>::run;
    case 4: return &K<4>::run;
    case 8: return &K<8>::run;
    default: return nullptr;
  }
}

int elem_size_or_fail(const Op& op, Planner& p, const ir::Type* t) {
  int b = elem_size(t);
  if (b != 1 && b != 2 && b != 4 && b != 8)
    p.unsupported(op, "element type " + t->str() + " cannot be moved");
  return b;
}

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> st(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) st[d] = st[d + 1] * shape[d + 1];
  return st;
}

int64_t int_attr(const Op& op, Planner& p, const char* name, int64_t dflt, bool required) {
  const ir::Attr* a = op.attr(name);
  if (!a) {
    if (required) p.unsupported(op, std::string("missing attribute '") + name + "'");
    return dflt;
  }
  if (a->kind == ir::Attr::Kind::Int || a->kind == ir::Attr::Kind::Bool)
    return a->kind == ir::Attr::Kind::Int ? a->i : a->b;
  if (a->kind == ir::Attr::Kind::Keyword || a->kind == ir::Attr::Kind::String) {
    // ProgramIDDim prints as x / y / z (reference §1.9).
    if (a->s == "x") return 0;
    if (a->s == "y") return 1;
    if (a->s == "z") return 2;
  }
  p.unsupported(op, std::string("attribute '") + name + "' is not an integer");
}

// ---------------------------------------------------------------------------------------------
// Plain copies and fills

template <int B>
struct CopyK {  // reshape, expand_dims, unsplat: the row-major bytes do not change
  static void run(Program& p, const Step& s) {
    // A view (Step::view) whose result shares the operand's storage has nothing to copy.
    if (p.slot[s.out[0]] != p.slot[s.in[0]])
      std::memcpy(p.slot[s.out[0]], p.slot[s.in[0]], static_cast<size_t>(s.n) * B);
  }
};

template <int B>
struct SplatK {
  static void run(Program& p, const Step& s) {
    using T = typename UIntOf<B>::T;
    T v;
    std::memcpy(&v, p.slot[s.in[0]], B);
    std::fill_n(p.at<T>(s.out[0]), s.n, v);
  }
};

// ---------------------------------------------------------------------------------------------
// Strided gathers: broadcast and trans. The output is walked row-major; its last dimension is one
// run of `inner` elements read with `inner_stride` (0: a fill, 1: a memcpy), and `outer_off[o]` is
// the source offset of run o.

struct StridedAux {
  int64_t inner = 1;
  int64_t inner_stride = 1;
  std::vector<int64_t> outer_off;
};

std::shared_ptr<StridedAux> make_strided(const std::vector<int64_t>& out_shape,
                                         const std::vector<int64_t>& st) {
  assert(st.size() == out_shape.size());
  auto a = std::make_shared<StridedAux>();
  int r = static_cast<int>(out_shape.size());
  if (r == 0) {
    a->outer_off.push_back(0);
    return a;
  }
  a->inner = out_shape[r - 1];
  a->inner_stride = st[r - 1];
  int64_t outer = 1;
  for (int d = 0; d + 1 < r; ++d) outer *= out_shape[d];
  a->outer_off.resize(outer);
  std::vector<int64_t> idx(r > 1 ? r - 1 : 0, 0);
  int64_t off = 0;
  for (int64_t o = 0; o < outer; ++o) {
    a->outer_off[o] = off;
    for (int d = r - 2; d >= 0; --d) {  // odometer over the outer dims
      if (++idx[d] < out_shape[d]) {
        off += st[d];
        break;
      }
      off -= st[d] * (out_shape[d] - 1);
      idx[d] = 0;
    }
  }
  assert(off == 0);  // the odometer wrapped every outer dimension back to the origin
  return a;
}

template <int B>
struct StridedK {
  static void run(Program& p, const Step& s) {
    using T = typename UIntOf<B>::T;
    const auto& a = s.data<StridedAux>();
    const T* in = p.at<T>(s.in[0]);
    T* out = p.at<T>(s.out[0]);
    const int64_t inner = a.inner, st = a.inner_stride;
    const int64_t outer = static_cast<int64_t>(a.outer_off.size());
    for (int64_t o = 0; o < outer; ++o) {
      const T* src = in + a.outer_off[o];
      T* dst = out + o * inner;
      if (st == 1) {
        std::memcpy(dst, src, static_cast<size_t>(inner) * B);
      } else if (st == 0) {
        std::fill_n(dst, inner, *src);
      } else {
        for (int64_t j = 0; j < inner; ++j) dst[j] = src[j * st];
      }
    }
  }
};

// ---------------------------------------------------------------------------------------------
// cat, join, split

// tt.cat is documented as free to reorder elements (tl.cat requires can_reorder=True), so only the
// multiset of values is specified; we concatenate along dim 0 (lhs rows, then rhs rows), the order
// a user reading the Python would expect.
template <int B>
struct CatK {  // concatenation along dim 0: in row-major storage, lhs bytes then rhs bytes
  static void run(Program& p, const Step& s) {
    const int64_t nl = s.data<int64_t>();
    assert(nl >= 0 && nl <= s.n);  // lower_cat: n = nl + nr
    std::memcpy(p.slot[s.out[0]], p.slot[s.in[0]], static_cast<size_t>(nl) * B);
    std::memcpy(p.slot[s.out[0]] + nl * B, p.slot[s.in[1]], static_cast<size_t>(s.n - nl) * B);
  }
};

template <int B>
struct JoinK {  // out[..., 0] = lhs, out[..., 1] = rhs
  static void run(Program& p, const Step& s) {
    using T = typename UIntOf<B>::T;
    const T* l = p.at<T>(s.in[0]);
    const T* r = p.at<T>(s.in[1]);
    T* o = p.at<T>(s.out[0]);
    const int64_t n = s.n / 2;
    for (int64_t i = 0; i < n; ++i) {
      o[2 * i] = l[i];
      o[2 * i + 1] = r[i];
    }
  }
};

template <int B>
struct SplitK {  // (src[..., 0], src[..., 1]); n = elements of one result
  static void run(Program& p, const Step& s) {
    using T = typename UIntOf<B>::T;
    const T* x = p.at<T>(s.in[0]);
    T* l = p.at<T>(s.out[0]);
    T* r = p.at<T>(s.out[1]);
    for (int64_t i = 0; i < s.n; ++i) {
      l[i] = x[2 * i];
      r[i] = x[2 * i + 1];
    }
  }
};

// ---------------------------------------------------------------------------------------------
// gather: out[i] = src[i with coordinate `axis` replaced by idx[i]]

struct GatherAux {
  std::vector<int64_t> base;  // per output element: its source offset with the axis coordinate 0
  int64_t axis_stride = 1;
  int64_t axis_size = 1;
};

template <int B, class I>
void gather_run(Program& p, const Step& s) {
  using T = typename UIntOf<B>::T;
  const auto& a = s.data<GatherAux>();
  const T* src = p.at<T>(s.in[0]);
  const I* idx = p.at<I>(s.in[1]);
  T* out = p.at<T>(s.out[0]);
  // Out-of-range indices: the GPU result is undefined; on an H200 (triton 3.6, a 16-element 1-D
  // gather) index i read element i mod 16 (16 -> 0, -1 -> 15, 1000 -> 8). We wrap the same way
  // (tile sizes are powers of two), so the tile is never read outside its storage.
  const uint64_t wrap = static_cast<uint64_t>(a.axis_size) - 1;
  for (int64_t i = 0; i < s.n; ++i) {
    const uint64_t k = static_cast<uint64_t>(static_cast<int64_t>(idx[i])) & wrap;
    out[i] = src[a.base[i] + static_cast<int64_t>(k) * a.axis_stride];
  }
}

template <int B>
exec::KernelFn gather_kernel(ir::Elem ie) {
  switch (ie) {
    case ir::Elem::i8: return &gather_run<B, int8_t>;
    case ir::Elem::i16: return &gather_run<B, int16_t>;
    case ir::Elem::i32: return &gather_run<B, int32_t>;
    case ir::Elem::i64: return &gather_run<B, int64_t>;
    case ir::Elem::i1:
    case ir::Elem::f8e4m3fn:
    case ir::Elem::f8e5m2:
    case ir::Elem::f8e4m3fnuz:
    case ir::Elem::f8e5m2fnuz:
    case ir::Elem::f16:
    case ir::Elem::bf16:
    case ir::Elem::f32:
    case ir::Elem::f64:
    case ir::Elem::ptr:
    case ir::Elem::tensordesc:
    case ir::Elem::none: return nullptr;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// histogram: bins of width 1 from 0; values outside [0, NBINS) are not counted.

template <class I, bool Masked>
void histogram_run(Program& p, const Step& s) {
  const I* x = p.at<I>(s.in[0]);
  const uint8_t* m = Masked ? p.at<uint8_t>(s.in[1]) : nullptr;
  int32_t* out = p.at<int32_t>(s.out[0]);
  const int64_t bins = s.n;
  const int64_t n = s.data<int64_t>();
  std::fill_n(out, bins, 0);
  for (int64_t i = 0; i < n; ++i) {
    if (Masked && !m[i]) continue;
    const int64_t v = static_cast<int64_t>(x[i]);
    if (v >= 0 && v < bins) ++out[v];
  }
}

template <bool Masked>
exec::KernelFn histogram_kernel(ir::Elem e) {
  switch (e) {
    case ir::Elem::i8: return &histogram_run<int8_t, Masked>;
    case ir::Elem::i16: return &histogram_run<int16_t, Masked>;
    case ir::Elem::i32: return &histogram_run<int32_t, Masked>;
    case ir::Elem::i64: return &histogram_run<int64_t, Masked>;
    case ir::Elem::i1:
    case ir::Elem::f8e4m3fn:
    case ir::Elem::f8e5m2:
    case ir::Elem::f8e4m3fnuz:
    case ir::Elem::f8e5m2fnuz:
    case ir::Elem::f16:
    case ir::Elem::bf16:
    case ir::Elem::f32:
    case ir::Elem::f64:
    case ir::Elem::ptr:
    case ir::Elem::tensordesc:
    case ir::Elem::none: return nullptr;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// make_range, program ids

/// Lanes start, start + 1, ... of a tt.make_range into `o` (n lanes; i32 arithmetic wraps).
void fill_range(int32_t start, int64_t n, int32_t* o) {
  for (int64_t i = 0; i < n; ++i)
    o[i] = static_cast<int32_t>(static_cast<uint32_t>(start) + static_cast<uint32_t>(i));
}

void make_range_run(Program& p, const Step& s) {
  fill_range(s.data<int32_t>(), s.n, p.at<int32_t>(s.out[0]));
}

template <int Axis>
void program_id_run(Program& p, const Step& s) {
  *p.at<int32_t>(s.out[0]) = p.pid[Axis];
}
template <int Axis>
void num_programs_run(Program& p, const Step& s) {
  *p.at<int32_t>(s.out[0]) = p.grid[Axis];
}

void need(const Op& op, Planner& p, const Step& s, size_t ins, size_t outs) {
  if (s.in.size() < ins || s.out.size() != outs)
    p.unsupported(
        op, "expected " + std::to_string(ins) + " operand(s) and " + std::to_string(outs) + " result(s)");
}

}  // namespace

void lower_splat(const Op& op, Planner& p, Step& s) {
  need(op, p, s, 1, 1);
  if (s.in_types[0]->numel() != 1) p.unsupported(op, "the source must be a scalar");
  s.fn = by_size<SplatK>(elem_size_or_fail(op, p, s.out_types[0]));
}

void lower_unsplat(const Op& op, Planner& p, Step& s) {
  need(op, p, s, 1, 1);
  if (s.in_types[0]->numel() != 1) p.unsupported(op, "the source must have exactly one element");
  s.fn = by_size<CopyK>(elem_size_or_fail(op, p, s.out_types[0]));
}

void lower_reshape(const Op& op, Planner& p, Step& s) {
  // tt.reshape and tt.expand_dims keep the row-major element order. `allow_reorder` lets the
  // compiler permute elements; we keep row-major order (a valid choice, and the one users expect).
  need(op, p, s, 1, 1);
  if (s.in_types[0]->numel() != s.out_types[0]->numel()) p.unsupported(op, "element counts differ");
  s.fn = by_size<CopyK>(elem_size_or_fail(op, p, s.out_types[0]));
  s.view = true;
}

void lower_broadcast(const Op& op, Planner& p, Step& s) {
  need(op, p, s, 1, 1);
  const auto& in = s.in_types[0]->shape;
  const auto& out = s.out_types[0]->shape;
  int b = elem_size_or_fail(op, p, s.out_types[0]);
  std::vector<int64_t> st(out.size(), 0);
  if (!in.empty() || s.in_types[0]->numel() != 1) {
    if (in.size() != out.size()) p.unsupported(op, "source and result ranks differ");
    auto src_st = row_major_strides(in);
    for (size_t d = 0; d < out.size(); ++d) {
      if (in[d] == out[d])
        st[d] = src_st[d];
      else if (in[d] == 1)
        st[d] = 0;
      else
        p.unsupported(op, "dimension " + std::to_string(d) + " is neither 1 nor the result's size");
    }
  }
  s.aux = make_strided(out, st);
  s.fn = by_size<StridedK>(b);
}

void lower_trans(const Op& op, Planner& p, Step& s) {
  need(op, p, s, 1, 1);
  const auto& in = s.in_types[0]->shape;
  const auto& out = s.out_types[0]->shape;
  int b = elem_size_or_fail(op, p, s.out_types[0]);
  const ir::Attr* a = op.attr("order");
  if (!a || a->kind != ir::Attr::Kind::IntArray) p.unsupported(op, "missing 'order' array");
  const auto& order = a->ints;
  if (order.size() != in.size() || out.size() != in.size())
    p.unsupported(op, "'order' does not match the rank");
  std::vector<bool> seen(in.size(), false);
  auto src_st = row_major_strides(in);
  std::vector<int64_t> st(out.size());
  for (size_t i = 0; i < order.size(); ++i) {
    int64_t o = order[i];
    if (o < 0 || o >= static_cast<int64_t>(in.size()) || seen[o])
      p.unsupported(op, "'order' is not a permutation");
    seen[o] = true;
    if (out[i] != in[o]) p.unsupported(op, "result shape does not match the permuted source shape");
    st[i] = src_st[o];  // result dim i = source dim order[i]
  }
  s.aux = make_strided(out, st);
  s.fn = by_size<StridedK>(b);
}

void lower_cat(const Op& op, Planner& p, Step& s) {
  need(op, p, s, 2, 1);
  int64_t nl = s.in_types[0]->numel(), nr = s.in_types[1]->numel();
  if (nl + nr != s.n) p.unsupported(op, "result size is not the sum of the operand sizes");
  s.aux = std::make_shared<int64_t>(nl);
  s.fn = by_size<CatK>(elem_size_or_fail(op, p, s.out_types[0]));
}

void lower_join(const Op& op, Planner& p, Step& s) {
  need(op, p, s, 2, 1);
  if (s.in_types[0]->numel() * 2 != s.n || s.in_types[1]->numel() * 2 != s.n)
    p.unsupported(op, "result must have twice the elements of each operand");
  s.fn = by_size<JoinK>(elem_size_or_fail(op, p, s.out_types[0]));
}

void lower_split(const Op& op, Planner& p, Step& s) {
  need(op, p, s, 1, 2);
  const auto& in = s.in_types[0]->shape;
  if (in.empty() || in.back() != 2) p.unsupported(op, "the last dimension must be 2");
  if (s.out_types[0]->numel() * 2 != s.in_types[0]->numel()) p.unsupported(op, "result sizes do not match");
  s.fn = by_size<SplitK>(elem_size_or_fail(op, p, s.out_types[0]));
}

void lower_gather(const Op& op, Planner& p, Step& s) {
  need(op, p, s, 2, 1);
  const auto& src = s.in_types[0]->shape;
  const auto& idx = s.in_types[1]->shape;
  const auto& out = s.out_types[0]->shape;
  int b = elem_size_or_fail(op, p, s.out_types[0]);
  int64_t axis = int_attr(op, p, "axis", 0, true);
  int r = static_cast<int>(src.size());
  if (axis < 0 || axis >= r) p.unsupported(op, "axis out of range");
  if (idx.size() != src.size() || out != idx)
    p.unsupported(op, "index and result shapes must match, with the source's rank");
  for (int d = 0; d < r; ++d)
    if (d != axis && idx[d] > src[d]) p.unsupported(op, "index dimension larger than the source's");
  int64_t axis_size = src[axis];
  if (axis_size <= 0 || (axis_size & (axis_size - 1)) != 0)
    p.unsupported(op, "the gathered dimension must be a power of two");
  auto a = std::make_shared<GatherAux>();
  auto src_st = row_major_strides(src);
  a->axis_stride = src_st[axis];
  a->axis_size = axis_size;
  a->base.resize(s.n);
  std::vector<int64_t> c(r, 0);
  for (int64_t i = 0; i < s.n; ++i) {
    int64_t off = 0;
    for (int d = 0; d < r; ++d)
      if (d != axis) off += c[d] * src_st[d];
    a->base[i] = off;
    for (int d = r - 1; d >= 0; --d) {
      if (++c[d] < out[d]) break;
      c[d] = 0;
    }
  }
  s.aux = a;
  exec::KernelFn fn = nullptr;
  switch (b) {
    case 1: fn = gather_kernel<1>(s.in_types[1]->elem); break;
    case 2: fn = gather_kernel<2>(s.in_types[1]->elem); break;
    case 4: fn = gather_kernel<4>(s.in_types[1]->elem); break;
    case 8: fn = gather_kernel<8>(s.in_types[1]->elem); break;
  }
  if (!fn) p.unsupported(op, "indices must be i8, i16, i32 or i64");
  s.fn = fn;
}

void lower_histogram(const Op& op, Planner& p, Step& s) {
  // Values outside [0, NBINS) are not counted. The GPU's result for them is not specified; an H200
  // (triton 3.6, 8 bins) ignored -1, -8, 8, 9, 15 and 16 but counted 100 in bin 4, so kernels that
  // rely on out-of-range values are wrong on the GPU anyway.
  if (s.in.empty() || s.in.size() > 2 || s.out.size() != 1)
    p.unsupported(op, "expected src[, mask] and one result");
  if (s.out_types[0]->elem != ir::Elem::i32) p.unsupported(op, "the result must be i32");
  if (s.in.size() == 2 &&
      (s.in_types[1]->elem != ir::Elem::i1 || s.in_types[1]->numel() != s.in_types[0]->numel()))
    p.unsupported(op, "the mask must be i1 with the source's shape");
  s.aux = std::make_shared<int64_t>(s.in_types[0]->numel());
  s.fn = s.in.size() == 2 ? histogram_kernel<true>(s.in_types[0]->elem)
                          : histogram_kernel<false>(s.in_types[0]->elem);
  if (!s.fn) p.unsupported(op, "the source must be an integer tensor");
}

void lower_make_range(const Op& op, Planner& p, Step& s) {
  need(op, p, s, 0, 1);
  if (s.out_types[0]->elem != ir::Elem::i32) p.unsupported(op, "the result must be i32");
  int64_t start = int_attr(op, p, "start", 0, true);
  int64_t end = int_attr(op, p, "end", 0, true);
  if (end - start != s.n) p.unsupported(op, "end - start does not match the result size");
  if (s.n * 4 >= Planner::kSharedConstantBytes) {  // the same range in every program: made once
    std::vector<int32_t> lanes(static_cast<size_t>(s.n));
    fill_range(static_cast<int32_t>(start), s.n, lanes.data());
    std::vector<std::byte> value(lanes.size() * 4);
    std::memcpy(value.data(), lanes.data(), value.size());
    return p.share_constant(s, value);
  }
  s.aux = std::make_shared<int32_t>(static_cast<int32_t>(start));
  s.fn = &make_range_run;
}

void lower_program_id(const Op& op, Planner& p, Step& s) {
  need(op, p, s, 0, 1);
  int64_t axis = int_attr(op, p, "axis", 0, true);
  if (axis < 0 || axis > 2) p.unsupported(op, "axis must be x, y or z");
  if (s.out_types[0]->elem != ir::Elem::i32) p.unsupported(op, "the result must be i32");
  bool num = op.code() == ir::Opcode::tt_get_num_programs;
  static constexpr exec::KernelFn kId[] = {&program_id_run<0>, &program_id_run<1>, &program_id_run<2>};
  static constexpr exec::KernelFn kNum[] = {&num_programs_run<0>, &num_programs_run<1>, &num_programs_run<2>};
  s.fn = num ? kNum[axis] : kId[axis];
}

}  // namespace tilescope::ops
