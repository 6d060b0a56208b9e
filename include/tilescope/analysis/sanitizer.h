// tilescope/analysis: the memory sanitizer, an exec::Observer that turns engine events into findings.
//
// Kinds (ARCHITECTURE "Findings", issue 3 item 4; the JSON `kind` strings):
//   out-of-bounds-load / -store / -atomic  an active lane outside the buffer its pointer was derived from
//   null-pointer                           an active lane in region 0 (null, or an address made from an
//   integer) assert-failed                          a tt.assert with failing lanes undefined-value a
//   masked-off lane of a tt.load without `other` that reaches a use int32-overflow i32 addi/subi/muli/shli
//   whose exact result does not fit, reaching an
//                                          address (reported at the arithmetic, even if the wrapped address
//                                          is inside a buffer)
//   division-by-zero                       an integer div/rem lane with a zero divisor that reaches a use
//
// The last three share one mechanism: per program instance, a shadow lane per tracked SSA value holds 0
// (clean) or a cause id. Sources create poison, elementwise / shape / control-flow transfers carry it, and
// only sinks (memory addresses and masks, stored values, branch / assert conditions, reduce / scan / dot
// results that reach those) turn it into a finding. Poison that no sink consumes is never reported
// (`tl.where(mask, x, 0)` cleans; masked-off store lanes are not consumed).
//
// Cost: which values can carry poison is computed once from the module (sources forward, address use
// backward), and only ops touching those values are watched, so clean kernels pay a little per watched op.
// Callbacks are thread-safe; shadow state is the engine's per-program state (exec/events.h), so fibers
// that interleave programs on one thread each see their own.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tilescope/exec/events.h"
#include "tilescope/ir/ir.h"

namespace tilescope::analysis {

enum class Kind : uint8_t {
  oob_load,
  oob_store,
  oob_atomic,
  null_pointer,
  assert_failed,
  undefined_value,
  int32_overflow,
  division_by_zero,
};

/// The JSON / SARIF spelling ("out-of-bounds-load", ...).
const char* kind_name(Kind k);
/// One-line description of the kind (SARIF rule text).
const char* kind_description(Kind k);
constexpr int kNumKinds = 8;

/// One op's place in the TTIR text and in the Python source.
struct OpSite {
  std::string op;         // "tt.load"
  std::string ttir_file;  // the module's filename
  int ttir_line = 0, ttir_col = 0;
  std::string file;  // Python file ("" when unknown)
  int line = 0;
  int col = 0;              // as Triton records it: the Python AST col_offset (0-based)
  std::string var;          // the Python variable the value was assigned to, if known
  std::string source_line;  // the text of `file:line` when the file could be read (no newline)
  std::vector<std::string>
      inlined_from;  // call-site chain of inlined @jit helpers: "file:line", innermost first
};

struct BufferInfo {
  std::string name;                     // kernel argument name
  std::string dtype;                    // "f32"
  std::vector<int64_t> shape, strides;  // elements
  uint64_t bytes = 0;
  int64_t numel = 0;  // bytes / element size
};

struct Finding {
  Kind kind = Kind::oob_load;
  std::string kernel;
  OpSite site;                  // where it is reported (see the kind list above)
  std::optional<OpSite> cause;  // poison kinds: the op that produced the value (load, arithmetic, division)
  std::optional<OpSite> use;    // int32-overflow / division-by-zero: the first op that consumed it
  int64_t programs = 0;         // distinct program instances
  std::vector<exec::ProgramId> first_programs;  // the first few, in (z, y, x) order
  int64_t lanes = 0;                            // offending lanes summed over all occurrences
  std::vector<int64_t> first_lanes;  // the first few distinct lane indices (row-major over the op's tile)
  int64_t occurrences = 0;           // events (an op in a loop counts once per iteration)
  std::optional<BufferInfo> buffer;  // out-of-bounds: the buffer the pointer was derived from
  bool has_offsets = false;          // out-of-bounds: element offsets of the offending lanes
  int64_t offset_min = 0, offset_max = 0;
  int64_t elements_before = 0;  // how far the lowest offset lies before element 0 (0 if not)
  int64_t elements_past = 0;    // how far the highest offset lies past the last element (0 if not)
  bool has_addresses = false;   // null-pointer: raw addresses
  uint64_t address_min = 0, address_max = 0;
  std::string message;                    // assert-failed: the assert's message
  std::vector<std::string> launch_stack;  // Python stack of the launch, "file:line in func", innermost last
  std::string summary;                    // one line: what happened
};

struct LaunchInfo {
  std::string kernel;
  std::vector<std::string> stack;  // Python launch stack, innermost last
};

struct SanitizerOptions {
  /// Stop the launch at the first finding (LaunchContext::request_stop: Engine::launch returns with
  /// LaunchStats::stopped); only the first event's findings are kept.
  bool abort_on_first = false;
  bool poison = true;  // undefined-value, int32-overflow, division-by-zero
  int max_first = 5;   // how many program ids / lanes to keep
};

class Sanitizer : public exec::Observer {
 public:
  /// `module` must outlive the Sanitizer. One Sanitizer may observe many launches of the module's
  /// kernels, one at a time; call finish() after each launch.
  explicit Sanitizer(const ir::Module& module, bool abort_on_first = false);
  Sanitizer(const ir::Module& module, const SanitizerOptions& opts);
  ~Sanitizer() override;

  /// The event kinds it subscribes to (kOpResult and kProgram only when the poison analyses have
  /// something to watch in this module).
  unsigned kinds() const;
  exec::Subscription on_launch_begin(const exec::LaunchContext&) override;
  void on_launch_end(const exec::LaunchContext&, const exec::LaunchStats&) override;
  void* on_program_begin(exec::ProgramId) override;
  void on_program_end(exec::ProgramId, void* state) override;
  void on_access(const exec::AccessEvent&, void* state) override;
  void on_op(const exec::OpEvent&, void* state) override;
  void on_transfer(const exec::TransferEvent&, void* state) override;
  void on_assert(const exec::AssertEvent&, void* state) override;

  /// Group this launch's events into findings (appended to findings(), ordered by kind and TTIR
  /// position) and reset for the next launch. Returns how many were added.
  size_t finish(const LaunchInfo& info);
  const std::vector<Finding>& findings() const;
  /// Ops watched for the poison analyses (for tests and the overhead report).
  size_t watched_ops() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tilescope::analysis
