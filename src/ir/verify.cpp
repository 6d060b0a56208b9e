// ir::verify: type and shape checks of a read module, per op family (reference §1-§2; the rules
// are those of Triton's ODS constraints and op verifiers, e.g. TensorSizeTrait in §1, dot shapes,
// broadcast/expand_dims/reshape rules in §1.4). After the family rules, an op's own hook in the op
// table (OpDef::verify) runs when set. Errors go through fail_at: "file:line:col: msg (py:L:C)".
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <string_view>

#include "src/ops/table.h"
#include "tilescope/ir/reader.h"

namespace tilescope::ir {

namespace {

constexpr int64_t kMaxTensorNumel = 1048576;  // Triton maxTensorNumElements (reference §1)

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string shape_str(const std::vector<int64_t>& s) { return fmt::format("[{}]", fmt::join(s, "x")); }

// Same element (including the pointee of pointers), shapes ignored.
bool elem_eq(const Type* a, const Type* b) {
  return a->elem == b->elem && a->pointee == b->pointee && a->addr_space == b->addr_space;
}
bool same_shape(const Type* a, const Type* b) { return a->is_tensor == b->is_tensor && a->shape == b->shape; }
bool int_like(const Type* t) { return is_int(t->elem); }
bool float_like(const Type* t) { return is_float(t->elem); }
bool is_i1(const Type* t) { return t->elem == Elem::i1; }
bool scalar_i32(const Type* t) { return !t->is_tensor && t->elem == Elem::i32; }
bool scalar_i64(const Type* t) { return !t->is_tensor && t->elem == Elem::i64; }

class Verifier {
 public:
  explicit Verifier(const Module& m) : m_(m) {}

  void run() {
    for (auto& f : m_.functions) {
      fn_ = f.get();
      if (f->body.blocks.empty()) continue;
      region(f->body, nullptr);
    }
  }

 private:
  [[noreturn]] void fail(const Op& o, const std::string& msg) {
    fail_at(m_, o, fmt::format("'{}': {}", o.name, msg));
  }
  void check(bool ok, const Op& o, const std::string& msg) {
    if (!ok) fail(o, msg);
  }
  const Type* in(const Op& o, size_t i) {
    if (i >= o.operands.size()) fail(o, fmt::format("expects at least {} operand(s)", i + 1));
    return o.operands[i]->type;
  }
  const Type* out(const Op& o, size_t i = 0) {
    if (i >= o.results.size()) fail(o, fmt::format("expects at least {} result(s)", i + 1));
    return o.results[i]->type;
  }
  void counts(const Op& o, size_t nops, size_t nres) {
    check(o.operands.size() == nops, o,
          fmt::format("expects {} operand(s), has {}", nops, o.operands.size()));
    check(o.results.size() == nres, o, fmt::format("expects {} result(s), has {}", nres, o.results.size()));
  }
  void operands_between(const Op& o, size_t lo, size_t hi) {
    check(o.operands.size() >= lo && o.operands.size() <= hi, o,
          fmt::format("expects {} to {} operands, has {}", lo, hi, o.operands.size()));
  }
  const Attr* need(const Op& o, const char* k, Attr::Kind kind) {
    const Attr* a = o.attr(k);
    check(a && a->kind == kind, o, fmt::format("missing or malformed attribute '{}'", k));
    return a;
  }
  void keyword_in(const Op& o, const char* k, std::initializer_list<std::string_view> allowed,
                  bool required) {
    const Attr* a = o.attr(k);
    if (!a) {
      check(!required, o, fmt::format("missing '{}'", k));
      return;
    }
    check(a->kind == Attr::Kind::Keyword, o, fmt::format("'{}' must be a keyword", k));
    for (auto s : allowed)
      if (a->s == s) return;
    fail(o, fmt::format("invalid {} '{}' (expected one of {})", k, a->s, fmt::join(allowed, ", ")));
  }
  // TensorSizeTrait: tt ops only take tensors with a power-of-two element count <= 2^20.
  void tensor_size(const Op& o, const Type* t) {
    if (t->elem == Elem::ptr && t->pointee && t->pointee->is_tensor) tensor_size(o, t->pointee);
    if (t->elem == Elem::tensordesc && t->pointee) tensor_size(o, t->pointee);
    if (!t->is_tensor) return;
    int64_t n = t->numel();
    check(n > 0 && n <= kMaxTensorNumel && (n & (n - 1)) == 0, o,
          fmt::format("tensor {} has {} elements; Triton requires a power of two no larger than {}", t->str(),
                      n, kMaxTensorNumel));
  }
  bool is_terminator(const Op& o) {
    Syntax s = o.def->syntax;
    return s == Syntax::Return || s == Syntax::Branch || s == Syntax::CondBranch || s == Syntax::Condition;
  }

  void region(const Region& r, const Op* parent) {
    for (auto& b : r.blocks) {
      for (auto& o : b->ops) {
        op(*o);
        bool last = o.get() == b->ops.back().get();
        if (is_terminator(*o) && !last) fail(*o, "terminator is not the last op of its block");
      }
      if (b->ops.empty() || !is_terminator(*b->ops.back())) {
        if (!b->ops.empty()) fail(*b->ops.back(), "block does not end with a terminator");
        if (parent) fail(*parent, "region block is empty (no terminator)");
        throw Error(fmt::format("{}: function '@{}' has an empty block", m_.filename, fn_->name));
      }
    }
  }

