// tilescope/ir: read TTIR text (MLIR as Triton 3.4+ prints it) into a Module, and verify it.
//
// Accepts custom and generic op forms, named and numbered SSA values, multi-result values
// (`%q:2`, `%q#1`), blocks with arguments, regions, attribute dictionaries and properties, `#loc`
// aliases before and after the module (forward references allowed), and name / call-site / fused
// locations (reference §3). Errors: tilescope::Error with "file:line:col: message"; never a crash.
#pragma once

#include <string>
#include <string_view>

#include "tilescope/ir/diag.h"
#include "tilescope/ir/ir.h"

namespace tilescope::ir {

/// Parse `text`; `filename` is used in diagnostics and Module::filename. Throws tilescope::Error.
Module read(std::string_view text, const std::string& filename);
/// Read a file from disk (throws tilescope::Error if it cannot be opened).
Module read_file(const std::string& path);
/// Check types and shapes of every op (each op's verifier in the op table). Throws tilescope::Error.
void verify(const Module& m);

}  // namespace tilescope::ir
