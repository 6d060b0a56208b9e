// memory family kernels (see ops.h).
#include "src/ops/ops.h"

namespace tilescope::ops {

void lower_addptr(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_load(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_store(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_atomic_rmw(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_atomic_cas(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_make_tensor_ptr(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_advance(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_make_desc(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_desc_load(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_desc_store(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_desc_gather(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_desc_scatter(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }

}  // namespace tilescope::ops
