// Verifiers of shape ops, dot, reduce, scan and map_elementwise (reference §1.4, §1.5, §1.1).
#include "verifiers.h"

namespace tilescope::ir::verifiers {

void splat(Verifier& v, const Op& o) {
  v.counts(o, 1, 1);
  const Type* s = v.in(o, 0);
  const Type* r = v.out(o);
  v.check(!s->is_tensor && r->is_tensor && elem_eq(s, r), o,
          "needs a scalar and a tensor of it, found {} -> {}", *s, *r);
}

void unsplat(Verifier& v, const Op& o) {
  v.counts(o, 1, 1);
  v.check(v.in(o, 0)->is_tensor && v.in(o, 0)->numel() == 1, o, "operand must be a one-element tensor");
  v.check(!v.out(o)->is_tensor && elem_eq(v.out(o), v.in(o, 0)), o,
          "result must be the operand's element type");
}

void broadcast(Verifier& v, const Op& o) {
  v.counts(o, 1, 1);
  const Type* s = v.in(o, 0);
  const Type* r = v.out(o);
  v.check(s->is_tensor && r->is_tensor && s->rank() == r->rank() && elem_eq(s, r), o,
          "operand and result must be tensors of equal rank and element");
  for (int i = 0; i < s->rank(); ++i)
    v.check(s->shape[i] == r->shape[i] || s->shape[i] == 1, o, "cannot broadcast {} to {}", Dims{s->shape},
            Dims{r->shape});
}

void expand_dims(Verifier& v, const Op& o) {
  v.counts(o, 1, 1);
  const Type* s = v.in(o, 0);
  const Type* r = v.out(o);
  const Attr* a = v.need(o, "axis", Attr::Kind::Int);
  v.check(s->is_tensor && a->i >= 0 && a->i <= s->rank(), o, "axis out of range");
  std::vector<int64_t> want = s->shape;
  want.insert(want.begin() + a->i, 1);
  v.check(r->is_tensor && r->shape == want && elem_eq(s, r), o, "result must be {}", Dims{want});
}

void reshape(Verifier& v, const Op& o) {
  v.counts(o, 1, 1);
  const Type* s = v.in(o, 0);
  const Type* r = v.out(o);
  v.check(s->is_tensor && r->is_tensor && s->numel() == r->numel() && elem_eq(s, r), o,
          "cannot reshape {} to {}", *s, *r);
}

void trans(Verifier& v, const Op& o) {
  v.counts(o, 1, 1);
  const Type* s = v.in(o, 0);
  const Type* r = v.out(o);
  const Attr* a = v.need(o, "order", Attr::Kind::IntArray);
  v.check(s->is_tensor && r->is_tensor && static_cast<int>(a->ints.size()) == s->rank() && elem_eq(s, r), o,
          "order must list every dimension");
  std::vector<int64_t> want;
  std::vector<bool> seen(s->rank(), false);
  for (int64_t d : a->ints) {
    v.check(d >= 0 && d < s->rank() && !seen[d], o, "order must be a permutation");
    seen[d] = true;
    want.push_back(s->shape[d]);
  }
  v.check(r->shape == want, o, "result shape must be {}", Dims{want});
}

namespace {
/// cat and join: two operands of one tensor type; returns it.
const Type* two_of_a_kind(Verifier& v, const Op& o) {
  v.counts(o, 2, 1);
  v.check(v.in(o, 0) == v.in(o, 1), o, "operands must have the same type");
  const Type* s = v.in(o, 0);
  v.check(s->is_tensor && elem_eq(v.out(o), s), o, "result element type must match");
  return s;
}
}  // namespace

void cat(Verifier& v, const Op& o) {
  const Type* s = two_of_a_kind(v, o);
  v.check(v.out(o)->rank() == s->rank() && v.out(o)->numel() == 2 * s->numel(), o,
          "result must hold both operands (same rank, twice the elements)");
}

void join(Verifier& v, const Op& o) {
  const Type* s = two_of_a_kind(v, o);
  std::vector<int64_t> want = s->shape;
  want.push_back(2);
  v.check(v.out(o)->shape == want, o, "result shape must be {}", Dims{want});
}

void split(Verifier& v, const Op& o) {
  v.counts(o, 1, 2);
  const Type* s = v.in(o, 0);
  v.check(s->is_tensor && s->rank() >= 1 && s->shape.back() == 2, o, "operand's last dimension must be 2");
  std::vector<int64_t> want(s->shape.begin(), s->shape.end() - 1);
  for (int i = 0; i < 2; ++i)
    v.check(v.out(o, i)->is_tensor && v.out(o, i)->shape == want && elem_eq(v.out(o, i), s), o,
            "results must be {} of the operand's element type", Dims{want});
}

void gather(Verifier& v, const Op& o) {
  v.counts(o, 2, 1);
  const Attr* a = v.need(o, "axis", Attr::Kind::Int);
  const Type* s = v.in(o, 0);
  const Type* idx = v.in(o, 1);
  v.check(s->is_tensor && idx->is_tensor && s->rank() == idx->rank() && int_like(idx), o,
          "source and indices must be tensors of the same rank");
  v.check(a->i >= 0 && a->i < s->rank(), o, "axis out of range");
  v.check(v.out(o)->shape == idx->shape && elem_eq(v.out(o), s), o, "result must have the indices' shape");
}

void histogram(Verifier& v, const Op& o) {
  v.operands_between(o, 1, 2);
  v.check(o.results.size() == 1, o, "expects one result");
  const Type* s = v.in(o, 0);
  v.check(s->is_tensor && s->rank() == 1 && int_like(s), o, "operand must be a 1-D integer tensor");
  v.check(v.out(o)->is_tensor && v.out(o)->rank() == 1 && int_like(v.out(o)), o,
          "result must be a 1-D integer tensor");
  if (o.operands.size() == 2)
    v.check(is_i1(v.in(o, 1)) && same_shape(v.in(o, 1), s), o, "mask must be i1 with the operand's shape");
}

void dot(Verifier& v, const Op& o) {
  v.counts(o, 3, 1);
  const Type* a = v.in(o, 0);
  const Type* b = v.in(o, 1);
  const Type* c = v.in(o, 2);
  v.check(v.out(o) == c, o, "result must have the accumulator's type");
  int r = a->rank();
  v.check(
      a->is_tensor && b->is_tensor && c->is_tensor && (r == 2 || r == 3) && b->rank() == r && c->rank() == r,
      o, "operands must be 2-D (or batched 3-D) tensors of equal rank");
  int k = r - 2;
  int64_t M = a->shape[k], K = a->shape[k + 1], K2 = b->shape[k], N = b->shape[k + 1];
  v.check(K == K2, o, "inner dimensions differ: {} * {}", *a, *b);
  v.check(c->shape[k] == M && c->shape[k + 1] == N, o, "accumulator {} must be {}x{}", *c, M, N);
  if (r == 3) v.check(a->shape[0] == b->shape[0] && a->shape[0] == c->shape[0], o, "batch dimensions differ");
  if (int_like(a)) {
    v.check(int_like(b) && int_like(c), o, "integer dot needs integer operands and accumulator");
  } else {
    v.check(float_like(a) && float_like(b) && float_like(c), o,
            "float dot needs float operands and accumulator");
  }
  v.keyword_in(o, "inputPrecision", {"tf32", "tf32x3", "ieee", "bf16x3", "bf16x6"}, false);
}

void dot_scaled(Verifier& v, const Op& o) {
  v.check(o.results.size() == 1 && o.operands.size() >= 3 && o.operands.size() <= 5, o, "malformed operands");
  const Type* c = o.operands.back()->type;
  v.check(v.out(o) == c && c->is_tensor && c->rank() == 2, o, "result must be the 2-D accumulator type");
  static const std::initializer_list<std::string_view> kinds = {"e4m3", "e5m2", "e2m3", "e3m2",
                                                                "e2m1", "bf16", "fp16"};
  v.keyword_in(o, "lhs", kinds, true);
  v.keyword_in(o, "rhs", kinds, true);
}

namespace {
void reduce_or_scan(Verifier& v, const Op& o, bool scan) {
  v.check(!o.operands.empty() && o.results.size() == o.operands.size() && o.regions.size() == 1, o,
          "needs N operands, N results and one combine region");
  const Attr* ax = v.need(o, "axis", Attr::Kind::Int);
  const Type* s0 = v.in(o, 0);
  v.check(s0->is_tensor, o, "operands must be tensors");
  for (auto* x : o.operands)
    v.check(x->type->is_tensor && x->type->shape == s0->shape, o, "operands must share a shape");
  v.check(ax->i >= 0 && ax->i < s0->rank(), o, "axis {} out of range for rank {}", ax->i, s0->rank());
  std::vector<int64_t> want = s0->shape;
  if (!scan) want.erase(want.begin() + ax->i);
  for (size_t i = 0; i < o.results.size(); ++i) {
    const Type* r = v.out(o, i);
    bool ok = elem_eq(r, v.in(o, i)) &&
              (want.empty() && !scan ? !r->is_tensor : (r->is_tensor && r->shape == want));
    if (ok) continue;
    std::string shape = want.empty() ? "a scalar" : fmt::format("{}", Dims{want});
    v.fail(o, fmt::format("result {} has type {}, expected {} of {}", i, *r, shape,
                          elem_name(v.in(o, i)->elem)));
  }
  const Region& r = *o.regions[0];
  v.check(!r.blocks.empty() && r.blocks[0]->args.size() == 2 * o.operands.size(), o,
          "combine region needs two arguments per operand");
  for (size_t i = 0; i < r.blocks[0]->args.size(); ++i) {
    const Type* a = r.blocks[0]->args[i]->type;
    v.check(!a->is_tensor && elem_eq(a, v.in(o, i % o.operands.size())), o, "combine argument {} has type {}",
            i, *a);
  }
}
}  // namespace

void reduce(Verifier& v, const Op& o) { reduce_or_scan(v, o, false); }
void scan(Verifier& v, const Op& o) { reduce_or_scan(v, o, true); }

void map_elementwise(Verifier& v, const Op& o) {
  v.check(!o.operands.empty() && !o.results.empty() && o.regions.size() == 1, o, "malformed map_elementwise");
  int64_t pack = 1;
  if (const Attr* p = o.attr("pack")) {
    v.check(p->kind == Attr::Kind::Int && p->i >= 1 && (p->i & (p->i - 1)) == 0, o,
            "pack must be a power of two");
    pack = p->i;
  }
  const Type* s0 = v.in(o, 0);
  for (auto* x : o.operands) v.check(x->type->shape == s0->shape, o, "operands must share a shape");
  for (auto& r : o.results) v.check(r->type->shape == s0->shape, o, "results must have the operands' shape");
  const Region& r = *o.regions[0];
  v.check(!r.blocks.empty() && r.blocks[0]->args.size() == o.operands.size() * static_cast<size_t>(pack), o,
          "region needs pack arguments per operand");
}

}  // namespace tilescope::ir::verifiers
