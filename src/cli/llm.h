// `tilescope llm config` (the effective LLM settings and where each came from) and `tilescope llm
// check` (one streamed request to the configured server: is it reachable, which model answers, how
// fast). The settings' layers: include/tilescope/llm/config.h.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "tilescope/llm/config.h"

namespace tilescope::cli {

struct LlmCliOptions {
  std::string base_url, model, debug_log;  // the command-line layer; empty: not given
  double timeout_s = 0;                    // 0: not given
  int answer_max_tokens = 0;               // --max-tokens of explain, ask, view, llm config; 0: not given
  bool json = false;
  // check (its --max-tokens is its own: a short probe, not the max_tokens setting)
  std::string message = "Reply with one word: ready";
  int max_tokens = 16;
  bool no_stream = false;
  // prompt
  std::string prompt_name;
};

/// The LLM settings flags (--base-url, --model, --timeout, --debug-log; --max-tokens, the max_tokens
/// setting, unless `max_tokens_flag` is false; --json unless `json_flag` is false) on `cmd`, into `o`.
void add_llm_settings(CLI::App& cmd, LlmCliOptions& o, bool json_flag = true, bool max_tokens_flag = true);
/// The effective LLM settings: every layer (llm/config.h) with `o` as the command line's.
llm::Config llm_config(const LlmCliOptions& o);

/// Register `llm` (subcommands `config`, `check`, `prompt`) on `app`; run it with llm_command once parsed.
CLI::App* add_llm(CLI::App& app, LlmCliOptions& options);
/// Run the parsed `llm` subcommand; returns the exit status (0 ok, 2 a settings or server error, 130
/// interrupted).
int llm_command(const CLI::App& llm, const LlmCliOptions& options);

}  // namespace tilescope::cli
