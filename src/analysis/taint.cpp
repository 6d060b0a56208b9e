// Static taint: sources forward, address use backward (see taint.h).
#include "taint.h"

#include <functional>
#include <string_view>
#include <unordered_set>

#include "tilescope/ir/ops.h"

namespace tilescope::analysis {
namespace {

using ir::Op;
using ir::Value;

using ir::Opcode;

bool is_terminator(const Op& op) { return ir::is_terminator(op.def->syntax); }

/// Ops whose regions run on scalars inside one op (combine / map bodies): their insides are not
/// analysed; the op itself moves poison as a whole.
bool opaque_regions(const Op& op) {
  const Opcode c = op.code();
  return c == Opcode::tt_reduce || c == Opcode::tt_scan || c == Opcode::tt_map_elementwise;
}

using ir::Taint;

bool through_block_ptr(const Op& op) { return !op.operands.empty() && op.operands[0]->type->is_block_ptr(); }

/// Whether the op's results carry its operands' poison (forward), and operands matter for its
/// results' uses (backward).
bool propagates(Taint t) {
  switch (t) {
    case Taint::elementwise:
    case Taint::overflow_arith:
    case Taint::divide:
    case Taint::select:
    case Taint::splat:
    case Taint::broadcast:
    case Taint::linear:
    case Taint::trans:
    case Taint::join:
    case Taint::split:
    case Taint::cat:
    case Taint::unsplat:
    case Taint::gather:
    case Taint::reduce:
    case Taint::scan:
    case Taint::dot:
    case Taint::dot_other:
    case Taint::scalar_any: return true;
    case Taint::none:
    case Taint::load:  // only into masked-off lanes, from `other` (handled where it is used)
    case Taint::store:
    case Taint::atomic_rmw:
    case Taint::atomic_cas:
    case Taint::histogram:
    case Taint::desc_access:
    case Taint::cond:
    case Taint::for_bounds:
    case Taint::assert_: return false;
  }
  return false;
}

int role_index(const Op& op, ir::Role r) { return ir::operand_index(op, r); }

struct Walk {
  std::vector<const Op*> ops;                                // every analysed op, terminators included
  std::vector<std::pair<const Value*, const Value*>> edges;  // control-flow transfers src -> dst
};

const Op* terminator(const ir::Block& b) {
  if (b.ops.empty()) return nullptr;
  const Op* t = b.ops.back().get();
  return is_terminator(*t) ? t : nullptr;
}

void walk_region(const ir::Module& m, const ir::Region& r, Walk& w);

void walk_op(const ir::Module& m, const Op& op, Walk& w) {
  w.ops.push_back(&op);
  auto edge = [&](const Value* s, const Value* d) { w.edges.emplace_back(s, d); };
  const Opcode code = op.code();
  if (code == Opcode::scf_for && !op.regions.empty() && !op.regions[0]->blocks.empty()) {
    const ir::Block& body = *op.regions[0]->blocks[0];
    for (size_t i = 3; i < op.operands.size() && i - 2 < body.args.size(); ++i)
      edge(op.operands[i], body.args[i - 2].get());
    if (const Op* y = terminator(body))
      for (size_t i = 0; i < y->operands.size() && i + 1 < body.args.size(); ++i)
        edge(y->operands[i], body.args[i + 1].get());
    for (size_t i = 0; i < op.results.size() && i + 1 < body.args.size(); ++i)
      edge(body.args[i + 1].get(), op.results[i].get());
  } else if (code == Opcode::scf_if) {
    for (auto& r : op.regions)
      for (auto& b : r->blocks)
        if (const Op* y = terminator(*b); y && y->code() == Opcode::scf_yield)
          for (size_t i = 0; i < y->operands.size() && i < op.results.size(); ++i)
            edge(y->operands[i], op.results[i].get());
  } else if (code == Opcode::scf_while && op.regions.size() == 2 && !op.regions[0]->blocks.empty() &&
             !op.regions[1]->blocks.empty()) {
    const ir::Block& before = *op.regions[0]->blocks[0];
    const ir::Block& after = *op.regions[1]->blocks[0];
    for (size_t i = 0; i < op.operands.size() && i < before.args.size(); ++i)
      edge(op.operands[i], before.args[i].get());
    for (auto& b : op.regions[0]->blocks)
      if (const Op* c = terminator(*b); c && c->code() == Opcode::scf_condition)
        for (size_t i = 1; i < c->operands.size(); ++i) {
          if (i - 1 < after.args.size()) edge(c->operands[i], after.args[i - 1].get());
          if (i - 1 < op.results.size()) edge(c->operands[i], op.results[i - 1].get());
        }
    for (auto& b : op.regions[1]->blocks)
      if (const Op* y = terminator(*b); y && y->code() == Opcode::scf_yield)
        for (size_t i = 0; i < y->operands.size() && i < before.args.size(); ++i)
          edge(y->operands[i], before.args[i].get());
  } else if (code == Opcode::cf_br || code == Opcode::cf_cond_br) {
    for (size_t k = 0; k < op.successors.size() && k < op.successor_operands.size(); ++k)
      for (size_t i = 0; i < op.successor_operands[k].size() && i < op.successors[k]->args.size(); ++i)
        edge(op.successor_operands[k][i], op.successors[k]->args[i].get());
  } else if (code == Opcode::tt_call) {
    const ir::Attr* callee = op.attr("callee");
    if (const ir::Function* f = callee ? m.find(callee->s) : nullptr) {
      for (size_t i = 0; i < op.operands.size() && i < f->args().size(); ++i)
        edge(op.operands[i], f->args()[i].get());
      for (auto& b : f->body.blocks)
        if (const Op* r = terminator(*b); r && r->code() == Opcode::tt_return)
          for (size_t i = 0; i < r->operands.size() && i < op.results.size(); ++i)
            edge(r->operands[i], op.results[i].get());
    }
  }
  if (opaque_regions(op)) return;
  for (auto& r : op.regions) walk_region(m, *r, w);
}

void walk_region(const ir::Module& m, const ir::Region& r, Walk& w) {
  for (auto& b : r.blocks)
    for (auto& op : b->ops) walk_op(m, *op, w);
}

std::vector<int64_t> shape_of(const ir::Type* t) { return t->is_tensor ? t->shape : std::vector<int64_t>{}; }

int64_t numel_of(const ir::Type* t) { return t->is_tensor ? t->numel() : 1; }

}  // namespace

TaintPlan build_taint_plan(const ir::Module& m) {
  Walk w;
  for (auto& f : m.functions) walk_region(m, f->body, w);

  auto rule = [](const Op* op) { return op->def->taint; };

  // Backward: values that flow into an address (or a mask deciding which addresses are touched).
  std::unordered_set<const Value*> addr;
  for (const Op* op : w.ops) {
    const Taint c = rule(op);
    const bool memory = op->def->effects & (ir::effect::read | ir::effect::write);
    for (size_t k = 0; k < op->operands.size(); ++k) {
      const ir::Role r = ir::operand_role(*op, k);
      if (c == Taint::scalar_any || (c == Taint::desc_access && !op->operands[k]->type->is_tensor) ||
          (memory && c != Taint::desc_access && (r == ir::Role::ptr || r == ir::Role::mask)))
        addr.insert(op->operands[k]);
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = w.ops.rbegin(); it != w.ops.rend(); ++it) {
      const Op* op = *it;
      if (!propagates(rule(op))) continue;
      bool used = false;
      for (auto& r : op->results) used = used || addr.count(r.get());
      if (!used) continue;
      for (const Value* v : op->operands) changed |= addr.insert(v).second;
    }
    for (auto& [s, d] : w.edges)
      if (addr.count(d)) changed |= addr.insert(s).second;
  }

  TaintPlan plan;
  plan.causes.push_back(Cause{});  // 0: clean
  std::unordered_map<const Op*, std::pair<Source, uint32_t>> sources;
  for (const Op* op : w.ops) {
    const Taint r = rule(op);
    Source s = Source::none;
    Kind k = Kind::undefined_value;
    if (r == Taint::load && !through_block_ptr(*op)) {
      if (role_index(*op, ir::Role::mask) >= 0 && role_index(*op, ir::Role::other) < 0)
        s = Source::masked_load;
    } else if (r == Taint::overflow_arith && op->results.size() == 1 &&
               op->result()->type->elem == ir::Elem::i32 && addr.count(op->result())) {
      s = Source::overflow;
      k = Kind::int32_overflow;
    } else if (r == Taint::divide) {
      s = Source::divzero;
      k = Kind::division_by_zero;
    }
    if (s == Source::none) continue;
    sources[op] = {s, static_cast<uint32_t>(plan.causes.size())};
    plan.causes.push_back(Cause{k, op, nullptr});
  }

  // Forward: values that may carry poison.
  std::unordered_set<const Value*> taint;
  for (auto& [op, s] : sources) taint.insert(op->result());
  for (bool changed = true; changed;) {
    changed = false;
    for (const Op* op : w.ops) {
      const Taint c = rule(op);
      bool carries = propagates(c);
      if (c == Taint::load)  // a masked load carries its `other`'s poison into masked-off lanes
        carries = role_index(*op, ir::Role::other) >= 0;
      if (!carries) continue;
      bool in = false;
      for (const Value* v : op->operands) in = in || taint.count(v);
      if (!in) continue;
      for (auto& r : op->results) changed |= taint.insert(r.get()).second;
    }
    for (auto& [s, d] : w.edges)
      if (taint.count(s)) changed |= taint.insert(d).second;
  }
  if (taint.empty()) return plan;

  // Dense indices, in walk order (deterministic).
  auto track = [&](const Value* v) {
    if (!taint.count(v) || plan.tracked.count(v)) return;
    plan.tracked[v] = static_cast<int>(plan.numel.size());
    plan.numel.push_back(numel_of(v->type));
    plan.cond_term.push_back(nullptr);
  };
  for (auto& f : m.functions)
    for (auto& a : f->args()) track(a.get());
  for (const Op* op : w.ops) {
    for (auto& r : op->regions)
      for (auto& b : r->blocks)
        for (auto& a : b->args) track(a.get());
    for (auto& r : op->results) track(r.get());
  }
  auto idx = [&](const Value* v) {
    auto it = plan.tracked.find(v);
    return it == plan.tracked.end() ? -1 : it->second;
  };

  for (const Op* op : w.ops) {
    if (is_terminator(*op)) {
      if (role_index(*op, ir::Role::cond) == 0) {  // cf.cond_br, scf.condition
        int i = idx(op->operands[0]);
        if (i >= 0) plan.cond_term[i] = op;
      }
      continue;
    }
    const Taint c = rule(op);
    auto src = sources.find(op);
    bool reads = false;
    for (const Value* v : op->operands) reads = reads || idx(v) >= 0;
    if (src == sources.end() && (!reads || c == Taint::none)) continue;
    OpInfo info;
    info.rule = c;
    info.block = through_block_ptr(*op);
    if (src != sources.end()) {
      info.source = src->second.first;
      info.cause = src->second.second;
    }
    for (const Value* v : op->operands) {
      info.in.push_back(idx(v));
      info.in_n.push_back(numel_of(v->type));
    }
    for (auto& r : op->results) {
      info.out.push_back(idx(r.get()));
      info.out_n.push_back(numel_of(r->type));
    }
    if (!op->operands.empty()) info.in_shape = shape_of(op->operands[0]->type);
    if (op->operands.size() > 1) info.b_shape = shape_of(op->operands[1]->type);
    if (!op->results.empty()) info.out_shape = shape_of(op->result()->type);
    info.mask = role_index(*op, ir::Role::mask);
    info.other = role_index(*op, ir::Role::other);
    if (const ir::Attr* a = op->attr("axis")) info.axis = static_cast<int>(a->i);
    if (const ir::Attr* a = op->attr("reverse")) info.reverse = a->b || a->i != 0;
    if (const ir::Attr* a = op->attr("order"))
      for (int64_t o : a->ints) info.order.push_back(static_cast<int>(o));
    const Opcode code = op->code();
    info.arith = code == Opcode::arith_addi   ? Arith::add
                 : code == Opcode::arith_subi ? Arith::sub
                 : code == Opcode::arith_muli ? Arith::mul
                                              : Arith::shl;
    plan.ops.emplace(op, std::move(info));
  }
  return plan;
}

bool int32_shl_overflows(int32_t a, int32_t b) {
  if (b < 0 || b >= 32) return a != 0;
  const int64_t r = static_cast<int64_t>(a) * (int64_t{1} << b);
  return r != static_cast<int32_t>(r);
}

bool any_int32_overflow(Arith k, const int32_t* a, const int32_t* b, int64_t n) {
  // add and sub: the wrapped 32-bit result has the wrong sign exactly when the exact one is not an i32
  // (a sum: both operands' signs differ from the result's; a difference: the operands' signs differ and
  // the result's differs from a's), so the loops stay in 32-bit lanes.
  const auto* ua = reinterpret_cast<const uint32_t*>(a);
  const auto* ub = reinterpret_cast<const uint32_t*>(b);
  switch (k) {
    case Arith::add: {
      uint32_t sign = 0;
      for (int64_t i = 0; i < n; ++i) {
        const uint32_t r = ua[i] + ub[i];
        sign |= (ua[i] ^ r) & (ub[i] ^ r);
      }
      return (sign >> 31) != 0;
    }
    case Arith::sub: {
      uint32_t sign = 0;
      for (int64_t i = 0; i < n; ++i) {
        const uint32_t r = ua[i] - ub[i];
        sign |= (ua[i] ^ ub[i]) & (ua[i] ^ r);
      }
      return (sign >> 31) != 0;
    }
    case Arith::mul: {
      uint64_t bad = 0;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t r = int64_t{a[i]} * b[i];
        bad |= static_cast<uint64_t>(r != static_cast<int32_t>(r));
      }
      return bad != 0;
    }
    case Arith::shl: {
      bool bad = false;
      for (int64_t i = 0; i < n; ++i) bad |= int32_shl_overflows(a[i], b[i]);
      return bad;
    }
  }
  return false;
}

}  // namespace tilescope::analysis