  void op(const Op& o) {
    const std::string& n = o.name;
    if (starts_with(n, "tt.")) {
      for (auto* v : o.operands) tensor_size(o, v->type);
      for (auto& r : o.results) tensor_size(o, r->type);
    }
    switch (o.def->syntax) {
      case Syntax::SameType: same_type(o); break;
      case Syntax::Compare: compare(o); break;
      case Syntax::Select: select(o); break;
      case Syntax::Cast: cast(o); break;
      case Syntax::Arrow: arrow(o); break;
      case Syntax::FirstType: addptr(o); break;
      case Syntax::Functional: functional(o); break;
      case Syntax::Load: load(o); break;
      case Syntax::NoResult: no_result(o); break;
      case Syntax::Unsplat:
        counts(o, 1, 1);
        check(in(o, 0)->is_tensor && in(o, 0)->numel() == 1, o, "operand must be a one-element tensor");
        check(!out(o)->is_tensor && elem_eq(out(o), in(o, 0)), o,
              "result must be the operand's element type");
        break;
      case Syntax::Dot: dot(o); break;
      case Syntax::DotScaled: dot_scaled(o); break;
      case Syntax::StrippedPtr: block_ptr(o); break;
      case Syntax::MakeDesc: make_desc(o); break;
      case Syntax::Print:
        check(o.results.empty(), o, "has no results");
        check(o.attr("prefix") && o.attr("prefix")->kind == Attr::Kind::String, o, "missing prefix string");
        break;
      case Syntax::Assert:
        counts(o, 1, 0);
        check(is_i1(in(o, 0)), o, "condition must be i1 or a tensor of i1");
        need(o, "message", Attr::Kind::String);
        break;
      case Syntax::Call: call(o); break;
      case Syntax::Return: ret(o); break;
      case Syntax::For: for_op(o); break;
      case Syntax::If: if_op(o); break;
      case Syntax::While: while_op(o); break;
      case Syntax::Condition: condition(o); break;
      case Syntax::Branch:
      case Syntax::CondBranch: branch(o); break;
      case Syntax::Barrier: counts(o, 0, 0); break;
      case Syntax::GenericOnly:
        if (n == "tt.reduce")
          reduce(o, false);
        else if (n == "tt.scan")
          reduce(o, true);
        else if (n == "tt.map_elementwise")
          map_elementwise(o);
        else
          fail(o, "cannot appear inside a function");
        break;
    }
    for (auto& r : o.regions) region(*r, &o);
    if (o.def->verify) o.def->verify(m_, o);
  }

  // ------------------------------------------------------------ elementwise
  void same_type(const Op& o) {
    const std::string& n = o.name;
    static const std::set<std::string_view> nullary = {"arith.constant", "tt.make_range", "tt.get_program_id",
                                                       "tt.get_num_programs", "ub.poison"};
    static const std::set<std::string_view> ternary = {"math.fma", "tt.clampf"};
    bool unary = n == "arith.negf" || n == "tt.precise_sqrt" || (starts_with(n, "math.") && n != "math.fma");
    size_t want = nullary.count(n) ? 0 : ternary.count(n) ? 3 : unary ? 1 : 2;
    counts(o, want, 1);
    const Type* t = out(o);
    for (auto* v : o.operands)
      check(v->type == t, o,
            fmt::format("operand type {} differs from result type {}", v->type->str(), t->str()));
    if (n == "tt.approx_divf") {  // 3.9: F32 or tensor of F32 only (TritonOps.td)
      check(t->elem == Elem::f32, o, fmt::format("needs f32 operands, found {}", t->str()));
      return;
    }
    if (n == "arith.constant") {
      const Attr* a = o.attr("value");
      check(a && a->type == t, o, "value attribute type must equal the result type");
      return;
    }
    if (n == "tt.make_range") {
      const Attr* s = need(o, "start", Attr::Kind::Int);
      const Attr* e = need(o, "end", Attr::Kind::Int);
      check(t->is_tensor && t->rank() == 1 && t->elem == Elem::i32, o, "result must be a 1-D tensor of i32");
      check(e->i > s->i && e->i - s->i == t->shape[0], o,
            fmt::format("end - start = {} but the result has {} elements", e->i - s->i, t->shape[0]));
      return;
    }
    if (n == "tt.get_program_id" || n == "tt.get_num_programs") {
      const Attr* a = need(o, "axis", Attr::Kind::Int);
      check(a->i >= 0 && a->i <= 2, o, "axis must be 0, 1 or 2");
      check(scalar_i32(t), o, "result must be i32");
      return;
    }
    if (n == "ub.poison") return;
    bool int_op = n == "math.absi" || n == "tt.mulhiui" ||
                  (starts_with(n, "arith.") && (n.back() == 'i' || n.ends_with("si") || n.ends_with("ui")));
    if (int_op) {
      check(int_like(t), o, fmt::format("needs integer operands, found {}", t->str()));
    } else {
      check(float_like(t), o, fmt::format("needs float operands, found {}", t->str()));
    }
    if (n == "tt.clampf") keyword_in(o, "propagateNan", {"none", "all"}, true);
  }
  void compare(const Op& o) {
    counts(o, 2, 1);
    check(in(o, 0) == in(o, 1), o, "operands must have the same type");
    const Type* t = in(o, 0);
    check(is_i1(out(o)) && same_shape(out(o), t), o, "result must be i1 with the operands' shape");
    if (o.name == "arith.cmpi") {
      check(int_like(t) || t->elem == Elem::ptr, o, "needs integer operands");
      keyword_in(o, "predicate", {"eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"}, true);
    } else {
      check(float_like(t), o, "needs float operands");
      keyword_in(o, "predicate",
                 {"false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult", "ule",
                  "une", "uno", "true"},
                 true);
    }
  }
  void select(const Op& o) {
    counts(o, 3, 1);
    const Type* c = in(o, 0);
    check(is_i1(c) && (!c->is_tensor || same_shape(c, out(o))), o,
          "condition must be i1, scalar or of the result shape");
    check(in(o, 1) == out(o) && in(o, 2) == out(o), o, "both values must have the result type");
  }
  void cast(const Op& o) {
    counts(o, 1, 1);
    const Type* a = in(o, 0);
    const Type* b = out(o);
    check(same_shape(a, b), o,
          fmt::format("operand {} and result {} must have the same shape", a->str(), b->str()));
    const std::string& n = o.name;
    int wa = elem_bits(a->elem), wb = elem_bits(b->elem);
    if (n == "arith.extsi" || n == "arith.extui") {
      check(int_like(a) && int_like(b) && wb > wa, o, "needs a wider integer result");
    } else if (n == "arith.trunci") {
      check(int_like(a) && int_like(b) && wb < wa, o, "needs a narrower integer result");
    } else if (n == "arith.sitofp" || n == "arith.uitofp") {
      check(int_like(a) && float_like(b), o, "needs integer to float");
    } else if (n == "arith.fptosi" || n == "arith.fptoui") {
      check(float_like(a) && int_like(b), o, "needs float to integer");
    } else if (n == "arith.extf") {
      check(float_like(a) && float_like(b) && wb > wa, o, "needs a wider float result");
    } else if (n == "arith.truncf") {
      check(float_like(a) && float_like(b) && wb < wa, o, "needs a narrower float result");
    } else if (n == "arith.bitcast") {
      check(wa == wb && a->elem != Elem::ptr && b->elem != Elem::ptr, o, "needs types of the same bit width");
    } else if (n == "arith.index_cast") {
      check(int_like(a) && int_like(b), o, "needs integer types");
    }
  }

