// dot family kernels (see ops.h).
#include "src/ops/ops.h"

namespace tilescope::ops {

void lower_dot(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_dot_scaled(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }

}  // namespace tilescope::ops
