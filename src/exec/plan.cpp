// Lowering verified functions into plans (see plan.h).
#include "plan.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <functional>
#include <queue>

#include "table.h"
#include "tilescope/exec/value.h"

namespace tilescope::exec {

int Planner::slot(const ir::Value* v) {
  auto it = slots_.find(v);
  if (it != slots_.end()) return it->second;
  int s = static_cast<int>(plan_.slots.size());
  plan_.slots.push_back(SlotInfo{v->type, storage_bytes(*v->type)});
  plan_.slot_value.push_back(v);
  plan_.slot_offset.push_back(0);  // assign_storage places it once its function is lowered
  plan_.slot_shared.push_back(nullptr);
  // The four per-slot tables grow together.
  assert(plan_.slot_value.size() == plan_.slots.size() && plan_.slot_offset.size() == plan_.slots.size() &&
         plan_.slot_shared.size() == plan_.slots.size());
  assert(plan_.slots.back().bytes >= 0);
  slots_.emplace(v, s);
  return s;
}

namespace {

/// A shared constant's bytes, in read-only pages of their own (Planner::share_constant).
class SharedBytes {
 public:
  explicit SharedBytes(const std::vector<std::byte>& value)
      : size_(std::max<size_t>(1, (value.size() + 4095) / 4096) * 4096) {
    void* m = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw Error(fmt::format("cannot map {} bytes for a constant", size_));
    bytes_ = static_cast<std::byte*>(m);
    std::memcpy(bytes_, value.data(), value.size());
    mprotect(bytes_, size_, PROT_READ);
  }
  ~SharedBytes() { munmap(bytes_, size_); }
  SharedBytes(const SharedBytes&) = delete;
  SharedBytes& operator=(const SharedBytes&) = delete;
  const std::byte* bytes() const { return bytes_; }

 private:
  size_t size_;
  std::byte* bytes_ = nullptr;
};

void shared_constant_step(Program&, const Step&) {}  // the value is in place already

}  // namespace

void Planner::share_constant(Step& s, const std::vector<std::byte>& value) {
  assert(s.out.size() == 1 &&
         static_cast<int64_t>(value.size()) == plan_.slots[static_cast<size_t>(s.out[0])].bytes);
  auto shared = std::make_shared<const SharedBytes>(value);
  plan_.slot_shared[static_cast<size_t>(s.out[0])] = shared->bytes();
  s.aux = std::move(shared);
  s.fn = shared_constant_step;
}

// ---------------------------------------------------------------------------------------------
// Storage by liveness
//
// The steps of a function are numbered in the order they are written, nested regions inside their
// op: op S gets a time when it starts, then the steps of its regions, then a time when it ends.
// Every slot gets the interval [first time written, last time read], inclusive; two slots share
// storage only when their intervals are disjoint. The rules, conservative where control flow repeats:
// - S's results start when S starts (a loop writes them at its end, an observer reads them after S);
//   S's operands are read until S ends (a region op may read its operands while its regions run).
//   So a result never shares bytes with an operand of its own op.
// - A value defined outside S and used in S's regions lives until S ends: the regions may run again
//   (loop back-edges), and every iteration reads it.
// - Block arguments of S's regions (loop-carried values, the induction variable, while-loop
//   arguments) live from S's start to S's end: each iteration's yield writes them.
// - A function's entry arguments live for the whole function; for a kernel they are written once per
//   worker (Engine::launch) and must hold for every program it runs.
// - In a region of several blocks (cf.br / cf.cond_br: branches may go backwards) every value defined
//   in the region lives from the region's start to its end.
// Values then take the storage of a value of the same size (64-byte lines) whose interval ended
// before theirs starts, most recently freed first, or new bytes at the end of the function's storage.
//
// A view's result (Step::view: a reshape keeps its operand's bytes) takes its operand's storage, and
// the two hold it from the operand's start to the later of their ends: both hold the same bytes, each
// written once where it is defined (the operand first). Not when the operand is a block argument (a
// terminator writes it while the view may still be read: `scf.yield %x, %view_of_arg`) or a shared
// constant (not in the frame).

namespace {

class Liveness {
 public:
  explicit Liveness(size_t slots) : start_(slots, kUnset), end_(slots, -1), depth_(slots, -1) {}

