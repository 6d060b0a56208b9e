// tilescope/exec: how the engine stores SSA values, for observers that read them (OpEvent).
//
// A value of type T is stored as numel(T) elements, row-major over T's shape (a scalar is one
// element); a tensor of element type E is stored as:
//   i1                        uint8_t 0 / 1
//   i8, i16, i32, i64         native two's complement (TTIR is signless: the op decides signedness)
//   f16, bf16                 uint16_t IEEE / bfloat16 bit patterns (decode: ir::float_from_bits)
//   f8E4M3FN, f8E5M2, ...FNUZ uint8_t OCP / FNUZ bit patterns (decode: ir::float_from_bits)
//   f32, f64                  float, double
//   !tt.ptr<T> (and tensors of them)  uint64_t virtual addresses (exec/memory.h: they carry the buffer)
//   !tt.ptr<tensor<...>>      one BlockPtr (tt.make_tensor_ptr)
//   !tt.tensordesc<...>       one TensorDesc
// The float codecs live in tilescope/ir/elem.h.
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

/// Storage bytes of one value of type `t`.
int64_t storage_bytes(const ir::Type& t);

/// One value's storage as an observer sees it during a callback (valid only during the callback).
struct ValueRef {
  const ir::Type* type = nullptr;
  const void* data = nullptr;

  ir::Elem elem() const { return type->elem; }
  /// Elements (1 for a scalar, a block pointer or a descriptor).
  int64_t numel() const { return type->numel(); }
  /// The storage as an array of `T` (see the table above for which T fits which element type).
  template <class T>
  const T* as() const {
    return static_cast<const T*>(data);
  }
};

}  // namespace tilescope::exec
