// tilescope/analysis: findings, what every analysis reports, and the table of finding kinds.
//
// A finding says what a user needs to fix the bug without another tool (ARCHITECTURE "Findings"): the
// kind, the kernel, where it is reported (Python file:line:col, source line, variable, TTIR op), the
// cause, the programs and lanes involved (counts and the first few), the buffer and offsets, and the
// Python stack of the launch. Writers: report.h (text, JSON schema in the README, SARIF).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
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
  wild_pointer,
  data_race,
  intra_program_race,
  uninitialized_read,
};

inline constexpr int kNumKinds = static_cast<int>(Kind::uninitialized_read) + 1;

/// One row of the table of finding kinds (finding.cpp; a static_assert checks it covers the enum).
struct KindInfo {
  Kind kind;
  const char* name;         // the JSON / SARIF spelling ("out-of-bounds-load", ...)
  const char* description;  // one line (SARIF rule text)
};
const KindInfo& kind_info(Kind k);
inline const char* kind_name(Kind k) { return kind_info(k).name; }
inline const char* kind_description(Kind k) { return kind_info(k).description; }
/// The kind spelled `name` in JSON, or nullopt.
std::optional<Kind> kind_from_name(std::string_view name);

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
  // Programs: a count and a few ids, never a list of every program, so a finding takes the same memory
  // whatever the grid. A program counts once per finding however often it misbehaves at the site.
  int64_t programs = 0;                         // distinct program instances (summed over merged launches)
  std::vector<exec::ProgramId> first_programs;  // the first few, smallest first in (z, y, x) order
  exec::ProgramId last_program{0, 0, 0};        // the greatest in (z, y, x) order (when programs > 0)
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
  std::string message;  // assert-failed: the assert's message
  // uninitialized-read: where the program allocated the memory (op: the call, "torch.empty"; file,
  // line and source_line; no TTIR position).
  std::optional<OpSite> allocation;
  std::vector<std::string> launch_stack;  // Python stack of the launch, "file:line in func", innermost last
  // Launches folded into this finding by report::merge (1 for one launch), and the distinct launch
  // stacks among them, first seen first (at most kMaxLaunchStacks; empty: launch_stack alone).
  int64_t launches = 1;
  std::vector<std::vector<std::string>> launch_stacks;
  std::string summary;  // one line: what happened (summarize)
  // Races (data-race, intra-program-race; analysis/races.h). `site` is the first access and `other` the
  // second, in program-id order (x fastest; the same program: in program order); `first_programs`,
  // `programs` and `first_lanes` describe the first side, `other_*` the second. `race`: "RAW", "WAR" or
  // "WAW" (what the second access does after the first), or "same-store" (lanes of one store write one
  // address with different values).
  std::optional<OpSite> other;
  std::string race;
  int64_t other_programs = 0;
  std::vector<exec::ProgramId> other_first_programs;
  std::vector<int64_t> other_first_lanes;
  std::string hint;  // one line: how such bugs are usually fixed ("" when the kind has none)
  /// Every program of the finding, when the analysis was asked for it (Analysis::keep_evidence: the
  /// trace recorder asks, and stores it as docs/trace-format.md's `finding_programs`), so a tool can
  /// show all of them, not only `first_programs`. Not written by the JSON, text or SARIF reports.
  struct Evidence {
    exec::ProgramId pid{0, 0, 0};
    int side = 0;      // 0: `site` (and `first_programs`); 1: `other` (races' second access)
    int64_t seq = -1;  // uninitialized-read: the n-th execution of the op in that program (0-based); -1: any
    /// (first, count) element offsets into `buffer`, in the buffer's dtype. uninitialized-read: the
    /// elements that execution read before anything wrote them, in lane order; races: the elements at
    /// which this program's access (of its side) raced with the other side's, over all its executions,
    /// ascending.
    std::vector<int64_t> runs;
  };
  std::vector<Evidence> evidence;  // uninit: by program, then seq; races: side 0, then 1, by linear id
};

inline constexpr size_t kMaxLaunchStacks = 16;

/// The one-line summary of `f` from its fields: "out-of-bounds store to 'out_ptr' (1000 elements):
/// element offsets 1000..1099 (up to 100 elements past the end); 100 lanes in 2 programs", with
/// " over N launches" when f.launches > 1.
std::string summarize(const Finding& f);

/// The launch findings come from (filled in by the runner: Finding::kernel and launch_stack).
struct LaunchInfo {
  std::string kernel;
  std::vector<std::string> stack;  // Python launch stack, innermost last
};

/// Builds OpSites for ops of one module. Not thread-safe (call it from one thread, e.g. collect()).
class SiteMaker {
 public:
  explicit SiteMaker(const ir::Module& m) : m_(m) {}
  /// `op`'s TTIR position, Python file:line:col, variable, source line and inlined-from chain (frames
  /// inside triton/language and triton/runtime are left out).
  OpSite of(const ir::Op* op);
  /// Line `line` (1-based) of `file` without its newline; "" when the file or line cannot be read.
  std::string source_line(const std::string& file, int line);

 private:
  const ir::Module& m_;
  std::map<std::string, std::vector<std::string>> files_;  // file -> lines ("" when unreadable)
};

}  // namespace tilescope::analysis
