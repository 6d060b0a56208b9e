// Element encodings and conversions shared by the kernels.
//
// f16, bf16 and the fp8 formats are stored as their IEEE/OCP bit patterns. Conversions to them
// round to nearest even (the GPU's `cvt.rn`, reference §5: bf16 is RTNE, not truncation), or toward
// zero with overflow to the largest finite value for `rounding = rtz` (§5, measured on H200).
// NaN inputs give the format's canonical NaN.
#pragma once

#include <cstdint>

#include "tilescope/ir/ir.h"

namespace tilescope::exec {

enum class Rounding { rtne, rtz };

/// Decode `bits` of a float format (f16, bf16, f8*) or f32/f64 bits into a double (exact).
double float_from_bits(ir::Elem e, uint64_t bits);
/// Encode `v` into the bits of float format `e` (f16, bf16, f8*, f32, f64) with `r`.
uint64_t float_to_bits(ir::Elem e, double v, Rounding r = Rounding::rtne);
/// f32 -> bits of `e` (exact double rounding is avoided: rounds once from the float).
uint64_t float_to_bits_f32(ir::Elem e, float v, Rounding r = Rounding::rtne);

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