  // ------------------------------------------------------------ shapes (reference §1.4)
  void arrow(const Op& o) {
    const std::string& n = o.name;
    if (n == "tt.atomic_poll") {  // 3.9: sem, scope, ptr, expected [timeout t] -> i1 of the pointer's shape
      operands_between(o, 2, 3);
      check(o.results.size() == 1, o, "expects one result");
      const Type* p = in(o, 0);
      const Type* e = in(o, 1);
      check(p->elem == Elem::ptr && !p->is_block_ptr() && same_shape(p, e) && elem_eq(e, p->pointee) &&
                int_like(e),
            o, "expected value must be an integer matching the pointer's shape and pointee");
      check(is_i1(out(o)) && same_shape(out(o), p), o, "result must be i1 with the pointer's shape");
      check(o.operands.size() == 2 || (!in(o, 2)->is_tensor && in(o, 2)->elem == Elem::i64), o,
            "timeout must be an i64 scalar");
      check((o.operands.size() == 3) == (o.attr("timeout") != nullptr), o,
            "a third operand is written as `timeout %t`");
      keyword_in(o, "sem", {"relaxed", "acquire", "release", "acq_rel"}, true);
      keyword_in(o, "scope", {"gpu", "cta", "sys"}, true);
      return;
    }
    if (n == "tt.elementwise_inline_asm") {
      check(!o.results.empty(), o, "needs at least one result");
      return;
    }
    if (n == "tt.split") {
      counts(o, 1, 2);
      const Type* s = in(o, 0);
      check(s->is_tensor && s->rank() >= 1 && s->shape.back() == 2, o, "operand's last dimension must be 2");
      std::vector<int64_t> want(s->shape.begin(), s->shape.end() - 1);
      for (int i = 0; i < 2; ++i)
        check(out(o, i)->is_tensor && out(o, i)->shape == want && elem_eq(out(o, i), s), o,
              fmt::format("results must be {} of the operand's element type", shape_str(want)));
      return;
    }
    if (n == "tt.histogram") {
      operands_between(o, 1, 2);
      check(o.results.size() == 1, o, "expects one result");
      const Type* s = in(o, 0);
      check(s->is_tensor && s->rank() == 1 && int_like(s), o, "operand must be a 1-D integer tensor");
      check(out(o)->is_tensor && out(o)->rank() == 1 && int_like(out(o)), o,
            "result must be a 1-D integer tensor");
      if (o.operands.size() == 2)
        check(is_i1(in(o, 1)) && same_shape(in(o, 1), s), o, "mask must be i1 with the operand's shape");
      return;
    }
    if (n == "tt.cat" || n == "tt.join") {
      counts(o, 2, 1);
      check(in(o, 0) == in(o, 1), o, "operands must have the same type");
      const Type* s = in(o, 0);
      check(s->is_tensor && elem_eq(out(o), s), o, "result element type must match");
      if (n == "tt.cat") {
        check(out(o)->rank() == s->rank() && out(o)->numel() == 2 * s->numel(), o,
              "result must hold both operands (same rank, twice the elements)");
      } else {
        std::vector<int64_t> want = s->shape;
        want.push_back(2);
        check(out(o)->shape == want, o, fmt::format("result shape must be {}", shape_str(want)));
      }
      return;
    }
    if (n == "tt.descriptor_load") {
      check(!o.operands.empty() && o.results.size() == 1, o, "expects a descriptor and one result");
      const Type* d = in(o, 0);
      check(d->elem == Elem::tensordesc && d->pointee, o, "first operand must be a tensor descriptor");
      const Type* blk = d->pointee;
      check(o.operands.size() == 1 + static_cast<size_t>(blk->rank()), o,
            fmt::format("expects {} indices", blk->rank()));
      for (size_t i = 1; i < o.operands.size(); ++i) check(scalar_i32(in(o, i)), o, "indices must be i32");
      check(out(o)->is_tensor && elem_eq(out(o), blk) && out(o)->numel() == blk->numel(), o,
            "result must match the descriptor's block");
      return;
    }
    counts(o, 1, 1);
    const Type* s = in(o, 0);
    const Type* r = out(o);
    if (n == "tt.int_to_ptr") {
      check(same_shape(s, r) && s->elem == Elem::i64 && r->elem == Elem::ptr, o,
            "needs i64 to pointer, same shape");
    } else if (n == "tt.ptr_to_int") {
      check(same_shape(s, r) && s->elem == Elem::ptr && r->elem == Elem::i64, o,
            "needs pointer to i64, same shape");
    } else if (n == "tt.bitcast") {
      check(same_shape(s, r), o, "operand and result must have the same shape");
      check(elem_bits(s->elem) == elem_bits(r->elem) && s->elem != Elem::tensordesc, o,
            "operand and result must have the same bit width");
    } else if (n == "tt.fp_to_fp") {
      check(same_shape(s, r) && float_like(s) && float_like(r), o, "needs float to float, same shape");
      keyword_in(o, "rounding", {"rtz", "rtne"}, false);
      check(elem_bits(r->elem) >= elem_bits(s->elem) || o.attr("rounding"), o,
            "a downcast needs a rounding mode");
    } else if (n == "tt.splat") {
      check(!s->is_tensor && r->is_tensor && elem_eq(s, r), o,
            fmt::format("needs a scalar and a tensor of it, found {} -> {}", s->str(), r->str()));
    } else if (n == "tt.broadcast") {
      check(s->is_tensor && r->is_tensor && s->rank() == r->rank() && elem_eq(s, r), o,
            "operand and result must be tensors of equal rank and element");
      for (int i = 0; i < s->rank(); ++i)
        check(s->shape[i] == r->shape[i] || s->shape[i] == 1, o,
              fmt::format("cannot broadcast {} to {}", shape_str(s->shape), shape_str(r->shape)));
    } else if (n == "tt.expand_dims") {
      const Attr* a = need(o, "axis", Attr::Kind::Int);
      check(s->is_tensor && a->i >= 0 && a->i <= s->rank(), o, "axis out of range");
      std::vector<int64_t> want = s->shape;
      want.insert(want.begin() + a->i, 1);
      check(r->is_tensor && r->shape == want && elem_eq(s, r), o,
            fmt::format("result must be {}", shape_str(want)));
    } else if (n == "tt.reshape") {
      check(s->is_tensor && r->is_tensor && s->numel() == r->numel() && elem_eq(s, r), o,
            fmt::format("cannot reshape {} to {}", s->str(), r->str()));
    } else if (n == "tt.trans") {
      const Attr* a = need(o, "order", Attr::Kind::IntArray);
      check(s->is_tensor && r->is_tensor && static_cast<int>(a->ints.size()) == s->rank() && elem_eq(s, r), o,
            "order must list every dimension");
      std::vector<int64_t> want;
      std::vector<bool> seen(s->rank(), false);
      for (int64_t d : a->ints) {
        check(d >= 0 && d < s->rank() && !seen[d], o, "order must be a permutation");
        seen[d] = true;
        want.push_back(s->shape[d]);
      }
      check(r->shape == want, o, fmt::format("result shape must be {}", shape_str(want)));
    }
  }
  void addptr(const Op& o) {
    counts(o, 2, 1);
    const Type* p = in(o, 0);
    const Type* off = in(o, 1);
    check(p->elem == Elem::ptr && !p->is_block_ptr(), o,
          "first operand must be a pointer or tensor of pointers");
    check(int_like(off) && same_shape(p, off), o, "offset must be an integer of the pointer's shape");
    check(out(o) == p, o, "result type must be the pointer type");
  }
  void functional(const Op& o) {
    const std::string& n = o.name;
    if (n == "tt.atomic_load") {  // 3.9: sem, scope, ptr[, mask] -> pointee with the pointer's shape
      operands_between(o, 1, 2);
      check(o.results.size() == 1, o, "expects one result");
      const Type* p = in(o, 0);
      check(p->elem == Elem::ptr && !p->is_block_ptr(), o,
            "first operand must be a pointer or tensor of pointers");
      check(same_shape(p, out(o)) && elem_eq(out(o), p->pointee), o,
            "result must be the pointee with the pointer's shape");
      if (o.operands.size() == 2) check(is_i1(in(o, 1)) && same_shape(in(o, 1), p), o, "mask must be i1");
      keyword_in(o, "sem", {"relaxed", "acquire", "release", "acq_rel"}, true);
      keyword_in(o, "scope", {"gpu", "cta", "sys"}, true);
      return;
    }
    if (n == "tt.atomic_rmw" || n == "tt.atomic_cas") {
      bool cas = n == "tt.atomic_cas";
      if (cas)
        counts(o, 3, 1);
      else {
        operands_between(o, 2, 3);
        check(o.results.size() == 1, o, "expects one result");
      }
      const Type* p = in(o, 0);
      const Type* v = in(o, cas ? 2 : 1);
      check(p->elem == Elem::ptr && !p->is_block_ptr() && same_shape(p, v) && elem_eq(v, p->pointee), o,
            "value must match the pointer's shape and pointee");
      check(out(o) == v, o, "result must have the value's type");
      if (cas) check(in(o, 1) == v, o, "compare value must have the value's type");
      if (!cas && o.operands.size() == 3)
        check(is_i1(in(o, 2)) && same_shape(in(o, 2), p), o, "mask must be i1");
      if (!cas)
        keyword_in(o, "atomic_rmw_op",
                   {"and", "or", "xor", "add", "fadd", "max", "min", "umax", "umin", "exch"}, true);
      keyword_in(o, "sem", {"relaxed", "acquire", "release", "acq_rel"}, true);
      keyword_in(o, "scope", {"gpu", "cta", "sys"}, true);
      return;
    }
    if (n == "tt.gather") {
      counts(o, 2, 1);
      const Attr* a = need(o, "axis", Attr::Kind::Int);
      const Type* s = in(o, 0);
      const Type* idx = in(o, 1);
      check(s->is_tensor && idx->is_tensor && s->rank() == idx->rank() && int_like(idx), o,
            "source and indices must be tensors of the same rank");
      check(a->i >= 0 && a->i < s->rank(), o, "axis out of range");
      check(out(o)->shape == idx->shape && elem_eq(out(o), s), o, "result must have the indices' shape");
      return;
    }
    if (n == "tt.extern_elementwise") {
      check(o.results.size() == 1, o, "expects one result");
      need(o, "symbol", Attr::Kind::String);
      for (auto* v : o.operands)
        check(v->type->is_tensor == out(o)->is_tensor && v->type->shape == out(o)->shape, o,
              "operands must have the result's shape");
      return;
    }
    if (n == "tt.descriptor_gather") {
      check(!o.operands.empty() && in(o, 0)->elem == Elem::tensordesc, o,
            "first operand must be a descriptor");
      return;
    }
  }
  void load(const Op& o) {
    operands_between(o, 1, 3);
    check(o.results.size() == 1, o, "expects one result");
    const Type* p = in(o, 0);
    const Type* r = out(o);
    check(p->elem == Elem::ptr, o, "first operand must be a pointer");
    if (p->is_block_ptr()) {
      check(o.operands.size() == 1, o, "a block-pointer load takes no mask or other");
      check(r == p->pointee, o, "result must be the block type");
      return;
    }
    check(same_shape(p, r) && elem_eq(r, p->pointee), o,
          "result must be the pointee with the pointer's shape");
    if (o.operands.size() >= 2)
      check(is_i1(in(o, 1)) && same_shape(in(o, 1), p), o,
            fmt::format("mask {} must be i1 with the pointer's shape", in(o, 1)->str()));
    if (o.operands.size() == 3)
      check(in(o, 2) == r, o, fmt::format("other {} must have type {}", in(o, 2)->str(), r->str()));
    keyword_in(o, "cache", {"none", "ca", "cg", "wb", "cs", "wt", "cv"}, false);
    keyword_in(o, "evict", {"evict_normal", "evict_first", "evict_last"}, false);
  }
  void no_result(const Op& o) {
    const std::string& n = o.name;
    check(o.results.empty(), o, "has no results");
    if (n == "tt.atomic_store") {  // 3.9: sem, scope, ptr, value[, mask]
      operands_between(o, 2, 3);
      const Type* p = in(o, 0);
      const Type* v = in(o, 1);
      check(p->elem == Elem::ptr && !p->is_block_ptr(), o,
            "first operand must be a pointer or tensor of pointers");
      check(same_shape(p, v) && elem_eq(v, p->pointee), o,
            "value must be the pointee with the pointer's shape");
      if (o.operands.size() == 3) check(is_i1(in(o, 2)) && same_shape(in(o, 2), p), o, "mask must be i1");
      keyword_in(o, "sem", {"relaxed", "acquire", "release", "acq_rel"}, true);
      keyword_in(o, "scope", {"gpu", "cta", "sys"}, true);
      return;
    }
    if (n == "tt.store") {
      operands_between(o, 2, 3);
      const Type* p = in(o, 0);
      check(p->elem == Elem::ptr, o, "first operand must be a pointer");
      const Type* v = in(o, 1);
      if (p->is_block_ptr()) {
        check(v == p->pointee, o, "value must be the block type");
        check(o.operands.size() == 2, o, "a block-pointer store takes no mask");
        return;
      }
      check(same_shape(p, v) && elem_eq(v, p->pointee), o,
            fmt::format("value {} must be the pointee with the pointer's shape ({})", v->str(), p->str()));
      if (o.operands.size() == 3)
        check(is_i1(in(o, 2)) && same_shape(in(o, 2), p), o, "mask must be i1 with the pointer's shape");
      keyword_in(o, "cache", {"none", "ca", "cg", "wb", "cs", "wt", "cv"}, false);
      keyword_in(o, "evict", {"evict_normal", "evict_first", "evict_last"}, false);
      return;
    }
    if (n == "tt.descriptor_store" || n == "tt.descriptor_reduce") {
      check(o.operands.size() >= 2 && in(o, 0)->elem == Elem::tensordesc && in(o, 0)->pointee, o,
            "first operand must be a tensor descriptor");
      const Type* blk = in(o, 0)->pointee;
      check(o.operands.size() == 2 + static_cast<size_t>(blk->rank()), o,
            fmt::format("expects {} indices", blk->rank()));
      for (size_t i = 1; i + 1 < o.operands.size(); ++i)
        check(scalar_i32(in(o, i)), o, "indices must be i32");
      const Type* src = o.operands.back()->type;
      check(src->is_tensor && elem_eq(src, blk) && src->numel() == blk->numel(), o,
            "stored value must match the descriptor's block");
      if (n == "tt.descriptor_reduce")
        keyword_in(o, "kind", {"add", "min", "max", "inc", "dec", "and", "or", "xor"}, true);
      return;
    }
    if (n == "llvm.intr.assume") {
      counts(o, 1, 0);
      check(is_i1(in(o, 0)) && !in(o, 0)->is_tensor, o, "needs an i1");
    }
  }

