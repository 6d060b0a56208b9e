// The trace recorder: an observer (exec/events.h) that keeps what one launch did for the trace store.
//
// Aggregates cover every program: per op site (executions, lanes, active lanes, out-of-bounds lanes,
// bytes) and per argument the number of loads and stores of each element. Detail (per memory op
// execution and program: the element offsets as runs, mask and out-of-bounds counts; per loop and
// program: trip counts) is kept for the programs of the sample rule of docs/trace-format.md: the
// programs whose linear id is a multiple of the smallest power-of-two stride for which their detail
// fits the cap (none when program 0's alone does not). What is recorded does not depend on the order
// programs run in or on the thread count.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "tilescope/exec/events.h"
#include "tilescope/ir/ir.h"

namespace tilescope::trace {

/// The op sites of `module`: every op, functions in text order, each op before the ops of its regions
/// (a site's number is its index here; docs/trace-format.md, `sites`).
std::vector<const ir::Op*> op_sites(const ir::Module& module);

/// Per op site, over all programs.
struct SiteStats {
  int64_t executions = 0;  // op executions (programs x loop iterations)
  int64_t lanes = 0;       // lanes of those executions
  int64_t active = 0;      // lanes the mask let through
  int64_t oob = 0;         // active lanes outside their buffer
  int64_t bytes = 0;       // bytes moved by active in-bounds lanes
  int64_t stored = 0;      // of those, the bytes of stores and atomics
};

/// One execution of a memory op in one program, for one argument.
struct AccessRow {
  int site = 0;
  int64_t seq = 0;   // the n-th execution of the op in this program (0-based)
  int arg = -1;      // TTIR argument index; -1: lanes in no argument (other allocations, or none in bounds)
  uint8_t kind = 0;  // exec::AccessKind
  int64_t lanes = 0, active = 0, oob = 0;
  std::vector<int64_t> runs;  // (first element offset, count) pairs over active in-bounds lanes in lane order
  /// The same over active lanes outside the argument they were derived from (offsets may be negative or
  /// past its end); lanes of null or wild pointers are in no argument's row.
  std::vector<int64_t> oob_runs;
};

struct LoopRow {
  int site = 0;
  int64_t executions = 0;  // times the loop (scf.for or scf.while) started in this program
  int64_t trips = 0;       // iterations over all of them
};

struct ProgramDetail {
  int64_t linear = 0;  // x + gx * (y + gy * z)
  exec::ProgramId pid{};
  std::vector<AccessRow> accesses;  // in program order
  std::vector<LoopRow> loops;       // by site
  int64_t bytes = 0;                // payload estimate (docs/trace-format.md)
};

/// Payload estimate of one detail row with `runs` int64 values (both run lists).
inline int64_t row_bytes(size_t runs) { return 32 + 8 * static_cast<int64_t>(runs); }

/// Per-element access counts of one argument over every program, for one kind (loads or stores).
/// Programs hand in the element runs they accessed; the counts are kept as those runs (their start and
/// end boundaries) while they are fewer than a quarter of the elements, and as dense counts from then on,
/// so a streaming kernel costs a few bytes per program and a gather at most 4 bytes per element.
/// Thread-safe.
class ElementCounts {
 public:
  struct Run {
    uint32_t start = 0, count = 0;  // elements [start, start + count)
  };
  /// `elements` of the argument's dtype (0: not counted; at most Recorder::kMaxCountedElements).
  void init(int64_t elements);
  int64_t elements() const { return elements_; }
  /// Adds one access of each element of `runs` (each inside [0, elements)).
  void add(const std::vector<Run>& runs);
  /// Run-length form over [0, elements): (count, repeat) pairs, adjacent pairs of equal count merged.
  std::vector<int64_t> rle();

 private:
  void densify();  // under mu_
  std::mutex mu_;
  int64_t elements_ = 0;
  std::vector<uint32_t> starts_, ends_;  // runs mode: boundaries of every run added
  std::vector<uint32_t> dense_;          // dense mode (non-empty): the counts
};

class Recorder : public exec::Observer {
 public:
  /// Sites are every op of `module` in text order (functions, then nested regions); `detail_cap` is the
  /// payload budget for detail (<= 0: no detail).
  Recorder(const ir::Module& module, int64_t detail_cap);

