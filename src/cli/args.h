// Kernel arguments as `tilescope run --arg NAME=SPEC` gives them: buffers (a generator or a .npy file)
// and scalars written as text. Every message names the argument; bad input is a tilescope::Error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "npy.h"
#include "tilescope/ir/elem.h"
#include "tilescope/launch/record.h"

namespace tilescope::cli {

/// A buffer made for a pointer argument: its element type, its shape (elements, row-major) and its
/// bytes (shape's product times the element size; empty for a shape with a 0 dimension).
struct HostBuffer {
  ir::Elem elem;
  std::vector<int64_t> shape;
  ArrayBytes data;  // cache-line aligned, as a torch tensor's
};

/// The buffer of pointer argument `name` (pointee element type `pointee`) from `spec`:
///
/// - `[DTYPE][SHAPE]:GEN`, GEN one of zeros, ones, randn, rand, arange, full=V (random values from
///   `rng`). SHAPE is decimal sizes separated by `x` or `,`. A 0 size gives an empty buffer (0 bytes;
///   any access is out of bounds), as `torch.empty(0)` gives a Triton kernel. V must be a value of the
///   element type: a float that rounds to a finite value (or inf / nan as written), an integer
///   within the width's signed or unsigned range.
/// - a path ending in `.npy` (npy.h): its dtype must have the pointee's size and kind.
///
/// Throws tilescope::Error for a malformed spec, a shape whose element count overflows 64 bits, a
/// buffer over 64 GiB or one that cannot be allocated.
HostBuffer buffer_from_spec(const std::string& name, const std::string& spec, ir::Elem pointee,
                            std::mt19937_64& rng);

/// The value of scalar argument `name` of TTIR type `t` from `[TYPE:]VALUE`. TYPE (optional) must
/// have the size and kind (integer or float) of `t`.
///
/// - Integers are decimal, as Python's `int()` and numpy read them (`010` is ten, not octal), with an
///   optional sign and Python's base prefixes `0x`, `0o`, `0b`; `true` / `false`. An unsigned TYPE
///   (u32, uint64, ...) takes no sign. Whether the value fits the width is checked when the launch
///   record is bound (launch::bind).
/// - Floats are C's `strtod` syntax (decimal, hexadecimal, inf, nan), and must round to a finite
///   value of `t` unless written as inf or nan: `f32:1e39` is an error, as `f64:1e999` is. A value
///   below the smallest subnormal rounds to 0, as a conversion does.
launch::Scalar parse_scalar(const std::string& name, const std::string& spec, const ir::Type& t);

}  // namespace tilescope::cli
