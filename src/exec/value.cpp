// Storage sizes of slot values (see include/tilescope/exec/value.h).
#include "tilescope/exec/value.h"

namespace tilescope::exec {

int64_t storage_bytes(const ir::Type& t) {
  if (t.is_block_ptr()) return static_cast<int64_t>(sizeof(BlockPtr));
  if (t.elem == ir::Elem::tensordesc) return static_cast<int64_t>(sizeof(TensorDesc));
  return t.numel() * ir::elem_bytes(t.elem);
}

}  // namespace tilescope::exec
