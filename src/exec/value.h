// Slot value types shared by the kernels: block pointers, tensor descriptors, storage sizes.
//
// Element encodings (f16/bf16/fp8 as bit patterns) and the float codecs are in tilescope/ir/elem.h.
#pragma once

#include <cstdint>

#include "tilescope/ir/ir.h"

namespace tilescope::exec {

/// A block pointer (tt.make_tensor_ptr, Triton <= 3.6 `.source` IR only). Element offsets.
struct BlockPtr {
  static constexpr int kMaxRank = 5;
  uint64_t base = 0;  // virtual address of element 0
  int rank = 0;
  int64_t shape[kMaxRank]{};    // elements
  int64_t strides[kMaxRank]{};  // elements
  int32_t offsets[kMaxRank]{};  // elements
};

/// A tensor descriptor (tt.make_tensor_descriptor or a host tensordesc argument).
struct TensorDesc {
  static constexpr int kMaxRank = 5;
  uint64_t base = 0;
  int rank = 0;
  int64_t shape[kMaxRank]{};
  int64_t strides[kMaxRank]{};  // elements
  int padding = 1;              // 1 zero, 2 nan (PaddingOption)
};

/// Storage bytes of one value of type `t` in a slot.
int64_t storage_bytes(const ir::Type& t);

}  // namespace tilescope::exec
