// The `tilescope sanitize` and `tilescope demo` subcommands (src/cli/sanitize.cpp).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace tilescope::cli {

struct SanitizeOptions {
  std::string json_path;   // --json: all findings, the documented JSON schema
  std::string sarif_path;  // --sarif: SARIF 2.1.0
  int exit_code = 1;       // --exit-code: the status when there are findings
  bool abort_on_first = false;
  bool races = true;                 // --no-races: no data-race / intra-program-race (analysis/races.h)
  bool no_uninit = false;            // --no-uninit: no uninitialized-read tracking (TILESCOPE_UNINIT=0)
  std::string threads;               // --threads as given (checked by exec::parse_threads); empty: not given
  std::string max_steps;             // --max-steps as given; empty: not given
  int64_t max_memory = 0;            // --max-memory: bytes of program frames per launch; 0: the default
  std::string target;                // --target: the emulated device; "": TILESCOPE_TARGET, else sm_90
  bool cuda_on_cpu = false;          // --cuda-on-cpu: "cuda" tensors are made on the CPU
  bool bench_all = false;            // --bench-all: perf_report benchmarks at every x value
  std::string color = "auto";        // auto | always | never
  std::string trace_path;            // --trace: record every launch into this trace file (trace/trace.h)
  int64_t trace_budget = -1;         // --trace-budget: bytes of payload; -1: trace::kDefaultBudget
  bool view = false;                 // --view: open the trace in the web visualizer after the run
  bool explain = false;              // --explain: the LLM explains the findings after the report
  std::vector<std::string> command;  // the program to run (the subcommand's remaining arguments)
  // `tilescope profile`: the profile analysis alone (analysis/profile.h) on every launch; --json writes
  // the profile document (README "Profile JSON") and the summary replaces the findings report.
  bool profile = false;
  std::string gpu = "H100";  // --gpu: the roofline's GPU
  int top = 5;               // --top: hottest lines per kernel
  int num_warps = 4;         // --num-warps: warps per program for the sector model
};

/// Register `--max-memory SIZE` on `cmd`: the most bytes a launch may take for the values of its
/// programs (exec::LaunchOptions::max_memory); SIZE in bytes or with a unit K, M, G, T (powers of 1024).
CLI::Option* add_max_memory(CLI::App& cmd, int64_t& bytes);

/// Register `sanitize` on `app` (or, with `name` "trace", the shorthand `trace`: sanitize recording
/// into -o FILE, default tilescope.tstrace); returns the subcommand (check it with `*sub` after parsing).
CLI::App* add_sanitize(CLI::App& app, SanitizeOptions& o, const std::string& name = "sanitize");
/// Run the command with every Triton launch of it (and of its child processes) on the engine under
/// the sanitizer; print the merged report; write --json / --sarif. Returns the exit status: the
/// command's own status when it is not 0 (128 + N when signal N ended it), else --exit-code when
/// there were findings, else 0. SIGINT, SIGTERM, SIGHUP and SIGQUIT are forwarded to the command's
/// process group meanwhile; its temporary directory is removed on every way out.
int sanitize_command(const SanitizeOptions& o);
/// `tilescope sanitize|trace [OPTIONS] [--] COMMAND...` from main's argv (argv[1] is the subcommand): the
/// command's own arguments are passed on untouched, so they are split off before option parsing.
int sanitize_main(int argc, char** argv);

/// Register `profile` on `app` (for --help; profile_main parses it).
CLI::App* add_profile(CLI::App& app, SanitizeOptions& o);
/// `tilescope profile [OPTIONS] [--] COMMAND...` from main's argv (argv[1] == "profile"), as sanitize_main.
/// (`tilescope profile kernel.ttir ...` is `tilescope run` with its profile options: main.cpp.)
int profile_main(int argc, char** argv);

/// Register `demo`: runs the bundled examples (examples/demo.py) and shows the findings.
CLI::App* add_demo(CLI::App& app, std::vector<std::string>& args);
int demo_command(const std::vector<std::string>& args, const std::vector<std::string>& extras);

}  // namespace tilescope::cli
