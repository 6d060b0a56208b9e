// Verifiers of elementwise ops: arith, math and the tt elementwise ops (reference §2.1, §2.2, §1.1).
#include "verifiers.h"

namespace tilescope::ir::verifiers {

namespace {

/// `nops` operands of the result's type and one result; returns the result type.
const Type* same_type(Verifier& v, const Op& o, size_t nops) {
  v.counts(o, nops, 1);
  const Type* t = v.out(o);
  for (auto* x : o.operands)
    v.check(x->type == t, o, "operand type {} differs from result type {}", *x->type, *t);
  return t;
}

void need_int(Verifier& v, const Op& o, const Type* t) {
  v.check(int_like(t), o, "needs integer operands, found {}", *t);
}

void need_float(Verifier& v, const Op& o, const Type* t) {
  v.check(float_like(t), o, "needs float operands, found {}", *t);
}

/// One operand, one result of the same shape (casts).
std::pair<const Type*, const Type*> cast_types(Verifier& v, const Op& o) {
  v.counts(o, 1, 1);
  const Type* a = v.in(o, 0);
  const Type* b = v.out(o);
  v.check(same_shape(a, b), o, "operand {} and result {} must have the same shape", *a, *b);
  return {a, b};
}

}  // namespace

void int_binary(Verifier& v, const Op& o) { need_int(v, o, same_type(v, o, 2)); }
void float_binary(Verifier& v, const Op& o) { need_float(v, o, same_type(v, o, 2)); }
void float_unary(Verifier& v, const Op& o) { need_float(v, o, same_type(v, o, 1)); }
void int_unary(Verifier& v, const Op& o) { need_int(v, o, same_type(v, o, 1)); }
void fma(Verifier& v, const Op& o) { need_float(v, o, same_type(v, o, 3)); }

// 3.9: F32 or tensor of F32 only (TritonOps.td).
void approx_divf(Verifier& v, const Op& o) {
  const Type* t = same_type(v, o, 2);
  v.check(t->elem == Elem::f32, o, "needs f32 operands, found {}", *t);
}

void clampf(Verifier& v, const Op& o) {
  need_float(v, o, same_type(v, o, 3));
  v.keyword_in(o, "propagateNan", {"none", "all"}, true);
}

void constant(Verifier& v, const Op& o) {
  const Type* t = same_type(v, o, 0);
  const Attr* a = o.attr("value");
  v.check(a && a->type == t, o, "value attribute type must equal the result type");
}

void poison(Verifier& v, const Op& o) { same_type(v, o, 0); }

void make_range(Verifier& v, const Op& o) {
  const Type* t = same_type(v, o, 0);
  const Attr* s = v.need(o, "start", Attr::Kind::Int);
  const Attr* e = v.need(o, "end", Attr::Kind::Int);
  v.check(t->is_tensor && t->rank() == 1 && t->elem == Elem::i32, o, "result must be a 1-D tensor of i32");
  v.check(e->i > s->i && e->i - s->i == t->shape[0], o, "end - start = {} but the result has {} elements",
          e->i - s->i, t->shape[0]);
}

void program_id(Verifier& v, const Op& o) {
  const Type* t = same_type(v, o, 0);
  const Attr* a = v.need(o, "axis", Attr::Kind::Int);
  v.check(a->i >= 0 && a->i <= 2, o, "axis must be 0, 1 or 2");
  v.check(scalar_i32(t), o, "result must be i32");
}

namespace {
const Type* compare_operands(Verifier& v, const Op& o) {
  v.counts(o, 2, 1);
  v.check(v.in(o, 0) == v.in(o, 1), o, "operands must have the same type");
  const Type* t = v.in(o, 0);
  v.check(is_i1(v.out(o)) && same_shape(v.out(o), t), o, "result must be i1 with the operands' shape");
  return t;
}
}  // namespace

void cmpi(Verifier& v, const Op& o) {
  const Type* t = compare_operands(v, o);
  v.check(int_like(t) || t->elem == Elem::ptr, o, "needs integer operands");
  v.keyword_in(o, "predicate", {"eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"}, true);
}

void cmpf(Verifier& v, const Op& o) {
  const Type* t = compare_operands(v, o);
  v.check(float_like(t), o, "needs float operands");
  v.keyword_in(o, "predicate",
               {"false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult", "ule",
                "une", "uno", "true"},
               true);
}

void select(Verifier& v, const Op& o) {
  v.counts(o, 3, 1);
  const Type* c = v.in(o, 0);
  v.check(is_i1(c) && (!c->is_tensor || same_shape(c, v.out(o))), o,
          "condition must be i1, scalar or of the result shape");
  v.check(v.in(o, 1) == v.out(o) && v.in(o, 2) == v.out(o), o, "both values must have the result type");
}

void ext_int(Verifier& v, const Op& o) {
  auto [a, b] = cast_types(v, o);
  v.check(int_like(a) && int_like(b) && elem_bits(b->elem) > elem_bits(a->elem), o,
          "needs a wider integer result");
}

void trunc_int(Verifier& v, const Op& o) {
  auto [a, b] = cast_types(v, o);
  v.check(int_like(a) && int_like(b) && elem_bits(b->elem) < elem_bits(a->elem), o,
          "needs a narrower integer result");
}

void int_to_float(Verifier& v, const Op& o) {
  auto [a, b] = cast_types(v, o);
  v.check(int_like(a) && float_like(b), o, "needs integer to float");
}

void float_to_int(Verifier& v, const Op& o) {
  auto [a, b] = cast_types(v, o);
  v.check(float_like(a) && int_like(b), o, "needs float to integer");
}

void ext_float(Verifier& v, const Op& o) {
  auto [a, b] = cast_types(v, o);
  v.check(float_like(a) && float_like(b) && elem_bits(b->elem) > elem_bits(a->elem), o,
          "needs a wider float result");
}

void trunc_float(Verifier& v, const Op& o) {
  auto [a, b] = cast_types(v, o);
  v.check(float_like(a) && float_like(b) && elem_bits(b->elem) < elem_bits(a->elem), o,
          "needs a narrower float result");
}

void arith_bitcast(Verifier& v, const Op& o) {
  auto [a, b] = cast_types(v, o);
  v.check(elem_bits(a->elem) == elem_bits(b->elem) && a->elem != Elem::ptr && b->elem != Elem::ptr, o,
          "needs types of the same bit width");
}

void index_cast(Verifier& v, const Op& o) {
  auto [a, b] = cast_types(v, o);
  v.check(int_like(a) && int_like(b), o, "needs integer types");
}

void int_to_ptr(Verifier& v, const Op& o) {
  v.counts(o, 1, 1);
  const Type* s = v.in(o, 0);
  const Type* r = v.out(o);
  v.check(same_shape(s, r) && s->elem == Elem::i64 && r->elem == Elem::ptr, o,
          "needs i64 to pointer, same shape");
}

void ptr_to_int(Verifier& v, const Op& o) {
  v.counts(o, 1, 1);
  const Type* s = v.in(o, 0);
  const Type* r = v.out(o);
  v.check(same_shape(s, r) && s->elem == Elem::ptr && r->elem == Elem::i64, o,
          "needs pointer to i64, same shape");
}

void tt_bitcast(Verifier& v, const Op& o) {
  v.counts(o, 1, 1);
  const Type* s = v.in(o, 0);
  const Type* r = v.out(o);
  v.check(same_shape(s, r), o, "operand and result must have the same shape");
  v.check(elem_bits(s->elem) == elem_bits(r->elem) && s->elem != Elem::tensordesc, o,
          "operand and result must have the same bit width");
}

void fp_to_fp(Verifier& v, const Op& o) {
  v.counts(o, 1, 1);
  const Type* s = v.in(o, 0);
  const Type* r = v.out(o);
  v.check(same_shape(s, r) && float_like(s) && float_like(r), o, "needs float to float, same shape");
  v.keyword_in(o, "rounding", {"rtz", "rtne"}, false);
  v.check(elem_bits(r->elem) >= elem_bits(s->elem) || o.attr("rounding"), o,
          "a downcast needs a rounding mode");
}

void extern_elementwise(Verifier& v, const Op& o) {
  v.check(o.results.size() == 1, o, "expects one result");
  v.need(o, "symbol", Attr::Kind::String);
  for (auto* x : o.operands)
    v.check(x->type->is_tensor == v.out(o)->is_tensor && x->type->shape == v.out(o)->shape, o,
            "operands must have the result's shape");
}

void inline_asm(Verifier& v, const Op& o) { v.check(!o.results.empty(), o, "needs at least one result"); }

}  // namespace tilescope::ir::verifiers
