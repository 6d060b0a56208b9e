// tilescope/trace: the trace store, one SQLite file per run recording every launch, and its reader.
//
// A Writer runs launches through launch::run_launch with a recorder on the observer seam and writes,
// per launch and in one transaction (a crash loses at most the launch in flight): the launch record
// (TTIR text once per distinct kernel text, grid, specialization, arguments, Python stack, timestamps),
// the Python source files involved (deduplicated by content), every op site, per-site aggregates, the
// per-element access counts of every argument, argument contents before and after the launch, per
// memory op and program the element offsets accessed (runs), mask counts and out-of-bounds lanes, per
// loop and program the trip counts, the findings (report JSON) and launch::RunResult::reports. Several
// processes of one run write one file (SQLite's locking, with a busy timeout).
//
// The size budget (default 256 MiB per trace file, stored in the file) bounds what is written; what
// does not fit is dropped by the documented rule and said in the launch's `dropped` column. The schema,
// its version and the budget rule: docs/trace-format.md.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tilescope/launch/record.h"
#include "tilescope/launch/runner.h"

namespace tilescope::trace {

/// The schema version this tilescope writes and reads (docs/trace-format.md).
inline constexpr int kFormatVersion = 4;
/// Bytes of payload a trace file may hold unless told otherwise.
inline constexpr int64_t kDefaultBudget = int64_t{256} << 20;

/// A trace file open for recording launches. run() may be called from several threads (their launches
/// run concurrently; their writes take turns).
class Writer {
 public:
  /// Open the trace at `path` for writing, creating it with the schema and `budget` (bytes of payload
  /// for the whole file) when it does not exist; an existing trace keeps the budget it was made with.
  /// Throws tilescope::Error naming the file when it cannot be opened or created, is not an SQLite
  /// database or not a tilescope trace, has another format version, or is corrupted.
  explicit Writer(const std::string& path, int64_t budget = kDefaultBudget);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  /// launch::run_launch(kernel, record, options) with the launch recorded. A launch that throws is
  /// recorded with its error, then the exception propagates. When the trace cannot be written (a full
  /// disk), the launch has run: the error (naming the file) goes to `*write_error` when given and the
  /// result is returned; else it is thrown as tilescope::Error.
  launch::RunResult run(launch::Kernel& kernel, const launch::LaunchRecord& record,
                        const launch::RunOptions& options, std::string* write_error = nullptr);

  /// What the trace stores of the program a launch runs: its module (every op a site), the function,
  /// the text shown as its IR (TTIR, or an NKI kernel's instruction listing, nki/nki.h) and its language.
  struct Program {
    const ir::Module& module;
    const ir::Function& function;
    const std::string& text;
    std::string_view language;  // "ttir" (replayable) or "nki"
  };
  using RunFn = std::function<launch::RunResult(const launch::RunOptions&)>;
  /// The same for a launch that `run` performs (an NKI kernel's): `run` gets `options` with the recorder
  /// among its observers, and must tell it what the launch does through them.
  launch::RunResult run(const Program& program, const launch::LaunchRecord& record,
                        const launch::RunOptions& options, const RunFn& run,
                        std::string* write_error = nullptr);
  const std::string& path() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Create a fresh trace at `path` (a trace already there is replaced; any other existing file is an
/// error, it is never overwritten) with `budget` bytes of payload. For the front door of a run, before
/// its processes open it with Writer.
void create(const std::string& path, int64_t budget = kDefaultBudget);

/// One recorded launch, as replay needs it.
// NOLINTNEXTLINE(bugprone-exception-escape): nlohmann::json's destructor may allocate
struct StoredLaunch {
  int64_t id = 0;
  launch::LaunchRecord record;  // with the TTIR text; buffer arguments' `host` are null
  std::string language;         // the kernel's: "ttir", or "nki" (not replayable: its Python made it)
  std::vector<launch::AnalysisRequest> analyses;
  nlohmann::json findings;  // report JSON (a list), as recorded
  std::string error;        // the launch's error when it failed ("" when it ran)
  /// Per argument (record.args order): its bytes before the launch, when stored (buffers only).
  std::vector<std::optional<std::vector<std::byte>>> before;
  /// Per argument: the host address it had in the recorded process (to rebuild aliasing); 0 for scalars.
  std::vector<uint64_t> host_addr;
  nlohmann::json dropped;  // what the budget dropped from this launch (docs/trace-format.md)
};

/// The memory of a recorded launch rebuilt from the trace: every buffer argument of `s.record` points
/// into blocks this object owns, filled with its contents before the launch; arguments that
/// overlapped in the recording process overlap again. Throws tilescope::Error naming `where` when the
/// kernel makes pointers from integers, or when the budget dropped a buffer's contents.
class ReplayMemory {
 public:
  ReplayMemory(StoredLaunch& s, const std::string& where);

 private:
  std::vector<std::vector<std::byte>> blocks_;
};

/// A trace file open read-only.
class Reader {
 public:
  /// Throws tilescope::Error naming the file: missing, not an SQLite database, not a tilescope trace,
  /// another format version, truncated or corrupted (an integrity check runs on open).
  explicit Reader(const std::string& path);
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  /// Launch ids in recording order (1, 2, ... in the order their transactions committed).
  std::vector<int64_t> launches() const;
  /// Launch `id`; throws tilescope::Error naming the file and the ids it has.
  StoredLaunch launch(int64_t id) const;
  /// What each recording process (by its pid) wrote: its launches and their findings (report JSON
  /// objects, in launch order). `tilescope sanitize` counts from this the launches of processes that
  /// ended without reporting to it (os._exit, a crash).
  struct Process {
    int64_t launches = 0;
    nlohmann::json findings = nlohmann::json::array();
  };
  std::map<int64_t, Process> processes() const;
  /// The summary `tilescope show` prints: launches, kernels, findings, top source lines by bytes.
  std::string summary(int top_lines = 10) const;
  const std::string& path() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The values program `pid` computed at op `sites` of launch `launch_id` (site numbers as in the
/// trace's `sites` table), from running the launch again on the engine from the trace (ReplayMemory;
/// no analyses). JSON: {"pid", "sites": [{"site", "op", "executions": [{"seq", "operands": [V],
/// "results": [V]}], "more": bool}]} with V = {"type" (TTIR), "shape", "dtype", "values" (row-major;
/// floats as numbers, "nan" / "inf" / "-inf" as strings; pointers as null), "truncated"}. At most
/// `max_executions` executions per site and `max_elements` elements per value are kept. Throws
/// tilescope::Error for a launch that cannot be replayed (ReplayMemory) or a site the kernel lacks.
nlohmann::json capture_values(const Reader& reader, int64_t launch_id, const std::array<int64_t, 3>& pid,
                              const std::vector<int>& sites, int max_executions = 256,
                              int64_t max_elements = 16384);

}  // namespace tilescope::trace
