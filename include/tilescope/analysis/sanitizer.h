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
// Callbacks are thread-safe; shadow state is per program id (fibers may interleave programs on one thread).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tilescope/analysis/finding.h"
#include "tilescope/exec/events.h"
#include "tilescope/ir/ir.h"

namespace tilescope::analysis {

struct LaunchInfo {
  std::string kernel;
  std::vector<std::string> stack;  // Python launch stack, innermost last
};

/// Thrown from an observer callback (and so out of Engine::launch) when `abort_on_first` is set and a
/// finding was recorded; call finish() afterwards to collect it.
class AbortRequested : public std::runtime_error {
 public:
  AbortRequested() : std::runtime_error("stopped at the first finding (--abort-on-first)") {}
};

struct SanitizerOptions {
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

  unsigned kinds() const override;
  void on_access(const exec::AccessEvent&) override;
  bool watches(const ir::Op&) const override;
  bool watches_value(const ir::Value&) const override;
  void on_op(const exec::OpEvent&) override;
  void on_transfer(const exec::TransferEvent&) override;
  void on_program(exec::ProgramId, bool begin) override;
  void on_assert(const exec::AssertEvent&) override;

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
