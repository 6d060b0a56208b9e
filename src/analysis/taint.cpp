// Static taint: sources forward, address use backward (see taint.h).
#include "src/analysis/taint.h"

#include <functional>
#include <string_view>
#include <unordered_set>

#include "src/ops/table.h"

namespace tilescope::analysis {
namespace {

using ir::Op;
using ir::Value;

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

bool is_terminator(const Op& op) {
  using S = ir::Syntax;
  switch (op.def->syntax) {
    case S::Return:
    case S::Condition:
    case S::Branch:
    case S::CondBranch: return true;
    default: return false;
  }
}

/// Ops whose regions run on scalars inside one op (combine / map bodies): their insides are not
/// analysed; the op itself moves poison as a whole.
bool opaque_regions(const Op& op) {
  return op.name == "tt.reduce" || op.name == "tt.scan" || op.name == "tt.map_elementwise";
}

Cat category(const Op& op) {
  const std::string& n = op.name;
  if (n == "arith.select") return Cat::select;
  if (n == "tt.load")
    return !op.operands.empty() && op.operands[0]->type->is_block_ptr() ? Cat::block_load : Cat::load;
  if (n == "tt.store")
    return !op.operands.empty() && op.operands[0]->type->is_block_ptr() ? Cat::block_store : Cat::store;
  if (n == "tt.atomic_rmw") return Cat::atomic_rmw;
  if (n == "tt.atomic_cas") return Cat::atomic_cas;
  if (n == "tt.splat") return Cat::splat;
  if (n == "tt.broadcast") return Cat::broadcast;
  if (n == "tt.expand_dims" || n == "tt.reshape") return Cat::linear;
  if (n == "tt.trans") return Cat::trans;
  if (n == "tt.join") return Cat::join;
  if (n == "tt.split") return Cat::split;
  if (n == "tt.cat") return Cat::cat;
  if (n == "tt.unsplat") return Cat::unsplat;
  if (n == "tt.gather") return Cat::gather;
  if (n == "tt.reduce") return Cat::reduce;
  if (n == "tt.scan") return Cat::scan;
  if (n == "tt.dot") return Cat::dot;
  if (n == "tt.dot_scaled") return Cat::dot_other;
  if (n == "tt.histogram") return Cat::histogram;
  if (n == "tt.make_tensor_ptr" || n == "tt.advance" || n == "tt.make_tensor_descriptor" ||
      n == "tt.reinterpret_tensor_descriptor")
    return Cat::scalar_any;
  if (starts_with(n, "tt.descriptor_")) return Cat::desc_access;
  if (n == "scf.if") return Cat::cond;
  if (n == "scf.for") return Cat::for_bounds;
  if (n == "tt.assert") return Cat::assert_;
  if (n == "arith.constant" || n == "ub.poison") return Cat::none;
  if (starts_with(n, "arith.") || starts_with(n, "math.")) return Cat::elementwise;
  if (n == "tt.addptr" || n == "tt.int_to_ptr" || n == "tt.ptr_to_int" || n == "tt.bitcast" ||
      n == "tt.fp_to_fp" || n == "tt.clampf" || n == "tt.precise_sqrt" || n == "tt.precise_divf" ||
      n == "tt.mulhiui" || n == "tt.extern_elementwise" || n == "tt.elementwise_inline_asm" ||
      n == "tt.map_elementwise")
    return Cat::elementwise;
  return Cat::none;
}

/// Whether the op's results carry its operands' poison (forward), and operands matter for its
/// results' uses (backward).
bool propagates(Cat c) {
  switch (c) {
    case Cat::elementwise:
    case Cat::select:
    case Cat::splat:
    case Cat::broadcast:
    case Cat::linear:
    case Cat::trans:
    case Cat::join:
    case Cat::split:
    case Cat::cat:
    case Cat::unsplat:
    case Cat::gather:
    case Cat::reduce:
    case Cat::scan:
    case Cat::dot:
    case Cat::dot_other:
    case Cat::scalar_any: return true;
    default: return false;
  }
}

// Operand roles of tt.load (same rule as the engine: operandSegmentSizes when present).
void load_roles(const Op& op, int& mask, int& other) {
  mask = other = -1;
  const ir::Attr* seg = op.attr("operandSegmentSizes");
  if (seg && seg->ints.size() == 3) {
    int k = 1;
    if (seg->ints[1]) mask = k++;
    if (seg->ints[2]) other = k;
    return;
  }
  if (op.operands.size() >= 2) mask = 1;
  if (op.operands.size() >= 3) other = 2;
}

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
  const std::string& n = op.name;
  if (n == "scf.for" && !op.regions.empty() && !op.regions[0]->blocks.empty()) {
    const ir::Block& body = *op.regions[0]->blocks[0];
    for (size_t i = 3; i < op.operands.size() && i - 2 < body.args.size(); ++i)
      edge(op.operands[i], body.args[i - 2].get());
    if (const Op* y = terminator(body))
      for (size_t i = 0; i < y->operands.size() && i + 1 < body.args.size(); ++i)
        edge(y->operands[i], body.args[i + 1].get());
    for (size_t i = 0; i < op.results.size() && i + 1 < body.args.size(); ++i)
      edge(body.args[i + 1].get(), op.results[i].get());
  } else if (n == "scf.if") {
    for (auto& r : op.regions)
      for (auto& b : r->blocks)
        if (const Op* y = terminator(*b); y && y->name == "scf.yield")
          for (size_t i = 0; i < y->operands.size() && i < op.results.size(); ++i)
            edge(y->operands[i], op.results[i].get());
  } else if (n == "scf.while" && op.regions.size() == 2 && !op.regions[0]->blocks.empty() &&
             !op.regions[1]->blocks.empty()) {
    const ir::Block& before = *op.regions[0]->blocks[0];
    const ir::Block& after = *op.regions[1]->blocks[0];
    for (size_t i = 0; i < op.operands.size() && i < before.args.size(); ++i)
      edge(op.operands[i], before.args[i].get());
    for (auto& b : op.regions[0]->blocks)
      if (const Op* c = terminator(*b); c && c->name == "scf.condition")
        for (size_t i = 1; i < c->operands.size(); ++i) {
          if (i - 1 < after.args.size()) edge(c->operands[i], after.args[i - 1].get());
          if (i - 1 < op.results.size()) edge(c->operands[i], op.results[i - 1].get());
        }
    for (auto& b : op.regions[1]->blocks)
      if (const Op* y = terminator(*b); y && y->name == "scf.yield")
        for (size_t i = 0; i < y->operands.size() && i < before.args.size(); ++i)
          edge(y->operands[i], before.args[i].get());
  } else if (n == "cf.br" || n == "cf.cond_br") {
    for (size_t k = 0; k < op.successors.size() && k < op.successor_operands.size(); ++k)
      for (size_t i = 0; i < op.successor_operands[k].size() && i < op.successors[k]->args.size(); ++i)
        edge(op.successor_operands[k][i], op.successors[k]->args[i].get());
  } else if (n == "tt.call") {
    const ir::Attr* callee = op.attr("callee");
    if (const ir::Function* f = callee ? m.find(callee->s) : nullptr) {
      for (size_t i = 0; i < op.operands.size() && i < f->args().size(); ++i)
        edge(op.operands[i], f->args()[i].get());
      for (auto& b : f->body.blocks)
        if (const Op* r = terminator(*b); r && r->name == "tt.return")
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

  std::unordered_map<const Op*, Cat> cat;
  for (const Op* op : w.ops) cat[op] = category(*op);

  // Backward: values that flow into an address (or a mask deciding which addresses are touched).
  std::unordered_set<const Value*> addr;
  auto seed = [&](const Op& op, int k) {
    if (k >= 0 && k < static_cast<int>(op.operands.size())) addr.insert(op.operands[k]);
  };
  for (const Op* op : w.ops) {
    switch (cat[op]) {
      case Cat::load: {
        int mask, other;
        load_roles(*op, mask, other);
        seed(*op, 0);
        seed(*op, mask);
        break;
      }
      case Cat::block_load:
      case Cat::block_store:
      case Cat::atomic_cas: seed(*op, 0); break;
      case Cat::store:
      case Cat::atomic_rmw:
        seed(*op, 0);
        seed(*op, 2);
        break;
      case Cat::scalar_any:
        for (size_t k = 0; k < op->operands.size(); ++k) seed(*op, static_cast<int>(k));
        break;
      case Cat::desc_access:
        for (size_t k = 0; k < op->operands.size(); ++k)
          if (!op->operands[k]->type->is_tensor) seed(*op, static_cast<int>(k));
        break;
      default: break;
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = w.ops.rbegin(); it != w.ops.rend(); ++it) {
      const Op* op = *it;
      if (!propagates(cat[op])) continue;
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
    const std::string& n = op->name;
    Source s = Source::none;
    Kind k = Kind::undefined_value;
    if (cat[op] == Cat::load) {
      int mask, other;
      load_roles(*op, mask, other);
      if (mask >= 0 && other < 0) s = Source::masked_load;
    } else if ((n == "arith.addi" || n == "arith.subi" || n == "arith.muli" || n == "arith.shli") &&
               op->results.size() == 1 && op->result()->type->elem == ir::Elem::i32 &&
               addr.count(op->result())) {
      s = Source::overflow;
      k = Kind::int32_overflow;
    } else if (n == "arith.divsi" || n == "arith.divui" || n == "arith.remsi" || n == "arith.remui") {
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
      Cat c = cat[op];
      bool carries = propagates(c);
      if (c == Cat::load) {  // a masked load carries its `other`'s poison into masked-off lanes
        int mask, other;
        load_roles(*op, mask, other);
        carries = other >= 0;
      }
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
      if ((op->name == "cf.cond_br" || op->name == "scf.condition") && !op->operands.empty()) {
        int i = idx(op->operands[0]);
        if (i >= 0) plan.cond_term[i] = op;
      }
      continue;
    }
    Cat c = cat[op];
    auto src = sources.find(op);
    bool reads = false;
    for (const Value* v : op->operands) reads = reads || idx(v) >= 0;
    if (src == sources.end() && (!reads || c == Cat::none)) continue;
    OpInfo info;
    info.cat = c;
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
    if (c == Cat::load) load_roles(*op, info.mask, info.other);
    if (c == Cat::store || c == Cat::atomic_rmw) info.mask = op->operands.size() > 2 ? 2 : -1;
    if (c == Cat::histogram) info.mask = op->operands.size() > 1 ? 1 : -1;
    if (const ir::Attr* a = op->attr("axis")) info.axis = static_cast<int>(a->i);
    if (const ir::Attr* a = op->attr("reverse")) info.reverse = a->b || a->i != 0;
    if (const ir::Attr* a = op->attr("order"))
      for (int64_t o : a->ints) info.order.push_back(static_cast<int>(o));
    const std::string& n = op->name;
    info.arith = n == "arith.addi" ? 0 : n == "arith.subi" ? 1 : n == "arith.muli" ? 2 : 3;
    plan.ops.emplace(op, std::move(info));
  }
  return plan;
}

}  // namespace tilescope::analysis
