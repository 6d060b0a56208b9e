// `tilescope gen "DESCRIPTION" --reference ref.py` / `tilescope gen --task NAME` (ask a model for a kernel,
// repair it from tilescope's findings, write kernel.json, kernel.ttir, kernel.py and report.json) and
// `tilescope gen eval` (the task suite: per stage, pass@1 and pass@k, tokens and time; or --fixtures, the
// suite's own ASTs without a model). The generator itself: include/tilescope/generate/generate.h.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "llm.h"

namespace tilescope::cli {

struct GenRunOptions {
  // generate
  std::string description;         // positional; replaces the task file's description
  std::string reference;           // --reference FILE (a task file: docs/gen-tasks.md)
  std::string task;                // --task NAME (tasks/NAME.py of the suite)
  std::vector<std::string> sizes;  // --sizes: "m=5,n=100" or a JSON object, each one size
  std::string out;                 // -o DIR
  int attempts = 3;
  std::string decoding = "auto";
  int max_tokens = 4096;
  double temperature = -1;  // < 0: the server's default
  int max_ops = 96;
  int64_t context = 0;            // --context: the model's context in tokens (0: unknown)
  int64_t max_steps = 1'000'000;  // --max-steps: ops one program may run
  int seed = 0;
  bool no_triton = false;
  bool dry_run = false;  // print the first request and its schema, ask nothing
  bool json = false;
  // eval
  std::string suite;  // --suite DIR (default: the suite shipped with tilescope)
  std::vector<std::string> tasks;
  int samples = 1;  // -k
  bool baseline = false;
  bool fixtures = false;
  bool list = false;     // --list: the suite's tasks
  std::string markdown;  // --markdown FILE: the summary table
  LlmCliOptions llm;
};

/// Register generation's options on `gen` (which also has the AST subcommands) and its `eval` subcommand.
/// Returns the eval subcommand.
CLI::App* add_gen_run(CLI::App& gen, GenRunOptions& options);
/// `tilescope gen [DESCRIPTION] --reference FILE | --task NAME`. Exit status: 0 a correct, clean kernel; 1
/// none after every attempt; 2 a bad task file, bad options, or no answer from the server; 130 Ctrl-C.
int gen_run_command(const GenRunOptions& options);
/// `tilescope gen eval`. Exit status: 0 done (whatever the score; with --fixtures: every fixture passes);
/// 1 with --fixtures, a fixture that fails; 2 bad options, or a task file that cannot be used (the others
/// still run); 130 Ctrl-C.
int gen_eval_command(const GenRunOptions& options);

}  // namespace tilescope::cli
