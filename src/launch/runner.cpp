// run_launch: the one path from a launch record to findings (see runner.h).
#include "tilescope/launch/runner.h"

#include <fmt/format.h>

#include <chrono>
#include <unordered_map>

#include "tilescope/ir/diag.h"
#include "tilescope/ir/reader.h"

namespace tilescope::launch {

Kernel::Kernel(std::string ttir, const std::string& filename)
    : text_(std::move(ttir)), module_(ir::read(text_, filename)) {
  ir::verify(module_);
  if (!module_.entry()) throw Error(fmt::format("{}: no public tt.func in the TTIR", filename));
  engine_ = std::make_unique<exec::Engine>(module_);
}

const ir::Function& Kernel::function(const std::string& name) const {
  const ir::Function* f = name.empty() ? module_.entry() : module_.find(name);
  if (!f) throw Error(fmt::format("{}: no function named '{}'", module_.filename, name));
  if (!f->is_public)
    throw Error(fmt::format("{}: '{}' is a private helper, not a kernel", module_.filename, name));
  return *f;
}

std::shared_ptr<Kernel> compile(const std::string& ttir, const std::string& filename) {
  // Different specializations can print the same text, and a program launching a kernel again must
  // not read and plan it twice. Kernels stay until the process exits.
  static std::mutex mu;
  static std::unordered_map<size_t, std::vector<std::shared_ptr<Kernel>>> cache;
  const size_t h = std::hash<std::string>{}(ttir);
  {
    std::lock_guard<std::mutex> g(mu);
    for (auto& k : cache[h])
      if (k->text() == ttir) return k;
  }
  auto k = std::make_shared<Kernel>(ttir, filename);
  std::lock_guard<std::mutex> g(mu);
  cache[h].push_back(k);
  return k;
}

namespace {

/// tt.print text and failed-assert lines, to the front door's sink or into the result.
class TextSink : public exec::Observer {
 public:
  TextSink(RunResult& r, const std::function<void(std::string_view)>& print) : r_(r), print_(print) {}
  exec::Subscription on_launch_begin(const exec::LaunchContext&) override {
    return {exec::kPrint | exec::kAssert, {}, {}};
  }
  void on_print(const exec::PrintEvent& e, void*) override {
    std::lock_guard<std::mutex> g(mu_);
    if (print_)
      print_(e.text);
    else
      r_.prints += e.text;
  }
  void on_assert(const exec::AssertEvent& e, void*) override {
    std::lock_guard<std::mutex> g(mu_);
    r_.failed_asserts += fmt::format("{}: program ({}, {}, {}) lane {}: Assertion `{}` failed ({} lanes)\n",
                                     e.op->loc.known() ? e.op->loc.str() : "kernel", e.pid[0], e.pid[1],
                                     e.pid[2], e.first_lane, e.message, e.failed_lanes);
  }

 private:
  RunResult& r_;
  const std::function<void(std::string_view)>& print_;
  std::mutex mu_;
};

}  // namespace

Analyses::Analyses(const ir::Module& module, const RunOptions& options) : options_(options) {
  for (const AnalysisRequest& a : options.analyses)
    made_.push_back(analysis::find_analysis(a.name).make(module, a.options));
  if (options.evidence)
    for (auto& a : made_) a->keep_evidence();
  for (auto& a : made_) observers_.push_back(a.get());
  observers_.insert(observers_.end(), options.observers.begin(), options.observers.end());
}

Analyses::~Analyses() = default;

void Analyses::collect(const analysis::LaunchInfo& info, RunResult& r) {
  for (size_t i = 0; i < made_.size(); ++i) {
    made_[i]->collect(info, r.findings);
    r.statistics[options_.analyses[i].name] = made_[i]->statistics();
    if (nlohmann::json rep = made_[i]->report(); !rep.is_null())
      r.reports[options_.analyses[i].name] = std::move(rep);
  }
}

struct Runner {
  static RunResult run(Kernel& k, const LaunchRecord& rec, const RunOptions& o) {
    const ir::Function& fn = k.function(rec.kernel);
    exec::check_grid(rec.grid);
    Analyses analyses(k.module_, o);
    RunResult r;
    TextSink text(r, o.print);
    exec::LaunchOptions lo;
    lo.grid = rec.grid;
    lo.threads = o.threads;
    lo.cancel = o.cancel;
    lo.max_steps = o.max_steps;
    lo.max_memory = o.max_memory;
    lo.observers = analyses.observers();
    lo.observers.push_back(&text);
    std::lock_guard<std::mutex> g(k.mu_);
    exec::Memory memory;
    std::vector<exec::Arg> args = bind(rec, fn, memory);
    auto t0 = std::chrono::steady_clock::now();
    r.stats = k.engine_->launch(fn.name, args, memory, lo);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    analyses.collect({rec.kernel.empty() ? fn.name : rec.kernel, rec.stack}, r);
    return r;
  }
};

RunResult run_launch(Kernel& kernel, const LaunchRecord& record, const RunOptions& options) {
  return Runner::run(kernel, record, options);
}

RunResult run_launch(const LaunchRecord& record, const RunOptions& options) {
  if (record.ttir.empty()) throw Error("launch record: no TTIR text to run");
  auto k = compile(record.ttir, record.ttir_file.empty() ? "kernel.ttir" : record.ttir_file);
  return Runner::run(*k, record, options);
}

}  // namespace tilescope::launch
