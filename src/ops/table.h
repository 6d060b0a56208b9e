// The lowering column of the op registry (include/tilescope/ir/ops.def): for each opcode, the hook
// the planner calls to pick the kernel for the op's element types. An opcode without one is
// recognised but not executable: an "unsupported op" error with both locations.
#pragma once

#include "tilescope/ir/ops.h"

namespace tilescope::exec {
class Planner;
struct Step;
}  // namespace tilescope::exec

namespace tilescope::ops {

using LowerFn = void (*)(const ir::Op&, exec::Planner&, exec::Step&);

/// The lowering hook of `code`, or null.
LowerFn lowering(ir::Opcode code);
/// Give an op that a dialect registered (ir::register_op) its lowering hook. Call before planning.
void register_lowering(ir::Opcode code, LowerFn fn);

}  // namespace tilescope::ops
