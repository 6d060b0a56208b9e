// `tilescope gen`: the kernel generator's AST (include/tilescope/gen/ast.h, docs/gen-format.md) on the
// command line. `gen schema` prints (or writes) the JSON Schema generated from the op table, `gen ops` the
// op reference, `gen check FILE.json` validates a kernel AST (every problem located by a JSON pointer),
// `gen lower FILE.json` prints (or writes) its TTIR, which `tilescope run` takes.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "gen_run.h"

namespace tilescope::cli {

struct GenOptions {
  std::string file;    // check, lower, python: the kernel AST (JSON)
  std::string output;  // schema, lower, python: write here instead of stdout
  bool json = false;   // check: the problems as a JSON array
  GenRunOptions run;   // generation (no subcommand) and `gen eval`
};

/// Register `gen` (subcommands schema, ops, check, lower, python) on `app`; run it with gen_command once
/// parsed.
CLI::App* add_gen(CLI::App& app, GenOptions& options);
/// Run the parsed `gen` subcommand. Exit status: 0 success; 1 the AST has problems (printed one per line,
/// "FILE:POINTER: message (expected ..., found ...)"); 2 a file that cannot be read or written.
int gen_command(const CLI::App& gen, const GenOptions& options);

}  // namespace tilescope::cli
