// Verifiers of pointer, memory, atomic and descriptor ops (reference §1.2, §1.3, §1.8, §1.9).
#include "verifiers.h"

namespace tilescope::ir::verifiers {

namespace {

void no_results(Verifier& v, const Op& o) { v.check(o.results.empty(), o, "has no results"); }

void ordering(Verifier& v, const Op& o) {
  v.keyword_in(o, "sem", {"relaxed", "acquire", "release", "acq_rel"}, true);
  v.keyword_in(o, "scope", {"gpu", "cta", "sys"}, true);
}

void cache_hints(Verifier& v, const Op& o) {
  v.keyword_in(o, "cache", {"none", "ca", "cg", "wb", "cs", "wt", "cv"}, false);
  v.keyword_in(o, "evict", {"evict_normal", "evict_first", "evict_last"}, false);
}

/// A pointer or a tensor of pointers (not a block pointer); returns it.
const Type* lane_pointer(Verifier& v, const Op& o) {
  const Type* p = v.in(o, 0);
  v.check(p->elem == Elem::ptr && !p->is_block_ptr(), o,
          "first operand must be a pointer or tensor of pointers");
  return p;
}

/// The block of the tensor descriptor operand 0 (which must be one).
const Type* desc_block(Verifier& v, const Op& o, size_t min_operands) {
  v.check(o.operands.size() >= min_operands && v.in(o, 0)->elem == Elem::tensordesc && v.in(o, 0)->pointee, o,
          "first operand must be a tensor descriptor");
  return v.in(o, 0)->pointee;
}

}  // namespace

void addptr(Verifier& v, const Op& o) {
  v.counts(o, 2, 1);
  const Type* p = v.in(o, 0);
  const Type* off = v.in(o, 1);
  v.check(p->elem == Elem::ptr && !p->is_block_ptr(), o,
          "first operand must be a pointer or tensor of pointers");
  v.check(int_like(off) && same_shape(p, off), o, "offset must be an integer of the pointer's shape");
  v.check(v.out(o) == p, o, "result type must be the pointer type");
}

void load(Verifier& v, const Op& o) {
  v.operands_between(o, 1, 3);
  v.check(o.results.size() == 1, o, "expects one result");
  const Type* p = v.in(o, 0);
  const Type* r = v.out(o);
  v.check(p->elem == Elem::ptr, o, "first operand must be a pointer");
  if (p->is_block_ptr()) {
    v.check(o.operands.size() == 1, o, "a block-pointer load takes no mask or other");
    v.check(r == p->pointee, o, "result must be the block type");
    return;
  }
  v.check(same_shape(p, r) && elem_eq(r, p->pointee), o,
          "result must be the pointee with the pointer's shape");
  if (o.operands.size() >= 2)
    v.check(is_i1(v.in(o, 1)) && same_shape(v.in(o, 1), p), o, "mask {} must be i1 with the pointer's shape",
            *v.in(o, 1));
  if (o.operands.size() == 3) v.check(v.in(o, 2) == r, o, "other {} must have type {}", *v.in(o, 2), *r);
  cache_hints(v, o);
}

void store(Verifier& v, const Op& o) {
  no_results(v, o);
  v.operands_between(o, 2, 3);
  const Type* p = v.in(o, 0);
  v.check(p->elem == Elem::ptr, o, "first operand must be a pointer");
  const Type* x = v.in(o, 1);
  if (p->is_block_ptr()) {
    v.check(x == p->pointee, o, "value must be the block type");
    v.check(o.operands.size() == 2, o, "a block-pointer store takes no mask");
    return;
  }
  v.check(same_shape(p, x) && elem_eq(x, p->pointee), o,
          "value {} must be the pointee with the pointer's shape ({})", *x, *p);
  if (o.operands.size() == 3)
    v.check(is_i1(v.in(o, 2)) && same_shape(v.in(o, 2), p), o, "mask must be i1 with the pointer's shape");
  cache_hints(v, o);
}

namespace {
/// atomic_rmw and atomic_cas: the value operand `vi` matches the pointer; the result is its type.
const Type* atomic_value(Verifier& v, const Op& o, size_t vi) {
  const Type* p = v.in(o, 0);
  const Type* x = v.in(o, vi);
  v.check(p->elem == Elem::ptr && !p->is_block_ptr() && same_shape(p, x) && elem_eq(x, p->pointee), o,
          "value must match the pointer's shape and pointee");
  v.check(v.out(o) == x, o, "result must have the value's type");
  return x;
}
}  // namespace

void atomic_rmw(Verifier& v, const Op& o) {
  v.operands_between(o, 2, 3);
  v.check(o.results.size() == 1, o, "expects one result");
  atomic_value(v, o, 1);
  if (o.operands.size() == 3)
    v.check(is_i1(v.in(o, 2)) && same_shape(v.in(o, 2), v.in(o, 0)), o, "mask must be i1");
  v.keyword_in(o, "atomic_rmw_op", {"and", "or", "xor", "add", "fadd", "max", "min", "umax", "umin", "exch"},
               true);
  ordering(v, o);
}

void atomic_cas(Verifier& v, const Op& o) {
  v.counts(o, 3, 1);
  const Type* x = atomic_value(v, o, 2);
  v.check(v.in(o, 1) == x, o, "compare value must have the value's type");
  ordering(v, o);
}

// 3.9: sem, scope, ptr[, mask] -> pointee with the pointer's shape.
void atomic_load(Verifier& v, const Op& o) {
  v.operands_between(o, 1, 2);
  v.check(o.results.size() == 1, o, "expects one result");
  const Type* p = lane_pointer(v, o);
  v.check(same_shape(p, v.out(o)) && elem_eq(v.out(o), p->pointee), o,
          "result must be the pointee with the pointer's shape");
  if (o.operands.size() == 2) v.check(is_i1(v.in(o, 1)) && same_shape(v.in(o, 1), p), o, "mask must be i1");
  ordering(v, o);
}

// 3.9: sem, scope, ptr, value[, mask].
void atomic_store(Verifier& v, const Op& o) {
  no_results(v, o);
  v.operands_between(o, 2, 3);
  const Type* p = lane_pointer(v, o);
  const Type* x = v.in(o, 1);
  v.check(same_shape(p, x) && elem_eq(x, p->pointee), o,
          "value must be the pointee with the pointer's shape");
  if (o.operands.size() == 3) v.check(is_i1(v.in(o, 2)) && same_shape(v.in(o, 2), p), o, "mask must be i1");
  ordering(v, o);
}

// 3.9: sem, scope, ptr, expected [timeout t] -> i1 of the pointer's shape.
void atomic_poll(Verifier& v, const Op& o) {
  v.operands_between(o, 2, 3);
  v.check(o.results.size() == 1, o, "expects one result");
  const Type* p = v.in(o, 0);
  const Type* e = v.in(o, 1);
  v.check(
      p->elem == Elem::ptr && !p->is_block_ptr() && same_shape(p, e) && elem_eq(e, p->pointee) && int_like(e),
      o, "expected value must be an integer matching the pointer's shape and pointee");
  v.check(is_i1(v.out(o)) && same_shape(v.out(o), p), o, "result must be i1 with the pointer's shape");
  v.check(o.operands.size() == 2 || (!v.in(o, 2)->is_tensor && v.in(o, 2)->elem == Elem::i64), o,
          "timeout must be an i64 scalar");
  v.check((o.operands.size() == 3) == (o.attr("timeout") != nullptr), o,
          "a third operand is written as `timeout %t`");
  ordering(v, o);
}

namespace {
/// make_tensor_ptr and advance: one block-pointer result; returns its rank.
size_t block_ptr_rank(Verifier& v, const Op& o) {
  v.check(o.results.size() == 1 && v.out(o)->is_block_ptr(), o, "result must be a block pointer");
  return static_cast<size_t>(v.out(o)->pointee->rank());
}
}  // namespace

void make_tensor_ptr(Verifier& v, const Op& o) {
  size_t r = block_ptr_rank(v, o);
  const Type* blk = v.out(o)->pointee;
  v.check(o.operands.size() == 1 + 3 * r, o, "expects base, {} shape, {} strides, {} offsets", r, r, r);
  const Type* base = v.in(o, 0);
  v.check(base->elem == Elem::ptr && !base->is_tensor && base->pointee && base->pointee->elem == blk->elem, o,
          "base must be a pointer to the block's element");
  for (size_t i = 1; i <= 2 * r; ++i) v.check(scalar_i64(v.in(o, i)), o, "shape and strides must be i64");
  for (size_t i = 1 + 2 * r; i < o.operands.size(); ++i)
    v.check(scalar_i32(v.in(o, i)), o, "offsets must be i32");
}

void advance(Verifier& v, const Op& o) {
  size_t r = block_ptr_rank(v, o);
  v.check(o.operands.size() == 1 + r && v.in(o, 0) == v.out(o), o,
          "expects the block pointer and one offset per dim");
  for (size_t i = 1; i < o.operands.size(); ++i) v.check(scalar_i32(v.in(o, i)), o, "offsets must be i32");
}

void make_desc(Verifier& v, const Op& o) {
  v.check(o.results.size() == 1 && v.out(o)->elem == Elem::tensordesc, o,
          "result must be a tensor descriptor");
  const Type* blk = v.out(o)->pointee;
  size_t r = static_cast<size_t>(blk->rank());
  v.check(o.operands.size() == 1 + 2 * r, o, "expects base, {} shape and {} stride operands", r, r);
  const Type* base = v.in(o, 0);
  v.check(base->elem == Elem::ptr && !base->is_tensor && base->pointee && base->pointee->elem == blk->elem, o,
          "base must be a pointer to the block's element");
  for (size_t i = 1; i <= r; ++i) v.check(scalar_i32(v.in(o, i)), o, "shape operands must be i32");
  for (size_t i = 1 + r; i < o.operands.size(); ++i)
    v.check(scalar_i64(v.in(o, i)), o, "strides must be i64");
}

// 3.2-3.4 only (reference §1.8): a cast of one value to a descriptor.
void reinterpret_desc(Verifier& v, const Op& o) {
  v.counts(o, 1, 1);
  const Type* a = v.in(o, 0);
  const Type* b = v.out(o);
  v.check(same_shape(a, b), o, "operand {} and result {} must have the same shape", *a, *b);
}

void desc_load(Verifier& v, const Op& o) {
  v.check(!o.operands.empty() && o.results.size() == 1, o, "expects a descriptor and one result");
  const Type* d = v.in(o, 0);
  v.check(d->elem == Elem::tensordesc && d->pointee, o, "first operand must be a tensor descriptor");
  const Type* blk = d->pointee;
  v.check(o.operands.size() == 1 + static_cast<size_t>(blk->rank()), o, "expects {} indices", blk->rank());
  for (size_t i = 1; i < o.operands.size(); ++i) v.check(scalar_i32(v.in(o, i)), o, "indices must be i32");
  v.check(v.out(o)->is_tensor && elem_eq(v.out(o), blk) && v.out(o)->numel() == blk->numel(), o,
          "result must match the descriptor's block");
}

void desc_store(Verifier& v, const Op& o) {
  no_results(v, o);
  const Type* blk = desc_block(v, o, 2);
  v.check(o.operands.size() == 2 + static_cast<size_t>(blk->rank()), o, "expects {} indices", blk->rank());
  for (size_t i = 1; i + 1 < o.operands.size(); ++i)
    v.check(scalar_i32(v.in(o, i)), o, "indices must be i32");
  const Type* src = o.operands.back()->type;
  v.check(src->is_tensor && elem_eq(src, blk) && src->numel() == blk->numel(), o,
          "stored value must match the descriptor's block");
}

void desc_reduce(Verifier& v, const Op& o) {
  desc_store(v, o);
  v.keyword_in(o, "kind", {"add", "min", "max", "inc", "dec", "and", "or", "xor"}, true);
}

void desc_gather(Verifier& v, const Op& o) {
  v.check(!o.operands.empty() && v.in(o, 0)->elem == Elem::tensordesc, o,
          "first operand must be a descriptor");
}

void desc_scatter(Verifier& v, const Op& o) { no_results(v, o); }

}  // namespace tilescope::ir::verifiers
