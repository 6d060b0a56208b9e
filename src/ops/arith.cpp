// arith family kernels (see ops.h).
#include "src/ops/ops.h"

namespace tilescope::ops {

void lower_constant(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_int_binary(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_float_binary(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_float_unary(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_int_unary(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_fma(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_compare(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_select(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_cast(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_fp_to_fp(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_bitcast(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_clampf(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_ptr_int(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_extern(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_poison(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_inline_asm(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }

}  // namespace tilescope::ops
