// Reading structure (reference §0.3): regions `{ ... }` of blocks with labels and arguments, block
// references, functions (`tt.func`) and the module. Private to src/ir.
#pragma once

#include <string>
#include <vector>

#include "tilescope/ir/ir.h"

namespace tilescope::ir {

class Parser;

/// An argument an op or a function defines for a region's entry block (or a block defines).
struct ArgDef {
  std::string name;
  const Type* type = nullptr;
  size_t off = 0;
  int loc = -1;  // its location node, -1 if none
};

/// A region `{ ... }` owned by `parent` (null for a function body). `entry` (if given) are the
/// entry block's arguments defined by the op (scf.for's iv and iter_args, a function's signature).
void parse_region(Parser& p, Region& r, Op* parent, const std::vector<ArgDef>* entry);
/// `^label`: a block of the region being read, created on first use (defined later by its label).
Block* block_ref(Parser& p);
/// `module [@name] [attributes {...}] { tt.func ... } [loc(...)]`, after the keyword `module`.
void parse_module(Parser& p);

}  // namespace tilescope::ir
