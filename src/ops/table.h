// The lowering column of the op registry (include/tilescope/ir/ops.def): for each opcode, the hook
// the planner calls to pick the kernel for the op's element types. An opcode without one is
// recognised but not executable: an "unsupported op" error with both locations.
#pragma once

#include "tilescope/ir/ops.h"

namespace tilescope::exec {
class Planner;
struct Step;
struct FunctionPlan;
}  // namespace tilescope::exec

namespace tilescope::ops {

using LowerFn = void (*)(const ir::Op&, exec::Planner&, exec::Step&);

/// The lowering hook of `code`, or null.
LowerFn lowering(ir::Opcode code);
/// Give an op that a dialect registered (ir::register_op) its lowering hook. Call before planning.
void register_lowering(ir::Opcode code, LowerFn fn);

/// Plan pass (memory.cpp), run on each function once its steps are lowered and before its storage is
/// assigned: a tt.load / tt.store through tt.addptr(tt.splat(p), offsets), i32 or i64 offsets, whose
/// pointer tile nothing else reads, computes its lanes from p and the offsets (Step::reads); the addptr
/// makes the tile (from p) only in launches where an observer can see addresses (exec::kSeesAddresses),
/// and the splat only for an observer that watches it. A tile of consecutive offsets in one buffer is
/// then one range check and one copy: no 64-bit address per lane, no contiguity test over them. A fused
/// load whose value is read only later in its block, with nothing in between that may change memory,
/// reads such a tile in place: its result slot points into the buffer (CONTRIBUTING.md "Value storage").
void fuse_addresses(exec::FunctionPlan& fp);

}  // namespace tilescope::ops
