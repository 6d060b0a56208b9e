// tilescope/assist: what the LLM assistant is told about a launch, built from the trace.
//
// The context is one JSON object whose items come in priority order:
//   1. "findings": every finding of the launch, with its Python source line, its TTIR op line, the
//      programs, lanes, element offsets and the hint (the evidence the model must cite);
//   2. "selected": the op (site) and program the user selected, with that op's recorded accesses
//      in that program; always kept, whatever the budget;
//   3. "kernel_source": the Python lines of the kernel (from the first to the last op's line);
//   4. "launch": kernel name, grid, arguments (dtype, shape, strides), specialization;
//   5. "accesses": per memory op site, executions, lanes, active and out-of-bounds lanes, bytes;
//   6. "values": a compact compute trace: for the selected program, each finding's op and the
//      selected op as the program computed them (shape, min, max, mean, NaN / inf counts, first
//      elements), from running the launch again from the trace; with no finding and no op selected,
//      its first 8 loads and stores (what a wrong-values bug shows in);
//   7. "profile": the profiler's report for the launch, when the trace has one.
// Each item carries its "id" ("op 24" for site 24) so that answers can cite it.
//
// Budget: tokens estimated as ceil(characters / 3) of the compact JSON (a documented estimate: JSON's
// numbers and punctuation take about 2.7 characters a token with SmolLM2's and Llama's tokenizers; the
// assistant's server is not asked). Past the budget, items are dropped or summarised whole, lowest
// priority first: the profile, then values, accesses, launch arguments past the first 8, kernel
// source past 60 lines, findings past the first 5 (summarised to kind, line and summary); "selected"
// is never dropped. The result is always valid JSON; "omitted" lists what was dropped.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "tilescope/trace/query.h"

namespace tilescope::assist {

struct Selection {
  int64_t launch = 0;                         // 0: the first launch with findings, else the first
  std::optional<std::array<int64_t, 3>> pid;  // none: the first finding's first program, else (0, 0, 0)
  std::optional<int> site;                    // none: the first finding's op, else none selected
};

/// Tokens of `text` by the estimate above.
int64_t estimate_tokens(const std::string& text);

/// The context for `sel` within `token_budget` tokens (at least the "selected" item, even past it).
/// Throws tilescope::Error / trace::Query::NotFound for a launch or program the trace does not have.
/// Keys in priority order (an ordered_json).
nlohmann::ordered_json build_context(const trace::Query& q, const Selection& sel,
                                     int64_t token_budget = 6000);

}  // namespace tilescope::assist