  // ------------------------------------------------------------ dot (reference §1.5)
  void dot(const Op& o) {
    counts(o, 3, 1);
    const Type* a = in(o, 0);
    const Type* b = in(o, 1);
    const Type* c = in(o, 2);
    check(out(o) == c, o, "result must have the accumulator's type");
    int r = a->rank();
    check(a->is_tensor && b->is_tensor && c->is_tensor && (r == 2 || r == 3) && b->rank() == r &&
              c->rank() == r,
          o, "operands must be 2-D (or batched 3-D) tensors of equal rank");
    int k = r - 2;
    int64_t M = a->shape[k], K = a->shape[k + 1], K2 = b->shape[k], N = b->shape[k + 1];
    check(K == K2, o, fmt::format("inner dimensions differ: {} * {}", a->str(), b->str()));
    check(c->shape[k] == M && c->shape[k + 1] == N, o,
          fmt::format("accumulator {} must be {}x{}", c->str(), M, N));
    if (r == 3) check(a->shape[0] == b->shape[0] && a->shape[0] == c->shape[0], o, "batch dimensions differ");
    if (int_like(a)) {
      check(int_like(b) && int_like(c), o, "integer dot needs integer operands and accumulator");
    } else {
      check(float_like(a) && float_like(b) && float_like(c), o,
            "float dot needs float operands and accumulator");
    }
    keyword_in(o, "inputPrecision", {"tf32", "tf32x3", "ieee", "bf16x3", "bf16x6"}, false);
  }
  void dot_scaled(const Op& o) {
    check(o.results.size() == 1 && o.operands.size() >= 3 && o.operands.size() <= 5, o, "malformed operands");
    const Type* c = o.operands.back()->type;
    check(out(o) == c && c->is_tensor && c->rank() == 2, o, "result must be the 2-D accumulator type");
    static const std::initializer_list<std::string_view> kinds = {"e4m3", "e5m2", "e2m3", "e3m2",
                                                                  "e2m1", "bf16", "fp16"};
    keyword_in(o, "lhs", kinds, true);
    keyword_in(o, "rhs", kinds, true);
  }

