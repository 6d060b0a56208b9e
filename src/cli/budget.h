// The --trace-budget option of `tilescope sanitize`, `profile` and `run`: bytes of payload a new trace
// may hold (docs/trace-format.md, "The budget").
#pragma once

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace tilescope::cli {

/// Adds --trace-budget SIZE to `app` into `budget` (bytes; K, M, G: powers of 1024; 0: only what every
/// launch writes). A negative size is an error naming it; `budget` stays -1 when the option is absent.
inline CLI::Option* add_trace_budget(CLI::App* app, int64_t& budget, const std::string& help) {
  return app->add_option("--trace-budget", budget, help)
      ->check(CLI::Validator(
          [](std::string& s) -> std::string {
            if (!s.empty() && s.find_first_not_of(" \t") != std::string::npos &&
                s[s.find_first_not_of(" \t")] == '-')
              return fmt::format(
                  "'{}' is not a size (bytes, or a number with K, M or G; 0 keeps only what every "
                  "launch writes)",
                  s);
            return "";
          },
          "SIZE"))
      ->transform(CLI::AsSizeValue(false));
}

}  // namespace tilescope::cli
