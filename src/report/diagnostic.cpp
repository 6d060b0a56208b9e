// Diagnostics (tilescope::Error's structured form) as terminal text and JSON.
#include <fmt/format.h>

#include "tilescope/report/report.h"

namespace tilescope::report {

std::string diagnostic_to_text(const Diagnostic& d, bool color) {
  const char* sev = severity_name(d.severity);
  std::string head = color ? fmt::format("\x1b[1;31m{}:\x1b[0m", sev) : fmt::format("{}:", sev);
  std::string out = fmt::format("{} {}\n", head, d.str());
  for (const std::string& n : d.notes) out += fmt::format("  = note: {}\n", n);
  return out;
}

nlohmann::json diagnostic_to_json(const Diagnostic& d) {
  nlohmann::json j = {
      {"severity", severity_name(d.severity)}, {"message", d.message}, {"op", d.op}, {"notes", d.notes}};
  j["ttir"] = d.ttir_file.empty()
                  ? nlohmann::json(nullptr)
                  : nlohmann::json{{"file", d.ttir_file}, {"line", d.ttir.line}, {"col", d.ttir.col}};
  j["python"] = d.python.known() ? nlohmann::json{{"file", d.python.file},
                                                  {"line", d.python.line},
                                                  {"col", d.python.col},
                                                  {"var", d.python.var}}
                                 : nlohmann::json(nullptr);
  return j;
}

}  // namespace tilescope::report