  // ------------------------------------------------------------ pointers and descriptors
  void block_ptr(const Op& o) {
    check(o.results.size() == 1 && out(o)->is_block_ptr(), o, "result must be a block pointer");
    const Type* blk = out(o)->pointee;
    size_t r = static_cast<size_t>(blk->rank());
    if (o.name == "tt.make_tensor_ptr") {
      check(o.operands.size() == 1 + 3 * r, o,
            fmt::format("expects base, {} shape, {} strides, {} offsets", r, r, r));
      const Type* base = in(o, 0);
      check(base->elem == Elem::ptr && !base->is_tensor && base->pointee && base->pointee->elem == blk->elem,
            o, "base must be a pointer to the block's element");
      for (size_t i = 1; i <= 2 * r; ++i) check(scalar_i64(in(o, i)), o, "shape and strides must be i64");
      for (size_t i = 1 + 2 * r; i < o.operands.size(); ++i)
        check(scalar_i32(in(o, i)), o, "offsets must be i32");
    } else {
      check(o.operands.size() == 1 + r && in(o, 0) == out(o), o,
            "expects the block pointer and one offset per dim");
      for (size_t i = 1; i < o.operands.size(); ++i) check(scalar_i32(in(o, i)), o, "offsets must be i32");
    }
  }
  void make_desc(const Op& o) {
    check(o.results.size() == 1 && out(o)->elem == Elem::tensordesc, o, "result must be a tensor descriptor");
    const Type* blk = out(o)->pointee;
    size_t r = static_cast<size_t>(blk->rank());
    check(o.operands.size() == 1 + 2 * r, o,
          fmt::format("expects base, {} shape and {} stride operands", r, r));
    const Type* base = in(o, 0);
    check(base->elem == Elem::ptr && !base->is_tensor && base->pointee && base->pointee->elem == blk->elem, o,
          "base must be a pointer to the block's element");
    for (size_t i = 1; i <= r; ++i) check(scalar_i32(in(o, i)), o, "shape operands must be i32");
    for (size_t i = 1 + r; i < o.operands.size(); ++i) check(scalar_i64(in(o, i)), o, "strides must be i64");
  }

