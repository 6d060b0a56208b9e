#include "assist.h"

#include <fmt/format.h>

#include <iostream>
#include <optional>

#include "interrupt.h"
#include "paths.h"
#include "tilescope/assist/assistant.h"
#include "tilescope/assist/context.h"
#include "tilescope/ir/diag.h"
#include "tilescope/trace/query.h"

namespace tilescope::cli {

using json = nlohmann::json;

namespace {

void add_common(CLI::App& c, AssistOptions& o) {
  c.add_option("trace", o.path, "the trace file (tilescope trace -o FILE -- ...)")->required();
  c.add_option("--launch", o.launch, "the launch (default: the first with findings)");
  c.add_option("--program", o.program,
               "the program the question is about: x[,y[,z]] (default: the first finding's)");
  c.add_option("--op", o.site, "the op site the question is about (default: the first finding's)");
  c.add_option("--budget", o.budget, "tokens of context at most (estimated as characters / 3)")
      ->check(CLI::Range(int64_t{500}, int64_t{1} << 20))
      ->capture_default_str();
  c.add_flag("--context", o.context_only, "print the context the model would get, and ask nothing");
  add_llm_settings(c, o.llm);
}

std::array<int64_t, 3> parse_pid(const std::string& s) {
  std::array<int64_t, 3> p{0, 0, 0};
  size_t i = 0, k = 0;
  while (i <= s.size() && k < 3) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    try {
      size_t used = 0;
      p[k] = std::stoll(s.substr(i, j - i), &used);
      if (used != j - i || p[k] < 0) throw std::invalid_argument("");
    } catch (const std::exception&) {
      throw Error(fmt::format("--program {}: give x[,y[,z]] with non-negative integers", s));
    }
    ++k;
    i = j + 1;
    if (j == s.size()) break;
  }
  return p;
}

}  // namespace

void add_assist(CLI::App& app, AssistOptions& o, CLI::App*& explain, CLI::App*& ask) {
  explain = app.add_subcommand("explain", "Ask the LLM for a first analysis of a traced launch (streamed)");
  add_common(*explain, o);
  ask = app.add_subcommand("ask", "Ask the LLM a question about a traced launch (streamed)");
  add_common(*ask, o);
  ask->add_option("question", o.question, "the question, e.g. \"why is row 3 NaN?\"")->required();
}

int assist_command(const AssistOptions& o) {
  // Ctrl-C from here on ends the command with its status 130 and, with --json, the JSON of an
  // interrupted answer: while the context is built (not cancellable: a replay of the launch), it takes
  // effect once that is done, before anything is asked.
  std::optional<CancelOnSigint> on_sigint;
  if (!o.context_only) on_sigint.emplace();
  trace::Query q(o.path);
  assist::Selection sel;
  sel.launch = o.launch;
  if (!o.program.empty()) sel.pid = parse_pid(o.program);
  if (o.site >= 0) sel.site = o.site;
  nlohmann::ordered_json context;
  try {
    context = assist::build_context(q, sel, o.budget);
  } catch (const trace::Query::NotFound& e) {
    throw Error(fmt::format("{}: {}", o.path, e.what()));
  }
  if (o.context_only) {
    std::cout << context.dump(2) << "\n";
    return 0;
  }
  const llm::Prompts prompts = assist::prompts(prompts_dir());
  const llm::Config config = llm_config(o.llm);
  llm::Client client(config.endpoint);
  llm::ChatRequest req;
  req.messages = assist::messages(prompts, context, o.question);
  req.temperature = 0.2;
  req.max_tokens = config.endpoint.max_tokens;  // the max_tokens setting (--max-tokens: its flag layer)
  json out = {{"context", {{"tokens", context["tokens"]}, {"omitted", context["omitted"]}}}};
  std::string partial;  // what arrived: the answer of an interrupted or failed request
  try {
    if (interrupted()) throw llm::LlmError(llm::LlmError::Kind::cancelled, 0, "cancelled");
    llm::ChatResult r = client.stream(
        req,
        [&](std::string_view piece) {
          partial.append(piece);
          if (!o.llm.json) std::cout << piece << std::flush;
        },
        &interrupted());
    if (!o.llm.json) std::cout << std::endl;
    const auto cited = assist::cited_ids(r.content, context);
    out.update({{"ok", true},
                {"interrupted", false},
                {"answer", r.content},
                {"model", r.model},
                {"requested_model", r.requested_model},
                {"model_mismatch", llm::model_differs(r)},
                {"finish_reason", r.finish_reason},
                {"usage", r.usage},
                {"cited", cited}});
    if (o.llm.json)
      std::cout << out.dump(2) << "\n";
    else if (r.finish_reason == "length")
      std::cerr << "tilescope: note: the answer was cut at its length limit\n";
    if (const std::string w = llm::model_warning(r); !w.empty())
      std::cerr << "tilescope: warning: " << w << "\n";
    return 0;
  } catch (const llm::LlmError& e) {
    // The answer so far comes with an interruption or an error (a stream cut mid-answer), marked as such.
    const bool cancelled = e.kind == llm::LlmError::Kind::cancelled;
    out.update({{"ok", false},
                {"interrupted", cancelled},
                {"answer", partial},
                {"model", nullptr},  // no answer named one
                {"requested_model", config.endpoint.model.empty() ? json() : json(config.endpoint.model)},
                {"model_mismatch", false},
                {"finish_reason", nullptr},
                {"cited", assist::cited_ids(partial, context)},
                {"error",
                 {{"kind", llm::kind_name(e.kind)},
                  {"status", e.status},
                  {"message", cancelled ? "interrupted (SIGINT)" : e.what()}}}});
    if (o.llm.json) std::cout << out.dump(2) << "\n";
    if (cancelled) {
      std::cerr << "\ntilescope: interrupted (SIGINT)\n";
      return 130;
    }
    std::cerr << fmt::format("tilescope: error: {} ({})\n", e.what(), llm::kind_name(e.kind));
    return 2;
  }
}

}  // namespace tilescope::cli
