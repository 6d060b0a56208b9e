#include "llm.h"

#include <fmt/format.h>

#include <chrono>
#include <iostream>

#include "interrupt.h"
#include "paths.h"
#include "tilescope/assist/assistant.h"
#include "tilescope/llm/client.h"
#include "tilescope/llm/config.h"

namespace tilescope::cli {

void add_llm_settings(CLI::App& cmd, LlmCliOptions& o, bool json_flag, bool max_tokens_flag) {
  cmd.add_option("--base-url", o.base_url,
                 "the server's OpenAI-compatible base URL (e.g. http://127.0.0.1:8080/v1)");
  cmd.add_option("--model", o.model, "the model id (default: the first model the server lists)");
  cmd.add_option("--timeout", o.timeout_s, "seconds a response may take")->check(CLI::PositiveNumber);
  cmd.add_option("--debug-log", o.debug_log,
                 "append requests and responses (key redacted) to this JSONL file");
  if (max_tokens_flag)
    cmd.add_option("--max-tokens", o.answer_max_tokens,
                   "the longest answer, in tokens (the max_tokens setting; default 1024)")
        ->check(CLI::Range(1, 1 << 20));
  if (json_flag) cmd.add_flag("--json", o.json, "print JSON");
}

llm::Config llm_config(const LlmCliOptions& o) {
  llm::Layers layers;
  layers.env = llm::environment();
  layers.flags = nlohmann::json::object();
  if (!o.base_url.empty()) layers.flags["base_url"] = o.base_url;
  if (!o.model.empty()) layers.flags["model"] = o.model;
  if (o.timeout_s > 0) layers.flags["timeout_s"] = o.timeout_s;
  if (!o.debug_log.empty()) layers.flags["debug_log"] = o.debug_log;
  if (o.answer_max_tokens > 0) layers.flags["max_tokens"] = o.answer_max_tokens;
  return llm::resolve(layers);
}

namespace {

int check(const LlmCliOptions& o) {
  const llm::Config config = llm_config(o);
  llm::Client client(config.endpoint);
  llm::ChatRequest req;
  req.messages = {{"user", o.message}};
  req.max_tokens = o.max_tokens;
  req.temperature = 0;
  CancelOnSigint on_sigint;
  const auto t0 = std::chrono::steady_clock::now();
  double first = -1;
  nlohmann::json out = {{"base_url", config.endpoint.base_url}};
  std::string partial;  // what arrived, for an interrupted or failed answer's JSON
  try {
    const std::string model = client.model(&interrupted());
    out["requested_model"] = model;
    if (!o.json) std::cerr << fmt::format("tilescope: asking {} at {}\n", model, config.endpoint.base_url);
    llm::ChatResult r;
    if (o.no_stream) {
      r = client.chat(req, &interrupted());
      if (!o.json) std::cout << r.content << std::flush;
    } else {
      r = client.stream(
          req,
          [&](std::string_view piece) {
            if (first < 0)
              first = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            partial.append(piece);
            if (!o.json) std::cout << piece << std::flush;
          },
          &interrupted());
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    out.update({{"ok", true},
                {"interrupted", false},
                {"content", r.content},
                {"model", r.model.empty() ? model : r.model},
                {"model_mismatch", llm::model_differs(r)},
                {"finish_reason", r.finish_reason},
                {"usage", r.usage},
                {"seconds", seconds},
                {"first_token_seconds", first < 0 ? nlohmann::json() : nlohmann::json(first)},
                {"streamed", !o.no_stream}});
    if (o.json) {
      std::cout << out.dump(2) << "\n";
    } else {
      std::cout << "\n";
      std::cerr << fmt::format("tilescope: {} answered in {:.2f} s{} (finish_reason: {})\n",
                               r.model.empty() ? model : r.model, seconds,
                               first < 0 ? "" : fmt::format(", first token after {:.2f} s", first),
                               r.finish_reason.empty() ? "none" : r.finish_reason);
    }
    if (const std::string w = llm::model_warning(r); !w.empty())
      std::cerr << "tilescope: warning: " << w << "\n";
    return 0;
  } catch (const llm::LlmError& e) {
    const bool cancelled = e.kind == llm::LlmError::Kind::cancelled;
    out.update({{"ok", false},
                {"interrupted", cancelled},
                {"content", partial},
                {"error",
                 {{"kind", llm::kind_name(e.kind)},
                  {"status", e.status},
                  {"message", cancelled ? "interrupted (SIGINT)" : e.what()}}}});
    if (o.json) std::cout << out.dump(2) << "\n";
    if (cancelled) {
      std::cerr << "\ntilescope: interrupted (SIGINT)\n";
      return 130;
    }
    std::cerr << fmt::format("tilescope: error: {} ({})\n", e.what(), llm::kind_name(e.kind));
    return 2;
  }
}

}  // namespace

CLI::App* add_llm(CLI::App& app, LlmCliOptions& o) {
  auto* llm = app.add_subcommand("llm", "The LLM server the assistant and the generator use");
  llm->require_subcommand(1);
  auto* config = llm->add_subcommand("config", "Show the effective LLM settings and where each came from");
  add_llm_settings(*config, o);
  auto* chk =
      llm->add_subcommand("check", "Send one short request to the configured server and stream the answer");
  add_llm_settings(*chk, o, /*json_flag=*/true, /*max_tokens_flag=*/false);
  chk->add_option("--message", o.message, "what to send")->capture_default_str();
  chk->add_option("--max-tokens", o.max_tokens, "longest answer, in tokens")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  chk->add_flag("--no-stream", o.no_stream, "one response instead of a stream");
  auto* prompt =
      llm->add_subcommand("prompt", "Print one of the assistant's prompts (files in the package's prompts/)");
  prompt->add_option("name", o.prompt_name, "system or analyze")->required();
  return llm;
}

int llm_command(const CLI::App& llm, const LlmCliOptions& o) {
  if (llm.got_subcommand("prompt")) {
    std::cout << assist::prompts(prompts_dir()).get(o.prompt_name);
    return 0;
  }
  if (llm.got_subcommand("config")) {
    const llm::Config c = llm_config(o);
    std::cout << (o.json ? llm::describe(c).dump(2) + "\n" : llm::describe_text(c));
    return 0;
  }
  return check(o);
}

}  // namespace tilescope::cli
