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

enum class Source : uint8_t { none, masked_load, overflow, divzero };

/// The i32 operation of an overflow source (arith.addi / subi / muli / shli).
enum class Arith : uint8_t { add, sub, mul, shl };

/// Whether `a[i] <op> b[i]` overflows i32 for some i < n: the exact result (in 64 bits; a shift as the
/// multiplication by 2^b, and every shift by b < 0 or b >= 32 of a nonzero a) is not an i32. The sanitizer's
/// int32-overflow source (README, "Findings"); vectorised, since it runs on every lane of every i32 add.
bool any_int32_overflow(Arith k, const int32_t* a, const int32_t* b, int64_t n);
/// The same test for one shift lane.
bool int32_shl_overflows(int32_t a, int32_t b);

struct OpInfo {
  ir::Taint rule = ir::Taint::none;  // how the op moves poison: its taint rule in the op registry
  bool block = false;                // a load or store through a block pointer (no mask; address sink only)
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
  Arith arith = Arith::add;                  // overflow source: which i32 operation
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