  exec::Subscription on_launch_begin(const exec::LaunchContext& ctx) override;
  void* on_program_begin(exec::ProgramId pid) override;
  void on_program_end(exec::ProgramId pid, void* state) override;
  void on_access(const exec::AccessEvent& e, void* state) override;
  void on_op_begin(const exec::OpEvent& e, void* state) override;

  /// Drop detail by the sample rule until it fits `cap` bytes (used when the budget shrank since the
  /// launch began).
  void fit(int64_t cap);

  const std::vector<const ir::Op*>& sites() const { return sites_; }
  const std::vector<SiteStats>& site_stats() const { return stats_; }
  /// Per TTIR argument: loads / stores per element (in units of the argument's dtype; atomics count
  /// in both); `elements()` 0 for scalars and for buffers over kMaxCountedElements.
  struct Counts {
    ElementCounts loads, stores;
  };
  std::vector<Counts>& counts() { return *counts_; }
  /// Kept detail, sorted by linear program id; `stride()` is the sample stride (0: no detail kept).
  std::vector<std::unique_ptr<ProgramDetail>> take_detail();
  int64_t stride() const { return none_ ? 0 : stride_.load(); }
  int64_t detail_bytes() const { return kept_bytes_; }
  int64_t programs() const { return programs_; }
  /// Per program, by linear id x + gx * (y + gy * z): nanoseconds of wall time from its start to its end
  /// on a worker thread (steady clock; a program that waited on others, e.g. on a lock built with
  /// atomics, counts its wait). Empty for a grid of more than kMaxTimedPrograms programs.
  const std::vector<int64_t>& program_ns() const { return ns_; }
  static constexpr int64_t kMaxTimedPrograms = int64_t{1} << 22;
  /// Whether a store or atomic lane of the launch landed in a buffer whose host memory overlaps
  /// [host, host + bytes).
  bool stored_into(const std::byte* host, uint64_t bytes) const;

  static constexpr int64_t kMaxCountedElements = int64_t{1} << 28;

 private:
  struct Program;
  void keep(std::unique_ptr<ProgramDetail> d);
  void mark_stored(int buffer);  // a store or atomic lane landed in memory buffer `buffer`
  void shrink();

  std::vector<const ir::Op*> sites_;
  std::unordered_map<const ir::Op*, int> site_of_;
  // scf.while trip counts: the op whose executions count its iterations (its probe), per while site.
  struct Probe {
    int site;  // the scf.while's
  };
  std::unordered_map<const ir::Op*, std::vector<Probe>> probes_;
  std::unordered_map<int, bool> while_before_;  // while site -> its probe is in the before region
  std::vector<SiteStats> stats_;
  std::unique_ptr<std::vector<Counts>> counts_;  // (ElementCounts holds a mutex: not movable)
  std::vector<int> arg_of_buffer_;  // memory buffer id -> TTIR argument index (-1: not an argument)
  std::vector<int> elem_bytes_;     // per TTIR argument: its dtype's element size
  std::vector<int> elem_shift_;     // per TTIR argument: log2 of elem_bytes_ (-1: not a power of two)
  std::unique_ptr<std::atomic<bool>[]> stored_;  // per memory buffer id: a store or atomic lane landed
  std::vector<std::pair<uintptr_t, uint64_t>> buffer_host_;  // per memory buffer id: host start, bytes
  std::array<int64_t, 3> grid_{1, 1, 1};
  int64_t programs_ = 0;
  std::vector<int64_t> ns_;  // by linear program id; each program writes only its own element

  std::mutex mu_;
  int64_t cap_;
  std::atomic<int64_t> stride_{1};
  bool none_ = false;
  int64_t kept_bytes_ = 0;
  std::vector<std::unique_ptr<ProgramDetail>> kept_;
};

}  // namespace tilescope::trace
