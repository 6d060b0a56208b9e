// tilescope/analysis: the memory sanitizer, an exec::Observer that turns engine events into findings.
//
// Kinds (ARCHITECTURE "Findings", issue 3 item 4; the JSON `kind` strings):
//   out-of-bounds-load / -store / -atomic  an active lane outside the buffer its pointer was derived from
//   null-pointer      an active lane in no buffer, below 64 KiB (null plus an offset)
//   wild-pointer      an active lane in no buffer elsewhere: an integer made into a pointer that lies in
//                     no live allocation (exec/memory.h); it is never dereferenced
//   assert-failed     a tt.assert with failing lanes
//   undefined-value   a masked-off lane of a tt.load without `other` that reaches a use
//   int32-overflow    i32 addi/subi/muli/shli whose exact result does not fit, reaching an address
//                     (reported at the arithmetic, even if the wrapped address is inside a buffer)
//   division-by-zero  an integer div/rem lane with a zero divisor that reaches a use
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

#include "tilescope/analysis/analysis.h"
#include "tilescope/analysis/finding.h"
#include "tilescope/exec/events.h"
#include "tilescope/ir/ir.h"

namespace tilescope::analysis {

struct SanitizerOptions {
  /// Stop the launch at the first finding (LaunchContext::request_stop: Engine::launch returns with
  /// LaunchStats::stopped); only the first event's findings are kept.
  bool abort_on_first = false;
  bool poison = true;  // undefined-value, int32-overflow, division-by-zero
  int max_first = 5;   // how many program ids / lanes to keep
};

class Sanitizer : public Analysis {
 public:
  /// `module` must outlive the Sanitizer. One Sanitizer may observe many launches of the module's
  /// kernels, one at a time; call finish() after each launch.
  explicit Sanitizer(const ir::Module& module, bool abort_on_first = false);
  Sanitizer(const ir::Module& module, const SanitizerOptions& opts);
  ~Sanitizer() override;

  /// The event kinds it subscribes to (kOpResult only when the poison analyses have something to watch
  /// in this module; kProgram always: the per-program state counts each program once per site).
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
  /// Bytes held for the findings of the launch being observed (until finish()): one record per site
  /// (counts, the first few program ids and lanes, the last program id, offset and address ranges)
  /// and, per program state, a flag per site that counts each program once there. It grows with the
  /// number of sites and of concurrently running programs, never with the grid (issue 8, item 4).
  /// Shadow lanes of the poison analyses are not included. Call it between launches (or after one
  /// and before finish()), not while programs run.
  size_t retained_bytes() const;

  /// Analysis: finish() and append this launch's findings to `out`.
  void collect(const LaunchInfo& info, std::vector<Finding>& out) override;
  /// {"watched_ops": N, "tracked_values": M}
  nlohmann::json statistics() const override;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tilescope::analysis
