// Static part of the poison analyses: which SSA values can carry poison, which ops to watch, and
// how each watched op moves poison (sanitizer.h explains the dynamic part).
//
// Computed once per module (not per launch): sources forward through everything that can carry
// a value (elementwise, shape ops, select, reduce/scan/dot, control-flow transfers, calls), and, for
// the int32-overflow source, the values that flow into an address (backward from load / store /
// atomic pointers and masks, block pointers and descriptor offsets). Only ops that are sources or
// read a tracked value are watched, so a kernel without sources costs nothing.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "tilescope/analysis/sanitizer.h"
#include "tilescope/ir/ir.h"

namespace tilescope::analysis {

/// How a watched op moves poison.
enum class Cat : uint8_t {
  none,         // reads a tracked value but neither carries nor consumes it (tt.print)
  elementwise,  // result lane i from operand lane i (scalar operands: lane 0)
  select,       // arith.select: condition, then the chosen operand
  load,         // tt.load through a tensor of pointers (address / mask sinks; masked source)
  block_load,   // tt.load through a block pointer (address sink)
  store,        // tt.store (address, mask, value sinks)
  block_store,  // tt.store through a block pointer
  atomic_rmw,   // ptr, val, mask
  atomic_cas,   // ptr, cmp, val (all lanes active)
  splat,
  broadcast,
  linear,  // expand_dims, reshape: same row-major order
  trans,
  join,
  split,
  cat,
  unsplat,
  gather,
  reduce,
  scan,
  dot,
  dot_other,    // dot_scaled: accumulator lane-wise, anything else taints every lane
  histogram,    // input lanes are a sink
  scalar_any,   // make_tensor_ptr, advance, make_tensor_descriptor: one scalar result
  desc_access,  // descriptor load/store/gather/scatter/reduce: scalar operands are addresses, tensors values
  cond,         // scf.if: operand 0 is a branch condition
  for_bounds,   // scf.for: operands 0..2 decide the trip count
  assert_,      // tt.assert: condition lanes
};

enum class Source : uint8_t { none, masked_load, overflow, divzero };

struct OpInfo {
  Cat cat = Cat::none;
  Source source = Source::none;
  uint32_t cause = 0;                // this op's cause id when it is a source
  std::vector<int> in, out;          // tracked index of each operand / result (-1: not tracked, always clean)
  std::vector<int64_t> in_n, out_n;  // element counts
  int mask = -1, other = -1;         // tt.load / store / atomic operand roles
  int axis = 0;
  bool reverse = false;
  std::vector<int64_t> in_shape, out_shape;  // operand 0 / result 0 shapes
  std::vector<int64_t> b_shape;              // dot: operand 1
  std::vector<int> order;                    // trans
  uint8_t arith = 0;                         // overflow source: 0 add, 1 sub, 2 mul, 3 shl
};

struct Cause {
  Kind kind = Kind::undefined_value;
  const ir::Op* origin = nullptr;  // the load / arithmetic / division
  const ir::Op* via = nullptr;     // undefined values: the reduce / scan / dot they first flowed through
};

struct TaintPlan {
  std::unordered_map<const ir::Op*, OpInfo> ops;      // watched ops
  std::unordered_map<const ir::Value*, int> tracked;  // values that may carry poison -> dense index
  std::vector<int64_t> numel;                         // per tracked index
  std::vector<const ir::Op*> cond_term;  // per tracked index: the branch terminator it is the condition of
  std::vector<Cause> causes;             // static causes; index 0 is "clean"
};

TaintPlan build_taint_plan(const ir::Module& m);

}  // namespace tilescope::analysis
