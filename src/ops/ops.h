// Lowering hooks of the op table, by family. Each picks a kernel for the op's element types at
// plan time and stores it (and any constant data) in the Step; it calls Planner::unsupported for
// type combinations it cannot run.
#pragma once

#include <cstddef>
#include <utility>

#include "plan.h"
#include "table.h"

namespace tilescope::ops {

/// The value `table` gives `code`, or T{}: how a family's lowering hook picks the kernel of each op.
template <class T, size_t N>
T pick(ir::Opcode code, const std::pair<ir::Opcode, T> (&table)[N]) {
  for (const auto& [c, v] : table)
    if (c == code) return v;
  return T{};
}

using exec::Planner;
using exec::Step;
using ir::Op;

// arith.cpp: arith, math, and the tt elementwise ops (reference §1.1, §2.1, §2.2)
void lower_constant(const Op&, Planner&, Step&);
void lower_int_binary(const Op&, Planner&, Step&);    // addi ... shrui, min/max si/ui, mulhiui
void lower_float_binary(const Op&, Planner&, Step&);  // addf ... maxnumf, precise_divf
void lower_float_unary(const Op&, Planner&, Step&);   // negf, math.*, precise_sqrt
void lower_int_unary(const Op&, Planner&, Step&);     // math.absi
void lower_fma(const Op&, Planner&, Step&);
void lower_compare(const Op&, Planner&, Step&);
void lower_select(const Op&, Planner&, Step&);
void lower_cast(const Op&, Planner&, Step&);  // ext/trunc, int<->float, arith.bitcast
void lower_fp_to_fp(const Op&, Planner&, Step&);
void lower_bitcast(const Op&, Planner&, Step&);  // tt.bitcast
void lower_clampf(const Op&, Planner&, Step&);
void lower_ptr_int(const Op&, Planner&, Step&);  // tt.int_to_ptr, tt.ptr_to_int
void lower_extern(const Op&, Planner&, Step&);   // tt.extern_elementwise (libdevice __nv_*)
void lower_poison(const Op&, Planner&, Step&);

// inline_asm.cpp: tt.elementwise_inline_asm through the PTX evaluator (ptx.h)
void lower_inline_asm(const Op&, Planner&, Step&);

// shape.cpp (reference §1.4, §1.5)
void lower_splat(const Op&, Planner&, Step&);
void lower_unsplat(const Op&, Planner&, Step&);
void lower_broadcast(const Op&, Planner&, Step&);
void lower_reshape(const Op&, Planner&, Step&);  // reshape, expand_dims (row-major copy)
void lower_trans(const Op&, Planner&, Step&);
void lower_cat(const Op&, Planner&, Step&);
void lower_join(const Op&, Planner&, Step&);
void lower_split(const Op&, Planner&, Step&);
void lower_gather(const Op&, Planner&, Step&);
void lower_histogram(const Op&, Planner&, Step&);
void lower_make_range(const Op&, Planner&, Step&);
void lower_program_id(const Op&, Planner&, Step&);  // get_program_id, get_num_programs

// reduce.cpp (reference §1.5, §1.1 map_elementwise)
void lower_reduce(const Op&, Planner&, Step&);
void lower_scan(const Op&, Planner&, Step&);
void lower_map_elementwise(const Op&, Planner&, Step&);

// dot.cpp (reference §1.5, §5.3)
void lower_dot(const Op&, Planner&, Step&);
void lower_dot_scaled(const Op&, Planner&, Step&);

// memory.cpp (reference §1.2, §1.3, §1.8, §5.1, §5.4, §5.6)
void lower_addptr(const Op&, Planner&, Step&);
void lower_load(const Op&, Planner&, Step&);
void lower_store(const Op&, Planner&, Step&);
void lower_atomic_rmw(const Op&, Planner&, Step&);
void lower_atomic_cas(const Op&, Planner&, Step&);
void lower_make_tensor_ptr(const Op&, Planner&, Step&);
void lower_advance(const Op&, Planner&, Step&);
void lower_make_desc(const Op&, Planner&, Step&);
void lower_desc_load(const Op&, Planner&, Step&);
void lower_desc_store(const Op&, Planner&, Step&);  // descriptor_store and descriptor_reduce
void lower_desc_gather(const Op&, Planner&, Step&);
void lower_desc_scatter(const Op&, Planner&, Step&);

// control.cpp (reference §2.3, §1.6, §1.7)
void lower_for(const Op&, Planner&, Step&);
void lower_if(const Op&, Planner&, Step&);
void lower_while(const Op&, Planner&, Step&);
void lower_call(const Op&, Planner&, Step&);
void lower_print(const Op&, Planner&, Step&);
void lower_assert(const Op&, Planner&, Step&);
void lower_nop(const Op&, Planner&, Step&);  // barriers, llvm.intr.assume

}  // namespace tilescope::ops