  /// Number the function body `r` (a virtual enclosing op, level 0, stands for the whole call).
  void function(const RegionPlan& r) {
    levels_.emplace_back();
    const int64_t begin = t_++;
    region(r, begin);
    end_level(t_++);
  }

  std::vector<int> slots() const {  // every slot the function reads or writes, in order of start
    std::vector<int> v;
    for (size_t i = 0; i < start_.size(); ++i)
      if (start_[i] != kUnset) v.push_back(static_cast<int>(i));
    std::stable_sort(v.begin(), v.end(), [&](int a, int b) { return start_[a] < start_[b]; });
    return v;
  }
  int64_t start(int s) const { return start_[s]; }
  int64_t end(int s) const { return end_[s]; }

 private:
  static constexpr int64_t kUnset = INT64_MAX;

  /// `r` runs inside the op that started at `op_start`; its depth is the number of enclosing levels.
  void region(const RegionPlan& r, int64_t op_start) {
    const int depth = static_cast<int>(levels_.size());
    const int64_t begin = t_;
    std::vector<int> defined;
    for (const BlockPlan& b : r.blocks)
      for (int a : b.args) {
        def(a, depth, op_start);
        levels_.back().push_back(a);  // until the enclosing op ends
        defined.push_back(a);
      }
    for (const BlockPlan& b : r.blocks) {
      for (const Step& s : b.steps) {
        const int64_t s_start = t_++;
        for (int o : s.out) {
          def(o, depth, s_start);
          defined.push_back(o);
        }
        levels_.emplace_back();
        for (const RegionPlan& sub : s.regions) region(sub, s_start);
        const int64_t s_end = t_++;
        end_level(s_end);
        for_each_own_read(s, [&](int i) { use(i, depth, s_end); });
      }
      const int64_t t = t_++;
      for_each_read(b.term, [&](int i) { use(i, depth, t); });
    }
    if (r.blocks.size() > 1) {
      const int64_t end = t_++;
      for (int s : defined) {
        start_[s] = std::min(start_[s], begin);
        end_[s] = std::max(end_[s], end);
      }
    }
  }

  void def(int s, int depth, int64_t t) {
    start_[s] = std::min(start_[s], t);
    end_[s] = std::max(end_[s], t);
    if (depth_[s] < 0) depth_[s] = depth;
  }

  void use(int s, int depth, int64_t t) {
    const int d = depth_[s];
    if (d == depth) {
      end_[s] = std::max(end_[s], t);
    } else if (d >= 1 && d < depth) {
      levels_[static_cast<size_t>(d)].push_back(s);  // defined outside: until the op at its depth ends
    } else {  // not defined in this function, or used outside its region: only in IR the verifier rejects
      start_[s] = std::min(start_[s], int64_t{0});
      levels_.front().push_back(s);
    }
  }

  void end_level(int64_t t) {
    for (int s : levels_.back()) end_[s] = std::max(end_[s], t);
    levels_.pop_back();
  }

