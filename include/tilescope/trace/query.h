// tilescope/trace: what the visualizer (and the assistant's context builder) asks of a trace, as JSON.
//
// Each answer reads only what it returns (indexed queries, no whole-file loads), so a large trace opens
// at once. Thread-safe: calls are serialized on one read-only connection. Element offsets are in units
// of the argument's dtype (docs/trace-format.md); program ids are [x, y, z].
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tilescope::trace {

class Query {
 public:
  /// Open `path` read-only; the same errors as Reader (a missing file, not a trace, another version,
  /// corrupted), naming the file.
  explicit Query(const std::string& path);
  ~Query();
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;

  /// {"file": the file name (no directories), "version", "launches", "kernels", "budget", "used"}.
  nlohmann::json session() const;
  /// Every launch, in recording order: {"id", "name", "kernel", "grid": [x, y, z], "programs",
  /// "seconds", "started", "findings", "kinds": {kind: count}, "error", "detail_stride", "dropped"}.
  nlohmann::json launches() const;
  /// One launch: the row above plus "args" (the record's, with "index" = TTIR argument index),
  /// "specialization", "stack", "sites" (each with its "stats" when it ran), "findings" (report
  /// JSON), "reports", "sources" ([{"id", "path"}]), "kernel_id". Throws NotFound.
  nlohmann::json launch(int64_t id) const;
  /// {"detail_stride": the sample of programs with recorded detail (docs/trace-format.md: those whose
  /// linear id is a multiple of it; 0: none), "findings": per program id of a finding ("x,y,z"), the
  /// finding indexes that name it}; with_bytes also "programs": [{"pid", "accesses", "bytes"}] for the
  /// programs with detail (this decodes every recorded access of the launch); with_times also
  /// "times_ns": every program's wall time in nanoseconds by linear id x + gx * (y + gy * z), or null
  /// when the trace has none for the launch (dropped by the budget, a grid too large, an older trace).
  nlohmann::json programs(int64_t launch, bool with_bytes = false, bool with_times = false) const;
  /// Program `pid`'s recorded accesses and loops: {"sampled": bool, "accesses": [{"site", "seq",
  /// "arg", "kind", "lanes", "active", "oob", "runs": [[first, count], ...] (in-bounds element
  /// offsets), "oob_runs" (out-of-bounds ones)}], "loops": [{"site",
  /// "executions", "trips"}]}. "sampled" false: the budget kept no detail for this program.
  nlohmann::json program(int64_t launch, const std::array<int64_t, 3>& pid) const;
  /// Per-element load / store counts of argument `arg` over every program, run-length encoded as
  /// stored: {"elements", "loads": [[count, repeat], ...], "stores": [...]}. Throws NotFound for an
  /// argument without counts (not a buffer, or too large to count).
  nlohmann::json element_counts(int64_t launch, int arg) const;
  /// The recorded (sampled) accesses whose runs contain `element` of argument `arg`: {"accesses":
  /// [{"pid", "site", "seq", "kind"}]} (at most `limit`, "more": true when there were more).
  nlohmann::json element_accesses(int64_t launch, int arg, int64_t element, int limit = 256) const;
  /// Argument `arg`'s bytes before or after the launch ("before" / "after"); NotFound when not stored.
  std::string contents(int64_t launch, int arg, const std::string& phase) const;
  /// What program `pid` computed at op `sites` of launch `launch` (operands and results of each
  /// execution), by running the launch again from the trace: trace::capture_values. Answers are kept
  /// for the latest requests (the same request again costs nothing). tilescope::Error when the launch
  /// cannot be replayed (its inputs were dropped by the budget, pointers made from integers).
  nlohmann::json values(int64_t launch, const std::array<int64_t, 3>& pid,
                        const std::vector<int>& sites) const;
  /// A source file's path and text: {"id", "path", "content"}.
  nlohmann::json source(int64_t id) const;
  /// A kernel's TTIR: {"id", "name", "ttir_file", "ttir"}.
  nlohmann::json kernel(int64_t id) const;

  /// What the trace does not hold (an unknown launch, argument, source...).
  class NotFound : public std::runtime_error {
   public:
    using std::runtime_error::runtime_error;
  };

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tilescope::trace
