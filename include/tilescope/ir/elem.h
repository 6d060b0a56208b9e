// tilescope/ir: element types, the one table of their names and sizes, and the float codecs.
//
// TTIR is signless: signedness lives in the op (divsi/divui, cmpi slt/ult), reference §0.2. Every
// place that names an element type (the reader, the CLI's --arg specs, the Python front door's
// torch / numpy dtypes, .npy files, reports) reads this one table.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tilescope::ir {

enum class Elem : uint8_t {
  i1,
  i8,
  i16,
  i32,
  i64,
  f8e4m3fn,
  f8e5m2,
  f8e4m3fnuz,
  f8e5m2fnuz,
  f16,
  bf16,
  f32,
  f64,
  ptr,         // !tt.ptr<T>: a 64-bit address; the pointee is Type::pointee
  tensordesc,  // !tt.tensordesc<tensor<...>>: a TMA descriptor; the block type is Type::pointee
  none,        // no value (functions without results)
};
inline constexpr int kNumElems = static_cast<int>(Elem::none) + 1;

/// One row of the element table.
struct ElemInfo {
  Elem elem;
  const char* mlir;  // MLIR spelling: "i32", "f8E5M2", "bf16"
  int bytes;         // storage bytes of one element (i1 is stored as one byte, pointers as 8)
  int bits;          // bit width as MLIR counts it (i1 -> 1, f8* -> 8, ptr -> 64)
  bool is_int, is_float;
  const char* npy;  // the .npy descr that holds the elements (bf16 / fp8 as unsigned bit patterns)
};

const ElemInfo& elem_info(Elem e);
inline int elem_bytes(Elem e) { return elem_info(e).bytes; }
inline int elem_bits(Elem e) { return elem_info(e).bits; }
inline bool is_int(Elem e) { return elem_info(e).is_int; }
inline bool is_float(Elem e) { return elem_info(e).is_float; }
/// MLIR spelling: "i32", "f8E5M2", "bf16", ...
inline const char* elem_name(Elem e) { return elem_info(e).mlir; }

/// The element type called `name` by MLIR (exact case: "f8E5M2"), or null. What the reader accepts.
std::optional<Elem> elem_from_mlir(std::string_view name);
/// The element type of a name as users write it, case-insensitively: MLIR's (f32, bf16, f8E5M2),
/// Triton's (fp32, int32, fp8e5, fp8e4nv), torch's and numpy's (float32, bfloat16, float8_e5m2, bool,
/// half, double); unsigned names (u8, uint32, ...) give the signless integer of the same width.
std::optional<Elem> elem_from_name(std::string_view name);
/// Whether `name` spells an unsigned integer (u8, uint32, ...): signless in TTIR, but a value given
/// for it is read as unsigned.
bool is_unsigned_name(std::string_view name);
/// The names elem_from_name accepts, for error messages.
const char* elem_names_help();

// ------------------------------------------------------------------------------------------------
// Float codecs. f16, bf16 and the fp8 formats are stored as their IEEE / OCP bit patterns.
// Conversions round to nearest even (the GPU's `cvt.rn`; bf16 is RTNE, not truncation, reference §5),
// or toward zero with overflow to the largest finite value for `rounding = rtz` (§5, measured on an
// H200). NaN inputs give the format's canonical NaN.

enum class Rounding { rtne, rtz };

/// Decode `bits` of a float format (f16, bf16, f8*) or f32/f64 bits into a double (exact).
double float_from_bits(Elem e, uint64_t bits);
/// Encode `v` into the bits of float format `e` (f16, bf16, f8*, f32, f64) with `r`.
uint64_t float_to_bits(Elem e, double v, Rounding r = Rounding::rtne);
/// f32 -> bits of `e` (rounds once from the float).
uint64_t float_to_bits_f32(Elem e, float v, Rounding r = Rounding::rtne);

}  // namespace tilescope::ir
