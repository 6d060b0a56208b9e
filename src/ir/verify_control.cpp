// Verifiers of debugging ops, calls, terminators and control flow (reference §1.6, §1.7, §2.3).
#include "verifiers.h"

namespace tilescope::ir::verifiers {

namespace {

std::vector<const Type*> result_types(const Op& o) {
  std::vector<const Type*> t;
  for (auto& r : o.results) t.push_back(r->type);
  return t;
}

std::vector<const Type*> operand_types(const Op& o, size_t from = 0) {
  std::vector<const Type*> t;
  for (size_t i = from; i < o.operands.size(); ++i) t.push_back(o.operands[i]->type);
  return t;
}

/// The op whose region holds `o` (null directly in a function).
const Op* parent_op(const Op& o) { return o.parent && o.parent->parent ? o.parent->parent->parent : nullptr; }

/// Operands from `from` on have the types `want`.
void types_equal_from(Verifier& v, const Op& o, size_t from, const std::vector<const Type*>& want,
                      const std::string& what) {
  auto got = operand_types(o, from);
  v.check(got.size() == want.size(), o, "{} {} value(s) expected, {} given", want.size(), what, got.size());
  for (size_t i = 0; i < want.size(); ++i)
    v.check(got[i] == want[i], o, "value {} has type {}, {} expects {}", i, *got[i], what, *want[i]);
}

void region_args(Verifier& v, const Op& o, const Region& r, const std::vector<const Type*>& want,
                 const char* what) {
  v.check(!r.blocks.empty(), o, "{} region is empty", what);
  const auto& args = r.blocks[0]->args;
  v.check(args.size() == want.size(), o, "{} region has {} arguments, expected {}", what, args.size(),
          want.size());
  for (size_t i = 0; i < want.size(); ++i)
    v.check(args[i]->type == want[i], o, "{} region argument {} has type {}, expected {}", what, i,
            *args[i]->type, *want[i]);
}

void scalar_condition(Verifier& v, const Op& o) {
  v.check(!o.operands.empty() && is_i1(v.in(o, 0)) && !v.in(o, 0)->is_tensor, o,
          "condition must be an i1 scalar");
}

void successors(Verifier& v, const Op& o) {
  v.check(o.successor_operands.size() == o.successors.size(), o, "malformed successor operands");
  for (size_t s = 0; s < o.successors.size(); ++s) {
    const Block* b = o.successors[s];
    const auto& vals = o.successor_operands[s];
    v.check(b->parent == o.parent->parent, o, "successor must be in the same region");
    v.check(vals.size() == b->args.size(), o, "passes {} value(s) to '^{}', which takes {}", vals.size(),
            b->label, b->args.size());
    for (size_t i = 0; i < vals.size(); ++i)
      v.check(vals[i]->type == b->args[i]->type, o, "value {} for '^{}' has type {}, expected {}", i,
              b->label, *vals[i]->type, *b->args[i]->type);
  }
}

}  // namespace

void print(Verifier& v, const Op& o) {
  v.check(o.results.empty(), o, "has no results");
  v.check(o.attr("prefix") && o.attr("prefix")->kind == Attr::Kind::String, o, "missing prefix string");
}

void assert_(Verifier& v, const Op& o) {
  v.counts(o, 1, 0);
  v.check(is_i1(v.in(o, 0)), o, "condition must be i1 or a tensor of i1");
  v.need(o, "message", Attr::Kind::String);
}

void assume(Verifier& v, const Op& o) {
  v.check(o.results.empty(), o, "has no results");
  v.counts(o, 1, 0);
  v.check(is_i1(v.in(o, 0)) && !v.in(o, 0)->is_tensor, o, "needs an i1");
}

void call(Verifier& v, const Op& o) {
  const Attr* c = v.need(o, "callee", Attr::Kind::Symbol);
  const Function* f = v.module().find(c->s);
  v.check(f != nullptr, o, "unknown callee '@{}'", c->s);
  const auto& args = f->args();
  v.check(args.size() == o.operands.size(), o, "'@{}' takes {} arguments", c->s, args.size());
  for (size_t i = 0; i < args.size(); ++i)
    v.check(args[i]->type == v.in(o, i), o, "argument {} has type {}, '@{}' expects {}", i, *v.in(o, i), c->s,
            *args[i]->type);
  v.check(o.results.size() == f->result_types.size(), o, "result count differs from the callee's");
  for (size_t i = 0; i < o.results.size(); ++i)
    v.check(v.out(o, i) == f->result_types[i], o, "result type differs from the callee's");
}

void func_return(Verifier& v, const Op& o) {
  v.check(o.results.empty(), o, "has no results");
  v.check(parent_op(o) == nullptr, o, "must be directly in a function");
  types_equal_from(v, o, 0, v.function().result_types, "the function's result");
}

void yield(Verifier& v, const Op& o) {
  v.check(o.results.empty(), o, "has no results");
  const Op* p = parent_op(o);
  v.check(p != nullptr, o, "must be inside a region op");
  const Opcode owner = p->def->code;
  if (owner == Opcode::scf_for || owner == Opcode::scf_if) {
    types_equal_from(v, o, 0, result_types(*p), fmt::format("{} result", p->name));
  } else if (owner == Opcode::scf_while) {
    v.check(o.parent->parent == p->regions.back().get(), o, "must be in the 'do' region of scf.while");
    types_equal_from(v, o, 0, operand_types(*p), "scf.while argument");
  } else {
    v.fail(o, fmt::format("cannot terminate '{}'", p->name));
  }
}

// tt.reduce.return / tt.scan.return / tt.map_elementwise.return: scalars of the parent's element types.
void region_return(Verifier& v, const Op& o) {
  v.check(o.results.empty(), o, "has no results");
  const Op* p = parent_op(o);
  v.check(p != nullptr, o, "must be inside a region op");
  const std::string& n = o.name;
  std::string owner = n.substr(0, n.size() - std::string_view(".return").size());
  v.check(p->name == owner, o, "must terminate '{}'", owner);
  std::vector<const Type*> want;
  if (p->def->code == Opcode::tt_map_elementwise) {
    int64_t pack = p->attr("pack") ? p->attr("pack")->i : 1;
    for (auto& r : p->results)
      for (int64_t k = 0; k < pack && k < 64; ++k) want.push_back(r->type);
  } else {
    for (auto* x : p->operands) want.push_back(x->type);
  }
  v.check(o.operands.size() == want.size(), o, "returns {} value(s), expected {}", o.operands.size(),
          want.size());
  for (size_t i = 0; i < want.size(); ++i)
    v.check(elem_eq(v.in(o, i), want[i]) && !v.in(o, i)->is_tensor, o,
            "value {} has type {}, expected the element type {}", i, *v.in(o, i), *want[i]);
}

void nested_func(Verifier& v, const Op& o) { v.fail(o, "cannot appear inside a function"); }

void for_loop(Verifier& v, const Op& o) {
  v.check(o.operands.size() >= 3 && o.regions.size() == 1, o, "malformed scf.for");
  const Type* iv = v.in(o, 0);
  v.check(int_like(iv) && !iv->is_tensor && v.in(o, 1) == iv && v.in(o, 2) == iv, o,
          "bounds and step must be integers of one type");
  auto inits = operand_types(o, 3);
  v.check(inits == result_types(o), o, "iter_args types must equal the result types");
  std::vector<const Type*> want{iv};
  want.insert(want.end(), inits.begin(), inits.end());
  region_args(v, o, *o.regions[0], want, "scf.for body");
  v.check(o.regions[0]->blocks.size() == 1, o, "body must be a single block");
}

void if_else(Verifier& v, const Op& o) {
  v.check(o.operands.size() == 1 && is_i1(v.in(o, 0)) && !v.in(o, 0)->is_tensor, o,
          "condition must be an i1 scalar");
  v.check(o.regions.size() == 1 || o.regions.size() == 2, o,
          "expects a then region and an optional else region");
  v.check(o.results.empty() || o.regions.size() == 2, o, "an scf.if with results needs an else region");
  for (auto& r : o.regions) region_args(v, o, *r, {}, "scf.if");
}

void while_loop(Verifier& v, const Op& o) {
  v.check(o.regions.size() == 2, o, "expects before and after regions");
  region_args(v, o, *o.regions[0], operand_types(o), "scf.while before");
  region_args(v, o, *o.regions[1], result_types(o), "scf.while after");
  const Region& before = *o.regions[0];
  v.check(!before.blocks.empty() && !before.blocks.back()->ops.empty() &&
              before.blocks.back()->ops.back()->def->code == Opcode::scf_condition,
          o, "before region must end with scf.condition");
}

void condition(Verifier& v, const Op& o) {
  const Op* p = parent_op(o);
  v.check(p && p->def->code == Opcode::scf_while && o.parent->parent == p->regions[0].get(), o,
          "must terminate the before region of scf.while");
  scalar_condition(v, o);
  types_equal_from(v, o, 1, result_types(*p), "scf.while result");
}

void br(Verifier& v, const Op& o) {
  v.check(o.operands.empty() && o.successors.size() == 1, o, "expects one successor");
  successors(v, o);
}

void cond_br(Verifier& v, const Op& o) {
  v.check(o.operands.size() == 1 && is_i1(v.in(o, 0)) && !v.in(o, 0)->is_tensor, o,
          "condition must be an i1 scalar");
  v.check(o.successors.size() == 2, o, "expects two successors");
  successors(v, o);
}

void no_operands(Verifier& v, const Op& o) { v.counts(o, 0, 0); }

}  // namespace tilescope::ir::verifiers
