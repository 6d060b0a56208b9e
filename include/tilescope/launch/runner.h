// tilescope/launch: the one path that runs a launch record on the engine under analyses.
//
// The CLI (`tilescope run`), the Python module (every captured Triton launch) and, later, the server,
// trace replay, the kernel generator and NKI all call run_launch: it reads and plans the TTIR once per
// distinct text (a process-wide cache), binds the record (launch::bind), makes the requested analyses
// from the registry (analysis/analysis.h), runs the grid, and returns the findings, the tt.print text
// and the statistics.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "tilescope/analysis/analysis.h"
#include "tilescope/exec/engine.h"
#include "tilescope/ir/ir.h"
#include "tilescope/launch/record.h"

namespace tilescope::launch {

/// A TTIR text read, verified and planned once; launches of it share the plan.
class Kernel {
 public:
  /// Read and verify `ttir` (throws tilescope::Error with a located message).
  Kernel(std::string ttir, const std::string& filename);
  const std::string& text() const { return text_; }
  const ir::Module& module() const { return module_; }
  /// The public tt.func `name` ("" = the first public one); throws tilescope::Error.
  const ir::Function& function(const std::string& name) const;

 private:
  friend struct Runner;
  std::string text_;
  ir::Module module_;
  std::unique_ptr<exec::Engine> engine_;
  std::mutex mu_;  // one launch of this kernel at a time (front doors may launch from several threads)
};

/// The kernel for `ttir`, from the process-wide cache (read, verified and planned on first use).
std::shared_ptr<Kernel> compile(const std::string& ttir, const std::string& filename);

/// An analysis to run, by registry name, with its options (JSON; null = defaults).
struct AnalysisRequest {
  std::string name;
  analysis::Options options;
};

struct RunOptions {
  std::vector<AnalysisRequest> analyses;  // none: just run the kernel
  int threads = 0;                        // 0: the engine's default (exec::LaunchOptions::threads)
  /// Set it (e.g. on SIGINT) to stop the launch, also inside a running program's loops; run_launch
  /// then throws exec::Interrupted.
  const std::atomic<bool>* cancel = nullptr;
  /// Operations one program may run before the launch fails (exec::LaunchOptions::max_steps); 0: none.
  int64_t max_steps = exec::kDefaultMaxSteps;
  int64_t max_memory = 0;  // bytes of program frames; 0: exec::default_max_memory()
  /// Where tt.print text goes as programs print it (calls are serialized). Null: RunResult::prints.
  std::function<void(std::string_view)> print;
  /// More observers for the launch, after the analyses (e.g. the trace recorder, trace/trace.h); not
  /// owned. Their events are the analyses' events.
  std::vector<exec::Observer*> observers;
  /// Ask every analysis for Finding::evidence (Analysis::keep_evidence): the trace recorder does.
  bool evidence = false;
};

struct RunResult {
  exec::LaunchStats stats;                  // stats.stopped: an analysis stopped the launch early
  std::vector<analysis::Finding> findings;  // every analysis's, in request order
  std::string prints;                       // tt.print text, when RunOptions::print is null
  std::string failed_asserts;  // one line per failed tt.assert event (for front doors that run no analysis)
  nlohmann::json statistics = nlohmann::json::object();  // per analysis name
  nlohmann::json reports = nlohmann::json::object();     // per analysis name, those with a report
  double seconds = 0;                                    // wall time of the grid
};

/// The analyses of a launch: made from the registry for `module` as `options` asks (with evidence when
/// asked), told what happens through observers(), and collected into a RunResult after the launch. The
/// one analysis lifecycle of every front door that runs programs: run_launch for TTIR, nki::Kernel::run
/// for NKI kernels. Throws tilescope::Error for an unknown analysis or bad options.
class Analyses {
 public:
  Analyses(const ir::Module& module, const RunOptions& options);
  ~Analyses();
  Analyses(const Analyses&) = delete;
  Analyses& operator=(const Analyses&) = delete;
  /// The analyses, then options.observers, in call order.
  const std::vector<exec::Observer*>& observers() const { return observers_; }
  /// After the launch: every analysis's findings (request order), statistics and reports into `r`.
  void collect(const analysis::LaunchInfo& info, RunResult& r);

 private:
  const RunOptions& options_;
  std::vector<std::unique_ptr<analysis::Analysis>> made_;
  std::vector<exec::Observer*> observers_;
};

/// Run `record` (its TTIR from the cache). Throws tilescope::Error for a bad record, TTIR or launch.
RunResult run_launch(const LaunchRecord& record, const RunOptions& options);
/// Run `record` on `kernel` (record.ttir may be empty: the kernel's text is used).
RunResult run_launch(Kernel& kernel, const LaunchRecord& record, const RunOptions& options);

}  // namespace tilescope::launch
