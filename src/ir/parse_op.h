// Reading ops (reference §0.3, §1-§2): one statement `[%results =] op ... [loc(...)]`, in the
// generic form `"name"(operands)[successors] <{props}> ({regions}) {attrs} : (T...) -> R` or the
// op's custom form (its Syntax in the op registry, tilescope/ir/ops.def; parse_custom.h). Private to src/ir.
#pragma once

#include <vector>

#include "tilescope/ir/ir.h"

namespace tilescope::ir {

class Parser;

/// One op statement, appended to `b`.
void parse_op(Parser& p, Block* b);

}  // namespace tilescope::ir
