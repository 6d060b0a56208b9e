// ir::verify: walks a read module and applies each op's verifier from the op registry (ops.def's
// Verify column; the rules are Triton's ODS constraints and op verifiers, reference §1-§2), after the
// registry's traits (TensorSizeTrait on tt ops, reference §1). Errors: "file:line:col: 'op': msg (py:L:C)".
#include "tilescope/ir/verify.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cassert>

#include "tilescope/ir/diag.h"
#include "tilescope/ir/ops.h"
#include "tilescope/ir/reader.h"

namespace tilescope::ir {

namespace {
constexpr int64_t kMaxTensorNumel = 1048576;  // Triton maxTensorNumElements (reference §1)
}  // namespace

void Verifier::fail(const Op& o, const std::string& msg) const {
  fail_at(m_, o, fmt::format("'{}': {}", o.name, msg));
}

const Type* Verifier::in(const Op& o, size_t i) const {
  if (i >= o.operands.size()) fail(o, fmt::format("expects at least {} operand(s)", i + 1));
  return o.operands[i]->type;
}

const Type* Verifier::out(const Op& o, size_t i) const {
  if (i >= o.results.size()) fail(o, fmt::format("expects at least {} result(s)", i + 1));
  return o.results[i]->type;
}

void Verifier::counts(const Op& o, size_t nops, size_t nres) const {
  check(o.operands.size() == nops, o, "expects {} operand(s), has {}", nops, o.operands.size());
  check(o.results.size() == nres, o, "expects {} result(s), has {}", nres, o.results.size());
}

void Verifier::operands_between(const Op& o, size_t lo, size_t hi) const {
  check(o.operands.size() >= lo && o.operands.size() <= hi, o, "expects {} to {} operands, has {}", lo, hi,
        o.operands.size());
}

const Attr* Verifier::need(const Op& o, const char* k, Attr::Kind kind) const {
  const Attr* a = o.attr(k);
  check(a && a->kind == kind, o, "missing or malformed attribute '{}'", k);
  return a;
}

void Verifier::keyword_in(const Op& o, const char* k, std::initializer_list<std::string_view> allowed,
                          bool required) const {
  const Attr* a = o.attr(k);
  if (!a) {
    check(!required, o, "missing '{}'", k);
    return;
  }
  check(a->kind == Attr::Kind::Keyword, o, "'{}' must be a keyword", k);
  for (auto s : allowed)
    if (a->s == s) return;
  fail(o, fmt::format("invalid {} '{}' (expected one of {})", k, a->s, fmt::join(allowed, ", ")));
}

void Verifier::tensor_size(const Op& o, const Type* t) const {
  if (t->elem == Elem::ptr && t->pointee && t->pointee->is_tensor) tensor_size(o, t->pointee);
  if (t->elem == Elem::tensordesc && t->pointee) tensor_size(o, t->pointee);
  if (!t->is_tensor) return;
  int64_t n = t->numel();
  check(n > 0 && n <= kMaxTensorNumel && (n & (n - 1)) == 0, o,
        "tensor {} has {} elements; Triton requires a power of two no larger than {}", *t, n,
        kMaxTensorNumel);
}

void Verifier::run() {
  for (auto& f : m_.functions) {
    fn_ = f.get();
    if (f->body.blocks.empty()) continue;
    region(f->body, nullptr);
  }
}

void Verifier::region(const Region& r, const Op* parent) {
  for (auto& b : r.blocks) {
    for (auto& o : b->ops) {
      op(*o);
      bool last = o.get() == b->ops.back().get();
      if (is_terminator(o->def->syntax) && !last) fail(*o, "terminator is not the last op of its block");
    }
    if (b->ops.empty() || !is_terminator(b->ops.back()->def->syntax)) {
      if (!b->ops.empty()) fail(*b->ops.back(), "block does not end with a terminator");
      if (parent) fail(*parent, "region block is empty (no terminator)");
      throw Error(fmt::format("{}: function '@{}' has an empty block", m_.filename, fn_->name));
    }
  }
}

void Verifier::op(const Op& o) {
  assert(o.def && o.def->verify && "the reader sets every op's registry row");
  if (o.def->dialect() == "tt") {  // TensorSizeTrait: on every op of the tt dialect
    for (auto* v : o.operands) tensor_size(o, v->type);
    for (auto& r : o.results) tensor_size(o, r->type);
  }
  o.def->verify(*this, o);
  for (auto& r : o.regions) region(*r, &o);
}

void verify(const Module& m) { Verifier(m).run(); }

}  // namespace tilescope::ir
