// `tilescope show` and `tilescope replay`: reading a trace file (trace/trace.h).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace tilescope::cli {

struct ShowOptions {
  std::string path;
  int top = 10;  // --top: source lines listed by bytes
};

struct ReplayOptions {
  std::string path;
  int64_t launch = 0;      // --launch N (1-based trace launch id)
  std::string save_dir;    // --save-inputs DIR
  std::string json_path;   // --json: the replay's findings
  std::string threads;     // --threads as given; empty: all cores
  int64_t max_steps = -1;  // --max-steps: operations per program (0: no limit); -1: the engine's default
  std::string color = "auto";
};

CLI::App* add_show(CLI::App& app, ShowOptions& o);
/// Prints the trace's summary on stdout; 0, or throws tilescope::Error for a bad file.
int show_command(const ShowOptions& o);

CLI::App* add_replay(CLI::App& app, ReplayOptions& o);
/// Re-runs a recorded launch on the engine from the trace alone, under the analyses it was recorded
/// with (the uninit analysis excepted: it needs the recording process's allocations), and compares the
/// findings with the recorded ones. Exit status: 0 without findings, 1 with findings equal to the
/// recorded ones, 4 when they differ from the recording; errors are tilescope::Error (status 2).
int replay_command(const ReplayOptions& o);

}  // namespace tilescope::cli
