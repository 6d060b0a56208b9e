// reduce family kernels (see ops.h).
#include "src/ops/ops.h"

namespace tilescope::ops {

void lower_reduce(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_scan(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }
void lower_map_elementwise(const Op& op, Planner& p, Step&) { p.unsupported(op, "not implemented yet"); }

}  // namespace tilescope::ops
