// Helpers shared by the reader tests: where a marker sits in TTIR text, and the error it gives.
#pragma once

#include <stdexcept>
#include <string>

#include "tilescope/ir/reader.h"

namespace tilescope::test {

/// "t.ttir:L:C: " of the first occurrence of `marker` in `text` (computed from the text itself).
inline std::string where(const std::string& text, const std::string& marker) {
  size_t off = text.find(marker);
  if (off == std::string::npos) throw std::runtime_error("marker not found: " + marker);
  int line = 1, col = 1;
  for (size_t i = 0; i < off; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return "t.ttir:" + std::to_string(line) + ":" + std::to_string(col) + ": ";
}

/// The message of reading and verifying `text` as t.ttir, or "(no error)".
inline std::string read_error(const std::string& text) {
  try {
    ir::Module m = ir::read(text, "t.ttir");
    ir::verify(m);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace tilescope::test
