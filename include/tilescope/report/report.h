// tilescope/report: the sanitizer's findings as terminal text, JSON and SARIF 2.1.0.
//
// The JSON form is the interchange format: the Python front door collects the findings of every
// launch in a process as one JSON list and renders text or SARIF from it (from_json reads it back).
// Schema: README "Findings JSON" (kept in sync with finding_to_json below).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tilescope/analysis/finding.h"
#include "tilescope/ir/diag.h"

namespace tilescope::report {

/// Grouped, human-readable report: one block per finding with the Python source line and a caret,
/// the TTIR op, programs, lanes, buffer and offsets, the cause (poison kinds) and the launch stack.
/// `color`: ANSI colours (for a tty). Empty string when there are no findings.
std::string to_text(const std::vector<analysis::Finding>& findings, bool color);

/// One line: "N findings (2 out-of-bounds-load, 1 undefined-value)" or "no findings".
std::string summary_line(const std::vector<analysis::Finding>& findings);

/// A JSON array with one object per finding (schema in the README).
nlohmann::json to_json(const std::vector<analysis::Finding>& findings);
nlohmann::json finding_to_json(const analysis::Finding& f);

/// Read what to_json wrote (unknown fields are ignored; missing ones keep their defaults).
/// Throws tilescope::Error when `j` is not an array of finding objects.
std::vector<analysis::Finding> from_json(const nlohmann::json& j);

/// A SARIF 2.1.0 log: one run of the tool "tilescope", one rule per kind, one result per finding with
/// the Python file:line:col as its physicalLocation (columns 1-based, as SARIF counts) and the TTIR op
/// and the cause as related locations.
nlohmann::json to_sarif(const std::vector<analysis::Finding>& findings);

/// Group findings across launches and processes: the same kind at the same site of the same kernel (the
/// same buffer for out-of-bounds kinds, the same cause op for poison kinds) becomes one finding with
/// summed counts (at most `keep` first program ids and lanes). Used by `tilescope sanitize` (every child
/// process) and the Python module (every launch of one process).
std::vector<analysis::Finding> merge(const std::vector<analysis::Finding>& findings, size_t keep = 5);

/// A diagnostic (tilescope::Error) as text: "error: file.ttir:12:7: message (kernel.py:33:9)", then one
/// "  = note: ..." line per note. `color`: ANSI colours.
std::string diagnostic_to_text(const Diagnostic& d, bool color);
/// {"severity", "message", "op", "notes", "ttir": {file, line, col} | null, "python": {file, line, col, var}
/// | null}
nlohmann::json diagnostic_to_json(const Diagnostic& d);

}  // namespace tilescope::report
