// The plan: a verified function lowered once into steps over value slots.
//
// Every SSA value gets a slot whose storage is sized at plan time (TTIR shapes are static) and
// reused across loop iterations and program instances (one Program per worker thread). Every op
// becomes a Step whose kernel was chosen for its element types by the op table's `lower` hook, so
// running a step is one indirect call doing tile work: no dispatch on types, no allocation.
//
// Storage encodings (exec/value.h): i1 as uint8 0/1, integers as native two's complement, f16 and
// bf16 as uint16 bits, fp8 as uint8 bits, f32 float, f64 double, pointers as uint64 virtual
// addresses (exec/memory.h), block pointers as BlockPtr, tensor descriptors as TensorDesc.
#pragma once

#include <array>
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
  std::vector<const ir::Type*> in_types, out_types;
  int64_t n = 0;  // elements of result 0 (of operand 0 when the op has no result)
  std::vector<RegionPlan> regions;
  const FunctionPlan* callee = nullptr;  // tt.call
  std::shared_ptr<const void> aux;       // kernel data built at plan time (constants, strides)
  template <class T>
  const T& data() const {
    assert(aux && "the lowering hook that chose this kernel sets aux");
    return *static_cast<const T*>(aux.get());
  }
};

struct FunctionPlan {
  const ir::Function* fn = nullptr;
  RegionPlan body;
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
  int64_t frame_bytes = 0;
  std::vector<int64_t> slot_offset;  // byte offset of each slot in a frame (64-byte aligned)
};

/// Lowers functions into a Plan. Used by the op table's `lower` hooks to inspect types and to
/// raise located errors.
class Planner {
 public:
  Planner(const ir::Module& m, Plan& plan) : module_(m), plan_(plan) {}
  const ir::Module& module() const { return module_; }
  /// Lower `fn` (once; later calls return the same plan).
  const FunctionPlan& lower(const ir::Function& fn);
  int slot(const ir::Value* v);
  [[noreturn]] void unsupported(const ir::Op& op, const std::string& why) const;

 private:
  void lower_region(const ir::Region& r, RegionPlan& out);
  void lower_op(const ir::Op& op, Step& s);
  const ir::Module& module_;
  Plan& plan_;
  std::map<const ir::Value*, int> slots_;
};

struct Launch;  // shared, read-only state of one launch (src/exec/engine.cpp)

/// One program instance being run: its ids and its frame of slots. One per worker thread,
/// reused across the program instances that worker runs.
struct Program {
  ProgramId pid{0, 0, 0};
  std::array<int32_t, 3> grid{1, 1, 1};
  std::vector<std::byte*> slot;  // storage of each slot
  Memory* memory = nullptr;
  const Plan* plan = nullptr;
  const Launch* launch = nullptr;
  unsigned observed = 0;                               // EventKind bits some observer wants
  const std::vector<uint8_t>* watched = nullptr;       // per Step::id: some observer watches the op
  const std::vector<uint8_t>* watched_slot = nullptr;  // per slot: some observer watches transfers into it
  const std::vector<Observer*>* observers = nullptr;
  LaunchStats* stats = nullptr;  // per-worker counters, summed at the end

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
  const Terminator& run(const RegionPlan& r);
  /// Copy slot `from` to slot `to` (same type).
  void copy(int to, int from);
  /// Called by atomics and volatile loads: lets programs that spin on each other make progress.
  void yield_to_others();
};

}  // namespace tilescope::exec