  std::vector<int64_t> start_, end_;
  std::vector<int> depth_;                // nesting depth of the region that defines each slot
  std::vector<std::vector<int>> levels_;  // per enclosing op: slots that live until it ends
  int64_t t_ = 0;
};

}  // namespace

namespace {

/// Per slot, the slot whose storage it takes: itself, or for a view's result the owner of its
/// operand's storage (see above).
std::vector<int> storage_owners(const RegionPlan& body, const Plan& plan) {
  std::vector<int> owner(plan.slots.size());
  for (size_t i = 0; i < owner.size(); ++i) owner[i] = static_cast<int>(i);
  // A block's arguments are marked before its steps: a value is written before it is read.
  std::vector<bool> block_arg(plan.slots.size());
  std::function<void(const RegionPlan&)> walk = [&](const RegionPlan& r) {
    for (const BlockPlan& b : r.blocks) {
      for (int a : b.args) block_arg[static_cast<size_t>(a)] = true;
      for (const Step& s : b.steps) {
        for (const RegionPlan& sub : s.regions) walk(sub);
        if (!s.view) continue;
        const auto in = static_cast<size_t>(s.in[0]), out = static_cast<size_t>(s.out[0]);
        if (block_arg[in] || plan.slot_shared[in] || plan.slots[in].bytes != plan.slots[out].bytes) continue;
        owner[out] = static_cast<int>(in);
      }
    }
  };
  walk(body);
  // A view of a view takes the first operand's storage: chains are followed once all are known, so
  // the result does not depend on the order the steps are visited in.
  for (int& o : owner)
    while (owner[static_cast<size_t>(o)] != o) o = owner[static_cast<size_t>(o)];
  return owner;
}

}  // namespace

void Planner::assign_storage(const FunctionPlan& fp) {
  Liveness live(plan_.slots.size());
  live.function(fp.body);
  const std::vector<int> owner = storage_owners(fp.body, plan_);
  std::vector<int64_t> end(plan_.slots.size(), -1);  // an owner's storage is held until its views end
  for (int s : live.slots()) {
    int64_t& e = end[static_cast<size_t>(owner[static_cast<size_t>(s)])];
    e = std::max(e, live.end(s));
  }
  // Sizes in whole 64-byte lines, at least one: a value of no bytes still has an offset of its own.
  auto rounded = [](int64_t bytes) { return std::max<int64_t>(64, (bytes + 63) / 64 * 64); };
  // Intervals still holding their storage, soonest end first; free storage by size, last freed last.
  using Held = std::pair<int64_t, int>;  // end, slot
  std::priority_queue<Held, std::vector<Held>, std::greater<Held>> held;
  std::map<int64_t, std::vector<int64_t>> free;
  const int64_t base = plan_.frame_bytes;
  int64_t top = base;
  for (int s : live.slots()) {
    if (plan_.slot_shared[s]) continue;  // read from the plan's constant, not the frame
    if (owner[s] != s) continue;         // a view: its owner's bytes, below
    while (!held.empty() && held.top().first < live.start(s)) {
      int done = held.top().second;
      held.pop();
      free[rounded(plan_.slots[done].bytes)].push_back(plan_.slot_offset[done]);
    }
    const int64_t size = rounded(plan_.slots[s].bytes);
    auto& pool = free[size];
    if (!pool.empty()) {
      plan_.slot_offset[s] = pool.back();
      pool.pop_back();
    } else {
      plan_.slot_offset[s] = top;
      top += size;
    }
    held.emplace(end[s], s);
    assert(plan_.slot_offset[s] % 64 == 0 && plan_.slot_offset[s] >= base && live.start(s) <= end[s]);
  }
  plan_.frame_bytes = top;
  for (int s : live.slots())
    if (owner[s] != s) plan_.slot_offset[s] = plan_.slot_offset[owner[s]];
#ifndef NDEBUG
  // Owners that share bytes have the same size and disjoint intervals (their views' included), and a
  // view has its owner's size and starts inside its owner's interval (checked in assert builds: ASan,
  // TSan, the fuzzer).
  std::map<int64_t, std::vector<int>> by_offset;
  for (int s : live.slots()) {
    if (plan_.slot_shared[s]) continue;
    const int o = owner[s];
    if (o == s) {
      by_offset[plan_.slot_offset[s]].push_back(s);  // each in order of start
    } else {
      assert(plan_.slots[s].bytes == plan_.slots[o].bytes && plan_.slot_offset[s] == plan_.slot_offset[o]);
      assert(live.start(o) <= live.start(s) && live.start(s) <= end[o]);
    }
  }
  for (const auto& [off, group] : by_offset)
    for (size_t i = 1; i < group.size(); ++i) {
      assert(rounded(plan_.slots[group[i]].bytes) == rounded(plan_.slots[group[0]].bytes));
      assert(end[group[i - 1]] < live.start(group[i]));
    }
#endif
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
  ops::fuse_addresses(*fp);
  assign_storage(*fp);
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
