// shape family kernels (see ops.h).
#include "src/ops/ops.h"

namespace tilescope::ops {

void lower_splat(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_unsplat(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_broadcast(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_reshape(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_trans(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_cat(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_join(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_split(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_gather(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_histogram(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_make_range(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_program_id(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }

}  // namespace tilescope::ops
