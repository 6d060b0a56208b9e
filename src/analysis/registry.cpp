// The registry of analyses (see analysis.h): one row per analysis, with its options read from JSON.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iterator>
#include <string>

#include "tilescope/analysis/analysis.h"
#include "tilescope/analysis/profile.h"
#include "tilescope/analysis/races.h"
#include "tilescope/analysis/sanitizer.h"
#include "tilescope/analysis/uninit.h"
#include "tilescope/ir/diag.h"

namespace tilescope::analysis {

namespace {

/// Reads an analysis's JSON options, refusing unknown keys and wrong types.
class OptionReader {
 public:
  OptionReader(std::string_view analysis, const Options& o) : analysis_(analysis), o_(o) {
    if (!o_.is_null() && !o_.is_object())
      throw Error(fmt::format("analysis '{}': options must be a JSON object", analysis_));
  }
  void read(const char* key, bool& v) {
    if (const Options* x = find(key)) {
      if (!x->is_boolean()) fail(key, "a boolean");
      v = x->get<bool>();
    }
  }
  void read(const char* key, std::string& v) {
    if (const Options* x = find(key)) {
      if (!x->is_string()) fail(key, "a string");
      v = x->get<std::string>();
    }
  }
  void read(const char* key, int& v, int lo, int hi) {
    if (const Options* x = find(key)) {
      if (!x->is_number_integer() || x->get<int64_t>() < lo || x->get<int64_t>() > hi)
        fail(key, fmt::format("an integer from {} to {}", lo, hi));
      v = x->get<int>();
    }
  }
  /// Fails when `o` has a key that was never read.
  void done() const {
    if (!o_.is_object()) return;
    for (auto& [k, _] : o_.items())
      if (std::find(known_.begin(), known_.end(), k) == known_.end())
        throw Error(fmt::format("analysis '{}': unknown option '{}' (it has: {})", analysis_, k,
                                fmt::join(known_, ", ")));
  }

 private:
  const Options* find(const char* key) {
    known_.emplace_back(key);
    if (!o_.is_object()) return nullptr;
    auto it = o_.find(key);
    return it == o_.end() ? nullptr : &*it;
  }
  [[noreturn]] void fail(const char* key, const std::string& what) const {
    throw Error(fmt::format("analysis '{}': option '{}' must be {}", analysis_, key, what));
  }
  std::string_view analysis_;
  const Options& o_;
  std::vector<std::string> known_;
};

std::unique_ptr<Analysis> make_sanitizer(const ir::Module& m, const Options& options) {
  SanitizerOptions so;
  OptionReader r("sanitizer", options);
  r.read("abort_on_first", so.abort_on_first);
  r.read("poison", so.poison);
  r.read("max_first", so.max_first, 1, 1000);
  r.done();
  return std::make_unique<Sanitizer>(m, so);
}

std::unique_ptr<Analysis> make_races(const ir::Module& m, const Options& options) {
  RacesOptions ro;
  OptionReader r("races", options);
  r.read("intra", ro.intra);
  r.read("max_first", ro.max_first, 1, 1000);
  r.read("max_shadow_mib", ro.max_shadow_mib, 1, 1 << 24);
  r.done();
  return std::make_unique<Races>(m, ro);
}

std::unique_ptr<Analysis> make_uninit(const ir::Module& m, const Options& options) {
  UninitOptions uo;
  OptionReader r("uninit", options);
  r.read("max_first", uo.max_first, 1, 1000);
  r.done();
  return std::make_unique<UninitAnalysis>(m, uo);
}

std::unique_ptr<Analysis> make_profile(const ir::Module& m, const Options& options) {
  ProfileOptions po;
  OptionReader r("profile", options);
  r.read("gpu", po.gpu);
  r.read("num_warps", po.num_warps, 1, 32);
  r.done();
  try {
    find_gpu(po.gpu);
  } catch (const Error& e) {
    throw Error(fmt::format("analysis 'profile': option 'gpu': {}", e.what()));
  }
  return std::make_unique<Profile>(m, po);
}

constexpr AnalysisDef kAnalyses[] = {
    {"sanitizer",
     "out-of-bounds and null accesses, failed asserts, undefined values, int32 overflow into addresses, "
     "division by zero",
     make_sanitizer},
    {"races", "data races between programs and races between lanes of one program, through global memory",
     make_races},
    {"uninit",
     "reads of memory allocated uninitialized (torch.empty, numpy.empty) that nothing has written "
     "(allocations tracked by the Python front door)",
     make_uninit},
    {"profile",
     "bytes, mask efficiency, 32-byte sectors and coalescing, distinct bytes, dot FLOPs by precision, op "
     "counts and loop trips per op and Python line, with a roofline estimate for a GPU (a report, no "
     "findings)",
     make_profile},
};

}  // namespace

std::span<const AnalysisDef> analyses() { return kAnalyses; }

const AnalysisDef& find_analysis(std::string_view name) {
  std::vector<std::string_view> names;
  for (const AnalysisDef& d : kAnalyses) {
    if (d.name == name) return d;
    names.push_back(d.name);
  }
  throw Error(fmt::format("no analysis named '{}' (known: {})", name, fmt::join(names, ", ")));
}

}  // namespace tilescope::analysis
