// The plan: a verified function lowered once into steps over value slots.
//
// Every SSA value gets a slot (an index: Step::in / out, block arguments, terminator operands) whose
// storage is sized at plan time (TTIR shapes are static) and reused across loop iterations and
// program instances (one Program per worker thread or fiber). Slots share storage by liveness: once a
// value's last use has passed, a later value of the same storage size takes its bytes (assign_storage
// in plan.cpp says which values stay live for how long), so a frame holds only the values live at
// the same time, not every value of the function. Every op becomes a Step whose kernel was chosen for
// its element types by the op table's `lower` hook, so running a step is one indirect call doing tile
// work: no dispatch on types, no allocation.
//
// Storage encodings: include/tilescope/exec/value.h.
#pragma once

#include <array>
#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tilescope/exec/engine.h"
#include "tilescope/exec/events.h"
#include "tilescope/exec/memory.h"
#include "tilescope/ir/diag.h"
#include "tilescope/ir/ir.h"

namespace tilescope::exec {

struct Program;
struct Step;
using KernelFn = void (*)(Program&, const Step&);

/// How a block ends. Slots are indices into Program::slot.
struct Terminator {
  enum class Kind { none, yield, ret, condition, br, cond_br } kind = Kind::none;
  std::vector<int> operands;  // yield/return/condition values (condition: after the flag)
  int cond = -1;              // cond_br / condition flag slot
  std::vector<int> targets;   // successor block indices (br: 1, cond_br: 2)
  std::vector<std::vector<int>> target_operands;
  const ir::Op* op = nullptr;
};

struct RegionPlan;

struct BlockPlan {
  std::vector<int> args;  // slots of the block arguments
  std::vector<Step> steps;
  Terminator term;
};

struct RegionPlan {
  std::vector<BlockPlan> blocks;
};

struct FunctionPlan;

struct Step {
  KernelFn fn = nullptr;
  int id = -1;  // dense index over all steps of the plan (for per-launch watch flags)
  const ir::Op* op = nullptr;
  std::vector<int> in;   // operand slots, in op operand order
  std::vector<int> out;  // result slots
  /// Slots the step's kernel reads besides its operands (a plan pass fused other steps' work into it:
  /// ops::fuse_addresses); live until the step ends, like operands.
  std::vector<int> reads;
  std::vector<const ir::Type*> in_types, out_types;
  int64_t n = 0;  // elements of result 0 (of operand 0 when the op has no result)
  /// Result 0 holds operand 0's bytes unchanged (tt.reshape, tt.expand_dims: the row-major order is
  /// kept), so it may share the operand's storage (Planner::assign_storage); the kernel then copies
  /// nothing.
  bool view = false;
  std::vector<RegionPlan> regions;
  const FunctionPlan* callee = nullptr;  // tt.call
  std::shared_ptr<const void> aux;       // kernel data built at plan time (constants, strides)
  template <class T>
  const T& data() const {
    assert(aux && "the lowering hook that chose this kernel sets aux");
    return *static_cast<const T*>(aux.get());
  }
};

/// Calls f(slot) for each slot a step reads itself (its operands and Step::reads; the steps inside its
/// regions read for themselves), and for each slot a terminator reads (its operands, its condition, its
/// branches' operands). What storage liveness (plan.cpp) and the plan passes count as reads.
template <class F>
void for_each_own_read(const Step& s, F&& f) {
  for (int i : s.in) f(i);
  for (int i : s.reads) f(i);
}
template <class F>
void for_each_read(const Terminator& t, F&& f) {
  for (int i : t.operands) f(i);
  if (t.cond >= 0) f(t.cond);
  for (const auto& ops : t.target_operands)
    for (int i : ops) f(i);
}

struct FunctionPlan {
  const ir::Function* fn = nullptr;
  RegionPlan body;
  int depth = 0;  // deepest nesting of region ops and calls in the body, callees included
};

struct SlotInfo {
  const ir::Type* type = nullptr;
  int64_t bytes = 0;  // storage size (numel * element storage size, or sizeof(BlockPtr) ...)
};

struct Plan {
  const ir::Module* module = nullptr;
  std::vector<SlotInfo> slots;
  std::vector<const ir::Value*> slot_value;  // the SSA value of each slot
  int num_steps = 0;
  std::map<const ir::Function*, std::unique_ptr<FunctionPlan>> functions;
  /// Bytes of one frame: every lowered function's storage, one after the other (a callee's values
  /// never share bytes with its callers').
  int64_t frame_bytes = 0;
  /// Byte offset of each slot's storage in a frame (64-byte aligned). Slots whose values are never
  /// live at the same time may have the same offset (and then the same storage size).
  std::vector<int64_t> slot_offset;
  /// Per slot: the read-only bytes every program reads the slot's value from (a constant tile,
  /// Planner::share_constant), or null: the slot's storage is in the frame, at slot_offset.
  std::vector<const std::byte*> slot_shared;
};

/// Lowers functions into a Plan. Used by the op table's `lower` hooks to inspect types and to
/// raise located errors.
class Planner {
 public:
  /// The deepest nesting of region ops (scf.for, scf.if, ...) and tt.calls a plan may have: the
  /// planner and the engine recurse once per level, on the program's stack (a fiber has 1 MiB).
  /// Triton kernels nest a few levels; the reader allows 256 within one function.
  static constexpr int kMaxNesting = 256;

