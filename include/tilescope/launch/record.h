// tilescope/launch: the launch record, one value describing one kernel launch.
//
// The CLI, the Python front door, the trace, replay, the server and the kernel generator all make and
// consume this one type. It holds what is needed to run the launch again: the TTIR text, the kernel,
// the grid, every argument in TTIR order (buffers by dtype, shape, strides and extent; scalars by the
// value the caller gave), how the front end specialized the kernel, and the Python stack of the launch.
// Buffer contents are not part of it (the host memory lives with the caller; the trace stores bytes
// separately). Its JSON form (to_json / record_from_json) is stable: README "Launch record".
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "tilescope/exec/engine.h"
#include "tilescope/exec/memory.h"
#include "tilescope/ir/elem.h"
#include "tilescope/ir/ir.h"

namespace tilescope::launch {

/// A scalar argument as the caller gave it; converted to the TTIR argument's type when bound.
using Scalar = std::variant<int64_t, uint64_t, double, bool>;

/// One kernel argument, bound to the TTIR function argument of the same position.
struct ArgRecord {
  enum class Kind : uint8_t {
    buffer,  // memory: a tensor or array the kernel gets a pointer to
    scalar,  // a number
    none,    // Python's None (only valid where the kernel has no use for it: an error when bound)
  };
  Kind kind = Kind::scalar;
  std::string name;  // the kernel argument's name ("x_ptr")

  // kind == buffer
  ir::Elem dtype = ir::Elem::i8;        // element type as the caller registered it
  std::vector<int64_t> shape, strides;  // the view's shape and strides, in elements (for reports)
  uint64_t bytes = 0;                   // every byte the view can reach, from its first element
  std::byte* host = nullptr;            // the memory during a launch (never serialized)
  /// For a host-side tensor descriptor (the buffer is its base): what its loads give outside the
  /// tensor, 1 zero or 2 NaN (TensorDescriptor.padding; JSON "padding": "nan" when 2).
  int padding = 1;

  // kind == scalar
  Scalar value = int64_t{0};

  static ArgRecord buffer(std::string name, ir::Elem dtype, std::byte* host, uint64_t bytes,
                          std::vector<int64_t> shape, std::vector<int64_t> strides);
  static ArgRecord scalar(std::string name, Scalar v);
};

/// How the front end specialized the kernel (Triton's binder, reference §4.1); for display and to
/// compile the same specialization again. The TTIR already reflects it.
struct Specialization {
  std::vector<std::pair<std::string, std::string>> constexprs;  // name, Python repr of the value
  std::vector<std::string> divisible_by_16;                     // arguments specialized as multiples of 16
  std::vector<std::string> equal_to_1;                          // integer arguments specialized to 1
};

struct LaunchRecord {
  std::string kernel;     // the public tt.func to run ("" = the module's first public function)
  std::string ttir;       // TTIR text as Triton prints it
  std::string ttir_file;  // what diagnostics call the text ("add_kernel.ttir")
  std::array<int64_t, 3> grid{1, 1, 1};
  std::vector<ArgRecord> args;  // in TTIR argument order
  /// The program's other live allocations (kind buffer, named by the front end), registered after the
  /// arguments so that a pointer the kernel makes from an integer (a data_ptr() in a pointer array,
  /// tt.int_to_ptr) resolves to the tensor it lies in (exec::Memory::from_host). Empty unless the
  /// kernel makes pointers from integers.
  std::vector<ArgRecord> allocations;
  Specialization specialization;
  std::vector<std::string> stack;  // Python stack of the launch, "file:line in func", innermost last
};

/// The record as JSON (README "Launch record"); `with_ttir` false leaves the TTIR text out (a trace
/// stores it once per kernel).
nlohmann::json to_json(const LaunchRecord& r, bool with_ttir = true);
/// Read what to_json wrote. Throws tilescope::Error naming the field when `j` is malformed.
LaunchRecord record_from_json(const nlohmann::json& j);

/// A record bound to a kernel: its buffers registered in `memory` (arguments, then allocations), its scalars
/// converted to the TTIR argument types (integers must fit the width, signed or unsigned, as Triton's
/// launcher requires; floats are rounded to the argument's format), descriptors built from their shape/stride
/// arguments. Throws tilescope::Error naming the argument for a count, kind or range mismatch.
std::vector<exec::Arg> bind(const LaunchRecord& r, const ir::Function& kernel, exec::Memory& memory);

}  // namespace tilescope::launch
