// Usage errors (CLI11's parse errors) said as every other tilescope error is: "tilescope: error:
// MESSAGE", then where the usage is. Exit status 2 is the caller's (as for every bad input).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace tilescope::cli {

inline void tilescope_usage_errors(CLI::App& app) {
  app.failure_message([](const CLI::App* a, const CLI::Error& e) {
    return "tilescope: error: " + CLI::FailureMessage::simple(a, e);
  });
}

}  // namespace tilescope::cli