  Planner(const ir::Module& m, Plan& plan) : module_(m), plan_(plan) {}
  const ir::Module& module() const { return module_; }
  /// Lower `fn` (once; later calls return the same plan).
  const FunctionPlan& lower(const ir::Function& fn);
  /// Lower the callee of the tt.call `call` (lower_call): a located error when calls nest deeper
  /// than kMaxNesting, counting the region ops around the call and inside the callee.
  const FunctionPlan& lower_callee(const ir::Op& call, const ir::Function& callee);
  int slot(const ir::Value* v);
  /// Step `s` makes the same `value` (its one result's storage bytes) in every program (a constant, a
  /// range): the value is made once, in pages mapped read-only (a write would fault rather than change
  /// it for every program), every program reads the result slot there instead of its frame, and the
  /// step writes nothing. Sound because no op writes a slot but its own results (plan.cpp, "Storage by
  /// liveness") and nothing else writes this step's result.
  void share_constant(Step& s, const std::vector<std::byte>& value);
  /// Values of at least this many bytes are worth sharing (a smaller copy per program costs less than
  /// a page of its own).
  static constexpr int64_t kSharedConstantBytes = 1024;
  [[noreturn]] void unsupported(const ir::Op& op, const std::string& why) const;

 private:
  void lower_region(const ir::Region& r, RegionPlan& out);
  void lower_op(const ir::Op& op, Step& s);
  /// Enter one more level at `op` (a region op or a call); a located error past kMaxNesting.
  void nest(const ir::Op& op, int levels);
  void assign_storage(const FunctionPlan& fp);
  const ir::Module& module_;
  Plan& plan_;
  std::map<const ir::Value*, int> slots_;
  int depth_ = 0;     // the planner's own recursion: levels entered since the outermost lower()
  int nesting_ = 0;   // levels around the op being lowered, in the function being lowered
  int fn_depth_ = 0;  // the deepest level seen in the function being lowered
};

struct Launch;    // shared state of one launch (src/exec/engine.cpp)
struct Dispatch;  // who observes what in one launch (src/exec/dispatch.h)
struct Fiber;     // a program running as a fiber (src/exec/engine.cpp)

/// Never set: the stop flag of a Program that runs outside a launch (unit tests).
inline const std::atomic<bool> kNeverStop{false};
/// Never set: the watched-buffer bits of a Program that runs no fibers (nobody can wait).
inline const std::atomic<uint64_t> kNothingWatched{0};

/// One program instance being run: its ids and its frame of slots. One per worker thread (or
/// fiber), reused across the program instances that worker runs.
struct Program {
  ProgramId pid{0, 0, 0};
  std::array<int32_t, 3> grid{1, 1, 1};
  std::vector<std::byte*> slot;  // storage of each slot
  /// The first byte of the program's frame (Plan::slot_offset counts from it); null outside a launch.
  /// A slot's storage is frame + slot_offset unless the slot is a shared constant, or a load left its
  /// value where it lies in the buffer (ops::fuse_addresses, "in place").
  std::byte* frame = nullptr;
  Memory* memory = nullptr;
  const Plan* plan = nullptr;
  Launch* launch = nullptr;            // null outside a launch (unit tests)
  Fiber* fiber = nullptr;              // set while the program runs as a fiber
  unsigned observed = 0;               // EventKind bits some observer wants (dispatch->observed)
  const Dispatch* dispatch = nullptr;  // null: nobody observes
  std::vector<void*> state;            // per Dispatch::observers entry: its state for this program
  LaunchStats* stats = nullptr;        // per-worker counters, summed at the end
  /// The launch's stop flag, read at every step boundary. Once it is seen set, `halted` is set and
  /// every Program::run returns at once: kernels that run regions must check `halted` after each
  /// run and return without using the terminator.
  const std::atomic<bool>* stop = &kNeverStop;
  bool halted = false;
  /// Budget: ops run so far (each block counts its steps and its terminator when it starts), the
  /// most the program may run (LaunchOptions::max_steps), and the launch's cancel flag. Both are
  /// checked at loop back-edges and calls (Program::at_back_edge), not per op.
  int64_t steps = 0;
  int64_t max_steps = INT64_MAX;
  const std::atomic<bool>* cancel = &kNeverStop;
  /// Bit (buffer id % 64) is set while a parked program waits for a write to that buffer: writes
  /// there must call wake_waiters (src/exec/engine.cpp, "Scheduling").
  const std::atomic<uint64_t>* watched = &kNothingWatched;

