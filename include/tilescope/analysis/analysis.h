// tilescope/analysis: what an analysis is, and the registry of analyses by name.
//
// An analysis observes launches on the engine's observer seam (exec/events.h) and, after each launch,
// hands over that launch's findings. Every front door (the CLI, the Python module, later the server,
// the generator and NKI) runs analyses through one path, launch::run_launch (launch/runner.h), by
// registry name with JSON options, so adding an analysis is one row in the registry.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string_view>
#include <vector>

#include "tilescope/analysis/finding.h"
#include "tilescope/exec/events.h"
#include "tilescope/ir/ir.h"

namespace tilescope::analysis {

/// An analysis's options: a JSON object (empty or null: the defaults). Unknown keys and values of the
/// wrong type are errors that name the analysis and the option.
using Options = nlohmann::json;

class Analysis : public exec::Observer {
 public:
  /// After a launch: append that launch's findings (grouped by site, ordered by TTIR position) to
  /// `out` and get ready for the next launch.
  virtual void collect(const LaunchInfo& info, std::vector<Finding>& out) = 0;
  /// Counters for reports and benchmarks (e.g. {"watched_ops": 12}).
  virtual nlohmann::json statistics() const { return nlohmann::json::object(); }
  /// After collect: this launch's report, for analyses that measure rather than find (the profiler's
  /// counts; the trace stores it per launch). Null: the analysis has none.
  virtual nlohmann::json report() const { return nullptr; }
  /// From the next launch on, fill Finding::evidence (every program of each finding; memory grows with
  /// the programs involved, so only the trace recorder asks). Analyses without per-program evidence, or
  /// whose programs the trace derives itself (the sanitizer's out-of-bounds lanes are in its accesses),
  /// ignore it.
  virtual void keep_evidence() {}
};

/// One row of the registry.
struct AnalysisDef {
  std::string_view name;         // what front doors call it: "sanitizer"
  std::string_view description;  // one line, for --help and the docs
  /// Make one for launches of kernels of `module` (which must outlive it). Throws tilescope::Error for
  /// bad options.
  std::unique_ptr<Analysis> (*make)(const ir::Module& module, const Options& options);
};

/// Every analysis, in registry order.
std::span<const AnalysisDef> analyses();
/// The analysis called `name`; throws tilescope::Error listing the known names.
const AnalysisDef& find_analysis(std::string_view name);

}  // namespace tilescope::analysis
