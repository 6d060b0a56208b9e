// tilescope/ir: located errors for bad input.
//
// Every user-facing error (malformed TTIR, an op we do not run, a bad launch argument) is a
// tilescope::Error carrying a message already located as "file:line:col: message (py.py:L:C)".
// Assertions are for our own bugs; user input never triggers them.
#pragma once

#include <stdexcept>
#include <string>

#include "tilescope/ir/ir.h"

namespace tilescope {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// "add.ttir:12:7: <msg> (kernel.py:33:9)" for an op; the Python part is left out when unknown.
std::string locate(const ir::Module& m, const ir::Op& op, const std::string& msg);
[[noreturn]] void fail_at(const ir::Module& m, const ir::Op& op, const std::string& msg);

}  // namespace tilescope
