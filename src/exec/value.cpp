// Float format conversions (being written).
#include "src/exec/value.h"

#include "src/exec/plan.h"

namespace tilescope::exec {
double float_from_bits(ir::Elem, uint64_t) { return 0; }
uint64_t float_to_bits(ir::Elem, double, Rounding) { return 0; }
uint64_t float_to_bits_f32(ir::Elem, float, Rounding) { return 0; }
}  // namespace tilescope::exec
namespace tilescope::exec {
int64_t storage_bytes(const ir::Type& t) {
  if (t.is_block_ptr()) return sizeof(BlockPtr);
  if (t.elem == ir::Elem::tensordesc) return sizeof(TensorDesc);
  return t.numel() * ir::elem_bytes(t.elem);
}
}  // namespace tilescope::exec
