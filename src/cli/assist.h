// `tilescope explain run.tstrace` (a first-pass analysis of a launch, streamed from the LLM) and
// `tilescope ask run.tstrace "question"`, grounded in the trace (assist/context.h).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "llm.h"

namespace tilescope::cli {

struct AssistOptions {
  std::string path;
  std::string question;       // ask
  int64_t launch = 0;         // --launch: 0, the first with findings
  std::string program;        // --program x[,y[,z]]
  int site = -1;              // --op SITE
  int64_t budget = 6000;      // --budget: context tokens
  bool context_only = false;  // --context: print the context JSON, ask nothing
  LlmCliOptions llm;
};

/// Register `explain` and `ask` on `app` (both share `o`).
void add_assist(CLI::App& app, AssistOptions& o, CLI::App*& explain, CLI::App*& ask);
/// Run one: streams the answer to stdout (or prints JSON with --json: also for an error or Ctrl-C, then
/// with "ok" false, "interrupted" and the answer so far). Exit status: 0, 2 on an error (a bad trace, a
/// server error), 130 on Ctrl-C.
int assist_command(const AssistOptions& o);

}  // namespace tilescope::cli
