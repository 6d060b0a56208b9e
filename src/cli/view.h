// `tilescope view run.tstrace`: the web visualizer of a trace, served by tilescope's own HTTP server
// (server/server.h: loopback, session token, Host / Origin checks) with the bundled front end (web/).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "llm.h"

namespace tilescope::cli {

struct ViewOptions {
  std::string path;
  std::string host = "127.0.0.1";
  int port = 0;
  LlmCliOptions llm;      // the assistant's settings flags (--base-url, --model, --timeout, --debug-log,
                          // --max-tokens)
  int64_t budget = 4000;  // --budget: context tokens per question to the assistant
};

CLI::App* add_view(CLI::App& app, ViewOptions& o);
/// Serve the trace until SIGINT or SIGTERM; prints the URL to open (with its one-time token) on stdout.
/// Errors (a bad trace, a port in use, missing front-end files) are tilescope::Error.
int view_command(const ViewOptions& o);

}  // namespace tilescope::cli