  // ------------------------------------------------------------ calls and control flow
  void call(const Op& o) {
    const Attr* c = need(o, "callee", Attr::Kind::Symbol);
    Function* f = m_.find(c->s);
    check(f != nullptr, o, fmt::format("unknown callee '@{}'", c->s));
    const auto& args = f->args();
    check(args.size() == o.operands.size(), o, fmt::format("'@{}' takes {} arguments", c->s, args.size()));
    for (size_t i = 0; i < args.size(); ++i)
      check(args[i]->type == in(o, i), o,
            fmt::format("argument {} has type {}, '@{}' expects {}", i, in(o, i)->str(), c->s,
                        args[i]->type->str()));
    check(o.results.size() == f->result_types.size(), o, "result count differs from the callee's");
    for (size_t i = 0; i < o.results.size(); ++i)
      check(out(o, i) == f->result_types[i], o, "result type differs from the callee's");
  }
  void types_equal(const Op& o, const std::vector<const Type*>& want, const char* what) {
    check(o.operands.size() == want.size(), o,
          fmt::format("{} {} value(s) expected, {} given", want.size(), what, o.operands.size()));
    for (size_t i = 0; i < want.size(); ++i)
      check(in(o, i) == want[i], o,
            fmt::format("value {} has type {}, {} expects {}", i, in(o, i)->str(), what, want[i]->str()));
  }
  static std::vector<const Type*> result_types(const Op& o) {
    std::vector<const Type*> v;
    for (auto& r : o.results) v.push_back(r->type);
    return v;
  }
  static std::vector<const Type*> operand_types(const Op& o, size_t from = 0) {
    std::vector<const Type*> v;
    for (size_t i = from; i < o.operands.size(); ++i) v.push_back(o.operands[i]->type);
    return v;
  }
  const Op* parent_op(const Op& o) {
    return o.parent && o.parent->parent ? o.parent->parent->parent : nullptr;
  }
  void ret(const Op& o) {
    check(o.results.empty(), o, "has no results");
    const Op* p = parent_op(o);
    const std::string& n = o.name;
    if (n == "tt.return") {
      check(p == nullptr, o, "must be directly in a function");
      types_equal(o, fn_->result_types, "the function's result");
      return;
    }
    check(p != nullptr, o, "must be inside a region op");
    if (n == "scf.yield") {
      if (p->name == "scf.for" || p->name == "scf.if") {
        types_equal(o, result_types(*p), fmt::format("{} result", p->name).c_str());
      } else if (p->name == "scf.while") {
        check(o.parent->parent == p->regions.back().get(), o, "must be in the 'do' region of scf.while");
        types_equal(o, operand_types(*p), "scf.while argument");
      } else {
        fail(o, fmt::format("cannot terminate '{}'", p->name));
      }
      return;
    }
    std::string owner = n.substr(0, n.size() - std::string_view(".return").size());
    check(p->name == owner, o, fmt::format("must terminate '{}'", owner));
    std::vector<const Type*> want;
    if (owner == "tt.map_elementwise") {
      int64_t pack = p->attr("pack") ? p->attr("pack")->i : 1;
      for (auto& r : p->results)
        for (int64_t k = 0; k < pack && k < 64; ++k) want.push_back(r->type);
    } else {
      for (auto* v : p->operands) want.push_back(v->type);
    }
    check(o.operands.size() == want.size(), o,
          fmt::format("returns {} value(s), expected {}", o.operands.size(), want.size()));
    for (size_t i = 0; i < want.size(); ++i)
      check(elem_eq(in(o, i), want[i]) && !in(o, i)->is_tensor, o,
            fmt::format("value {} has type {}, expected the element type {}", i, in(o, i)->str(),
                        want[i]->str()));
  }
  void region_args(const Op& o, const Region& r, const std::vector<const Type*>& want, const char* what) {
    check(!r.blocks.empty(), o, fmt::format("{} region is empty", what));
    const auto& args = r.blocks[0]->args;
    check(args.size() == want.size(), o,
          fmt::format("{} region has {} arguments, expected {}", what, args.size(), want.size()));
    for (size_t i = 0; i < want.size(); ++i)
      check(args[i]->type == want[i], o,
            fmt::format("{} region argument {} has type {}, expected {}", what, i, args[i]->type->str(),
                        want[i]->str()));
  }
  void for_op(const Op& o) {
    check(o.operands.size() >= 3 && o.regions.size() == 1, o, "malformed scf.for");
    const Type* iv = in(o, 0);
    check(int_like(iv) && !iv->is_tensor && in(o, 1) == iv && in(o, 2) == iv, o,
          "bounds and step must be integers of one type");
    auto inits = operand_types(o, 3);
    check(inits == result_types(o), o, "iter_args types must equal the result types");
    std::vector<const Type*> want{iv};
    want.insert(want.end(), inits.begin(), inits.end());
    region_args(o, *o.regions[0], want, "scf.for body");
    check(o.regions[0]->blocks.size() == 1, o, "body must be a single block");
  }
  void if_op(const Op& o) {
    check(o.operands.size() == 1 && is_i1(in(o, 0)) && !in(o, 0)->is_tensor, o,
          "condition must be an i1 scalar");
    check(o.regions.size() == 1 || o.regions.size() == 2, o,
          "expects a then region and an optional else region");
    check(o.results.empty() || o.regions.size() == 2, o, "an scf.if with results needs an else region");
    for (auto& r : o.regions) region_args(o, *r, {}, "scf.if");
  }
  void while_op(const Op& o) {
    check(o.regions.size() == 2, o, "expects before and after regions");
    region_args(o, *o.regions[0], operand_types(o), "scf.while before");
    region_args(o, *o.regions[1], result_types(o), "scf.while after");
    const Region& before = *o.regions[0];
    check(!before.blocks.empty() && !before.blocks.back()->ops.empty() &&
              before.blocks.back()->ops.back()->name == "scf.condition",
          o, "before region must end with scf.condition");
  }
  void condition(const Op& o) {
    const Op* p = parent_op(o);
    check(p && p->name == "scf.while" && o.parent->parent == p->regions[0].get(), o,
          "must terminate the before region of scf.while");
    check(!o.operands.empty() && is_i1(in(o, 0)) && !in(o, 0)->is_tensor, o,
          "condition must be an i1 scalar");
    types_equal_from(o, 1, result_types(*p), "scf.while result");
  }
  void types_equal_from(const Op& o, size_t from, const std::vector<const Type*>& want, const char* what) {
    auto got = operand_types(o, from);
    check(got.size() == want.size(), o,
          fmt::format("{} {} value(s) expected, {} given", want.size(), what, got.size()));
    for (size_t i = 0; i < want.size(); ++i)
      check(got[i] == want[i], o,
            fmt::format("value {} has type {}, {} expects {}", i, got[i]->str(), what, want[i]->str()));
  }
  void branch(const Op& o) {
    if (o.def->syntax == Syntax::CondBranch) {
      check(o.operands.size() == 1 && is_i1(in(o, 0)) && !in(o, 0)->is_tensor, o,
            "condition must be an i1 scalar");
      check(o.successors.size() == 2, o, "expects two successors");
    } else {
      check(o.operands.empty() && o.successors.size() == 1, o, "expects one successor");
    }
    check(o.successor_operands.size() == o.successors.size(), o, "malformed successor operands");
    for (size_t s = 0; s < o.successors.size(); ++s) {
      const Block* b = o.successors[s];
      const auto& vals = o.successor_operands[s];
      check(b->parent == o.parent->parent, o, "successor must be in the same region");
      check(
          vals.size() == b->args.size(), o,
          fmt::format("passes {} value(s) to '^{}', which takes {}", vals.size(), b->label, b->args.size()));
      for (size_t i = 0; i < vals.size(); ++i)
        check(vals[i]->type == b->args[i]->type, o,
              fmt::format("value {} for '^{}' has type {}, expected {}", i, b->label, vals[i]->type->str(),
                          b->args[i]->type->str()));
    }
  }

