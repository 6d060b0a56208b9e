// tilescope/ir: diagnostics and located errors for bad input.
//
// Every user-facing error (malformed TTIR, an op we do not run, a bad launch argument) is a
// tilescope::Error carrying a structured Diagnostic: severity, the TTIR position, the op's Python
// location, the message and notes. The report writers render it (report.h: text, JSON); what() is the
// one-line form "file.ttir:12:7: message (kernel.py:33:9)". Assertions are for our own bugs; user
// input never triggers them.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "tilescope/ir/ir.h"

namespace tilescope {

struct Diagnostic {
  enum class Severity : uint8_t { error, warning, note };
  Severity severity = Severity::error;
  std::string message;
  std::string ttir_file;           // the TTIR text's name; "" when the diagnostic is not about TTIR text
  ir::TextPos ttir;                // 1-based line:col in that text; line 0 when unknown
  ir::PyLoc python;                // the Python location of the op, when known
  std::string op;                  // the op at that position ("tt.load"), "" for reader errors
  std::vector<std::string> notes;  // further lines that help fix it

  /// "file.ttir:12:7: message (kernel.py:33:9)"; parts that are unknown are left out.
  std::string str() const;
};

const char* severity_name(Diagnostic::Severity s);

class Error : public std::runtime_error {
 public:
  /// An error with no location (a bad command-line value, a missing file).
  explicit Error(const std::string& message);
  explicit Error(Diagnostic d);
  const Diagnostic& diagnostic() const { return d_; }

 private:
  Diagnostic d_;
};

/// The diagnostic of `msg` at `op` of module `m`.
Diagnostic diagnostic_at(const ir::Module& m, const ir::Op& op, const std::string& msg);
/// "add.ttir:12:7: <msg> (kernel.py:33:9)" for an op; the Python part is left out when unknown.
std::string locate(const ir::Module& m, const ir::Op& op, const std::string& msg);
[[noreturn]] void fail_at(const ir::Module& m, const ir::Op& op, const std::string& msg);
/// An error at a position of TTIR text that is not an op (the reader's errors).
[[noreturn]] void fail_at(const std::string& ttir_file, ir::TextPos pos, const std::string& msg);

}  // namespace tilescope