  template <class T>
  T* at(int s) {
    assert(s >= 0 && static_cast<size_t>(s) < slot.size());
    return reinterpret_cast<T*>(slot[s]);
  }
  template <class T>
  const T* at(int s) const {
    assert(s >= 0 && static_cast<size_t>(s) < slot.size());
    return reinterpret_cast<const T*>(slot[s]);
  }

  /// Run `r` from its entry block (whose argument slots the caller has filled) until a
  /// yield / return / condition terminator, which is returned (its operand slots hold the values).
  /// When the launch is stopping, returns early with `halted` set (an empty terminator).
  const Terminator& run(const RegionPlan& r);
  /// Copy slot `from` to slot `to` (same type).
  void copy(int to, int from);

  /// At a loop back-edge or call of `op`: false while the program may go on. True when the launch
  /// was cancelled (the program is then halted, as by a stop). Throws a located tilescope::Error when
  /// the program has run more than `max_steps` ops. One compare and one relaxed load when nothing
  /// happened.
  bool at_back_edge(const ir::Op& op) {
    if (steps <= max_steps && !cancel->load(std::memory_order_relaxed)) [[likely]]
      return false;
    return out_of_budget(op);
  }
  /// Ops through which one program may wait for another (volatile and atomic loads, atomics) call
  /// this after their access: `n` lanes at `addrs` (`mask` null: all active) and what they read
  /// (`values`, `elem_bytes` each: the loaded values, an atomic's old values). A program that keeps
  /// reading the same value at one address is parked until another program writes there.
  void polled(const Step& s, int64_t n, const uint64_t* addrs, const uint8_t* mask, const void* values,
              int elem_bytes) {
    if (fiber) on_poll(s, n, addrs, mask, values, elem_bytes);
  }
  /// Whether writes to buffer `region` (Memory::region) must wake parked programs.
  bool watching(int region) const {
    return region >= 0 && ((watched->load(std::memory_order_relaxed) >> (region & 63)) & 1);
  }

 private:
  bool out_of_budget(const ir::Op& op);
  void on_poll(const Step& s, int64_t n, const uint64_t* addrs, const uint8_t* mask, const void* values,
               int elem_bytes);
};

/// Writes to the addresses `addrs` (n of them, each in a watched buffer) changed the values there:
/// wake a program parked on each (src/exec/engine.cpp). Called by the access kernels.
void wake_waiters(Program& p, const uint64_t* addrs, int64_t n);

}  // namespace tilescope::exec
