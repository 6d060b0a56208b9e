// Lowering verified functions into plans (see plan.h).
#include "plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>

#include "table.h"
#include "tilescope/exec/value.h"

namespace tilescope::exec {

int Planner::slot(const ir::Value* v) {
  auto it = slots_.find(v);
  if (it != slots_.end()) return it->second;
  int s = static_cast<int>(plan_.slots.size());
  plan_.slots.push_back(SlotInfo{v->type, storage_bytes(*v->type)});
  plan_.slot_value.push_back(v);
  int64_t off = plan_.frame_bytes;
  plan_.slot_offset.push_back(off);
  plan_.frame_bytes = off + ((plan_.slots.back().bytes + 63) / 64) * 64;
  // The three per-slot tables grow together; every slot starts on a 64-byte boundary of the frame.
  assert(plan_.slot_value.size() == plan_.slots.size() && plan_.slot_offset.size() == plan_.slots.size());
  assert(off % 64 == 0 && plan_.slots.back().bytes >= 0 && plan_.frame_bytes >= off);
  slots_.emplace(v, s);
  return s;
}

void Planner::unsupported(const ir::Op& op, const std::string& why) const {
  std::string msg = fmt::format("unsupported op '{}'", op.name);
  if (!why.empty()) msg += ": " + why;
  fail_at(module_, op, msg);
}

const FunctionPlan& Planner::lower(const ir::Function& fn) {
  auto it = plan_.functions.find(&fn);
  if (it != plan_.functions.end()) {
    if (!it->second)
      throw Error(fmt::format("{}: function '{}' calls itself (recursion is not allowed in Triton)",
                              module_.filename, fn.name));
    return *it->second;
  }
  plan_.functions[&fn] = nullptr;  // marks "being lowered"
  auto fp = std::make_unique<FunctionPlan>();
  fp->fn = &fn;
  // The levels of the caller's body are its own; the callee's count from 0 (lower_callee adds them up).
  const int nesting = nesting_, fn_depth = fn_depth_;
  nesting_ = fn_depth_ = 0;
  try {
    lower_region(fn.body, fp->body);
  } catch (...) {
    plan_.functions.erase(&fn);  // not "being lowered" any more: a later launch tries again
    nesting_ = nesting;
    fn_depth_ = fn_depth;
    throw;
  }
  fp->depth = fn_depth_;
  nesting_ = nesting;
  fn_depth_ = fn_depth;
  auto& slot_ref = plan_.functions[&fn];
  slot_ref = std::move(fp);
  return *slot_ref;
}

void Planner::nest(const ir::Op& op, int levels) {
  if (nesting_ + levels > kMaxNesting || depth_ + 1 > kMaxNesting)
    fail_at(
        module_, op,
        fmt::format("'{}' nests region ops and calls more than {} levels deep (the engine runs each level "
                    "on the program's stack)",
                    op.name, kMaxNesting));
  fn_depth_ = std::max(fn_depth_, nesting_ + levels);
}

const FunctionPlan& Planner::lower_callee(const ir::Op& call, const ir::Function& callee) {
  nest(call, 1);  // the planner's own recursion is bounded before it recurses
  ++depth_;
  const FunctionPlan* fp = nullptr;
  try {
    fp = &lower(callee);
  } catch (...) {
    --depth_;
    throw;
  }
  --depth_;
  nest(call, 1 + fp->depth);  // a callee planned earlier, from a shallower call, counts here too
  return *fp;
}

void Planner::lower_region(const ir::Region& r, RegionPlan& out) {
  std::map<const ir::Block*, int> index;
  for (size_t i = 0; i < r.blocks.size(); ++i) index[r.blocks[i].get()] = static_cast<int>(i);
  out.blocks.resize(r.blocks.size());
  for (size_t bi = 0; bi < r.blocks.size(); ++bi)
    for (auto& a : r.blocks[bi]->args) out.blocks[bi].args.push_back(slot(a.get()));
  for (size_t bi = 0; bi < r.blocks.size(); ++bi) {
    const ir::Block& b = *r.blocks[bi];
    BlockPlan& bp = out.blocks[bi];
    for (auto& opp : b.ops) {
      const ir::Op& op = *opp;
      if (!ir::is_terminator(op.def->syntax)) {
        bp.steps.emplace_back();
        lower_op(op, bp.steps.back());
        continue;
      }
      Terminator& t = bp.term;
      t.op = &op;
      std::vector<int> ops;
      for (auto* v : op.operands) ops.push_back(slot(v));
      if (op.code() == ir::Opcode::tt_return) {
        t.kind = Terminator::Kind::ret;
        t.operands = ops;
      } else if (op.code() == ir::Opcode::scf_condition) {
        t.kind = Terminator::Kind::condition;
        if (ops.empty()) fail_at(module_, op, "scf.condition needs a condition operand");
        t.cond = ops[0];
        t.operands.assign(ops.begin() + 1, ops.end());
      } else if (op.def->syntax == ir::Syntax::Branch || op.def->syntax == ir::Syntax::CondBranch) {
        t.kind = op.def->syntax == ir::Syntax::Branch ? Terminator::Kind::br : Terminator::Kind::cond_br;
        if (t.kind == Terminator::Kind::cond_br) {
          if (ops.empty()) fail_at(module_, op, "cf.cond_br needs a condition operand");
          t.cond = ops[0];
        }
        for (size_t k = 0; k < op.successors.size(); ++k) {
          auto f = index.find(op.successors[k]);
          if (f == index.end()) fail_at(module_, op, "branch to a block of another region");
          t.targets.push_back(f->second);
          std::vector<int> so;
          for (auto* v : op.successor_operands.at(k)) so.push_back(slot(v));
          t.target_operands.push_back(std::move(so));
        }
      } else {
        t.kind = Terminator::Kind::yield;
        t.operands = ops;
      }
    }
  }
  // Every block must end in a terminator, and branches must pass one value per target argument.
  for (size_t bi = 0; bi < out.blocks.size(); ++bi) {
    auto& bp = out.blocks[bi];
    if (bp.term.kind == Terminator::Kind::none && r.parent == nullptr && bi + 1 == out.blocks.size())
      continue;  // a function body may end without an explicit terminator only if the reader allowed it
    for (size_t k = 0; k < bp.term.targets.size(); ++k)
      if (bp.term.target_operands[k].size() != out.blocks[bp.term.targets[k]].args.size())
        fail_at(module_, *bp.term.op, "branch operand count does not match the target block's arguments");
  }
}

void Planner::lower_op(const ir::Op& op, Step& s) {
  s.op = &op;
  s.id = plan_.num_steps++;
  for (auto* v : op.operands) {
    s.in.push_back(slot(v));
    s.in_types.push_back(v->type);
  }
  for (auto& r : op.results) {
    s.out.push_back(slot(r.get()));
    s.out_types.push_back(r->type);
  }
  if (!s.out_types.empty())
    s.n = s.out_types[0]->numel();
  else if (!s.in_types.empty())
    s.n = s.in_types[0]->numel();
  s.regions.resize(op.regions.size());
  if (!op.regions.empty()) {
    nest(op, 1);
    ++nesting_;
    ++depth_;
    struct Leave {
      Planner& p;
      ~Leave() {
        --p.nesting_;
        --p.depth_;
      }
    } leave{*this};
    for (size_t i = 0; i < op.regions.size(); ++i) lower_region(*op.regions[i], s.regions[i]);
  }
  ops::LowerFn lower = ops::lowering(op.code());
  if (!lower) unsupported(op, "");
  lower(op, *this, s);
  if (!s.fn) unsupported(op, "no kernel for these types");
  assert(s.id >= 0 && s.id < plan_.num_steps);
  assert(s.in.size() == op.operands.size() && s.out.size() == op.results.size());
  for ([[maybe_unused]] int x : s.in) assert(x >= 0 && static_cast<size_t>(x) < plan_.slots.size());
  for ([[maybe_unused]] int x : s.out) assert(x >= 0 && static_cast<size_t>(x) < plan_.slots.size());
}

}  // namespace tilescope::exec