  // ------------------------------------------------------------ reduce / scan / map (reference §1.5, §1.1)
  void reduce(const Op& o, bool scan) {
    check(!o.operands.empty() && o.results.size() == o.operands.size() && o.regions.size() == 1, o,
          "needs N operands, N results and one combine region");
    const Attr* ax = need(o, "axis", Attr::Kind::Int);
    const Type* s0 = in(o, 0);
    check(s0->is_tensor, o, "operands must be tensors");
    for (auto* v : o.operands)
      check(v->type->is_tensor && v->type->shape == s0->shape, o, "operands must share a shape");
    check(ax->i >= 0 && ax->i < s0->rank(), o,
          fmt::format("axis {} out of range for rank {}", ax->i, s0->rank()));
    std::vector<int64_t> want = s0->shape;
    if (!scan) want.erase(want.begin() + ax->i);
    for (size_t i = 0; i < o.results.size(); ++i) {
      const Type* r = out(o, i);
      bool ok = elem_eq(r, in(o, i)) &&
                (want.empty() && !scan ? !r->is_tensor : (r->is_tensor && r->shape == want));
      check(ok, o,
            fmt::format("result {} has type {}, expected {} of {}", i, r->str(),
                        want.empty() ? "a scalar" : shape_str(want), elem_name(in(o, i)->elem)));
    }
    const Region& r = *o.regions[0];
    check(!r.blocks.empty() && r.blocks[0]->args.size() == 2 * o.operands.size(), o,
          "combine region needs two arguments per operand");
    for (size_t i = 0; i < r.blocks[0]->args.size(); ++i) {
      const Type* a = r.blocks[0]->args[i]->type;
      check(!a->is_tensor && elem_eq(a, in(o, i % o.operands.size())), o,
            fmt::format("combine argument {} has type {}", i, a->str()));
    }
  }
  void map_elementwise(const Op& o) {
    check(!o.operands.empty() && !o.results.empty() && o.regions.size() == 1, o, "malformed map_elementwise");
    int64_t pack = 1;
    if (const Attr* p = o.attr("pack")) {
      check(p->kind == Attr::Kind::Int && p->i >= 1 && (p->i & (p->i - 1)) == 0, o,
            "pack must be a power of two");
      pack = p->i;
    }
    const Type* s0 = in(o, 0);
    for (auto* v : o.operands) check(v->type->shape == s0->shape, o, "operands must share a shape");
    for (auto& r : o.results) check(r->type->shape == s0->shape, o, "results must have the operands' shape");
    const Region& r = *o.regions[0];
    check(!r.blocks.empty() && r.blocks[0]->args.size() == o.operands.size() * static_cast<size_t>(pack), o,
          "region needs pack arguments per operand");
  }

  const Module& m_;
  const Function* fn_ = nullptr;
};

}  // namespace

void verify(const Module& m) { Verifier(m).run(); }

}  // namespace tilescope::ir
