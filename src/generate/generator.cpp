// Generator (generate.h): the requests, the decoding and its fallbacks, the repair loop.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <filesystem>

#include "tilescope/generate/generate.h"
#include "tilescope/ir/diag.h"

namespace tilescope::generate {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;
namespace fs = std::filesystem;

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// `text` with every "{{key}}" replaced by its value.
std::string fill(std::string text, const std::vector<std::pair<std::string, std::string>>& values) {
  for (const auto& [k, v] : values) {
    const std::string key = "{{" + k + "}}";
    for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + v.size()))
      text.replace(at, key.size(), v);
  }
  return text;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// The JSON document in a reply: the whole text, else a ```json fenced block, else the outermost braces.
std::string json_in(const std::string& reply) {
  auto parses = [](const std::string& s) { return json::accept(s); };
  if (parses(reply)) return reply;
  for (size_t at = reply.find("```"); at != std::string::npos; at = reply.find("```", at + 3)) {
    const size_t start = reply.find('\n', at);
    const size_t end = start == std::string::npos ? start : reply.find("```", start);
    if (end == std::string::npos) break;
    std::string block = reply.substr(start + 1, end - start - 1);
    if (parses(block)) return block;
    at = end;
  }
  const size_t a = reply.find('{'), b = reply.rfind('}');
  if (a != std::string::npos && b != std::string::npos && b > a) return reply.substr(a, b - a + 1);
  return reply;
}

// The Python code in a reply: the ```python (or first fenced) block, else the whole text.
std::string python_in(const std::string& reply) {
  std::string first;
  for (size_t at = reply.find("```"); at != std::string::npos;) {
    const size_t eol = reply.find('\n', at);
    if (eol == std::string::npos) break;
    const std::string lang = reply.substr(at + 3, eol - at - 3);
    const size_t end = reply.find("```", eol);
    std::string block = reply.substr(eol + 1, end == std::string::npos ? std::string::npos : end - eol - 1);
    if (lang.find("python") != std::string::npos || lang.find("py") == 0) return block;
    if (first.empty()) first = block;
    if (end == std::string::npos) break;
    at = reply.find("```", end + 3);
  }
  return first.empty() ? reply : first;
}

// Whether a refused request was refused for its decoding field: a server without it answers 400, 422 or 500
// naming the field (response_format, json_schema, grammar, json_object). Anything else (a 501 of a server
// that is not an LLM server, a 404) is an error of its own, not a reason to ask otherwise.
bool refused_decoding(const llm::LlmError& e) {
  using K = llm::LlmError::Kind;
  if ((e.kind != K::bad_request && e.kind != K::server) ||
      (e.status != 400 && e.status != 422 && e.status != 500))
    return false;
  std::string m = e.what();
  for (char& c : m) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* word : {"response_format", "json_schema", "schema", "grammar", "json_object"})
    if (m.find(word) != std::string::npos) return true;
  return false;
}

Decoding next_decoding(Decoding d) {
  switch (d) {
    case Decoding::json_schema: return Decoding::llama_grammar;
    case Decoding::llama_grammar: return Decoding::json_object;
    default: return Decoding::none;
  }
}

int stage_rank(const Attempt& a) { return static_cast<int>(a.eval.reached); }

}  // namespace

const char* decoding_name(Decoding d) {
  switch (d) {
    case Decoding::automatic: return "auto";
    case Decoding::json_schema: return "json-schema";
    case Decoding::llama_grammar: return "llama-grammar";
    case Decoding::json_object: return "json-object";
    case Decoding::none: return "none";
  }
  return "";
}

std::optional<Decoding> decoding_from_name(std::string_view name) {
  for (Decoding d : {Decoding::automatic, Decoding::json_schema, Decoding::llama_grammar,
                     Decoding::json_object, Decoding::none})
    if (name == decoding_name(d)) return d;
  return std::nullopt;
}

Generator::Generator(llm::Client& client, const llm::Prompts& prompts, Worker& worker, GenOptions options)
    : client_(client),
      prompts_(prompts),
      worker_(worker),
      options_(std::move(options)),
      decoding_(options_.decoding == Decoding::automatic ? Decoding::json_schema : options_.decoding) {}

ojson Generator::request_schema(const Task& task) const { return gen::schema(task.iface, options_.bounds); }

std::vector<llm::Message> Generator::first_messages(const Task& task, bool python) const {
  std::string sizes;
  for (const auto& s : task.sizes) sizes += (sizes.empty() ? "" : ", ") + s.dump();
  const std::vector<std::pair<std::string, std::string>> values = {
      {"name", task.name},
      {"description", task.description},
      {"signature", join(task.signature(), "\n")},
      {"grid", task.grid_source},
      {"sizes", sizes},
      {"ops", gen::op_reference()},
      {"max_ops", std::to_string(options_.bounds.ops)},
  };
  return {{"system", fill(prompts_.get(python ? "gen_python_system" : "gen_system"), values)},
          {"user", fill(prompts_.get(python ? "gen_python_task" : "gen_task"), values)}};
}

Outcome Generator::generate(const Task& task, const std::string& work_dir, Progress* progress) {
  return run(task, false, work_dir, progress);
}
Outcome Generator::generate_python(const Task& task, const std::string& work_dir, Progress* progress) {
  return run(task, true, work_dir, progress);
}

Outcome Generator::run(const Task& task, bool python, const std::string& work_dir, Progress* progress) {
  Outcome out;
  out.task = task.name;
  out.mode = python ? "python" : "ast";
  const std::vector<llm::Message> first = first_messages(task, python);
  const ojson schema = python ? ojson() : request_schema(task);
  std::string previous, feedback;  // the last reply and what was wrong with it
  bool with_previous = true;
  for (int n = 1; n <= options_.attempts; ++n) {
    Attempt at;
    at.number = n;
    std::vector<llm::Message> messages = first;
    if (n > 1) {
      // The previous reply only where it leaves room for a whole answer: a server cuts an answer at the end
      // of its context ("length"), and says nothing beforehand. Tokens: the first request's, as the server
      // counted them, the previous reply's, and the feedback's estimated as characters / 3.
      const Attempt& prev = out.attempts.back();
      const int64_t need = out.attempts.front().prompt_tokens + prev.completion_tokens +
                           static_cast<int64_t>(feedback.size() / 3) + 64 + options_.max_tokens;
      if (options_.context_tokens > 0 && need > options_.context_tokens && with_previous) {
        with_previous = false;
        const std::string note = fmt::format(
            "repairs are sent without the previous reply: with it, about {} tokens would not leave {} for "
            "the "
            "answer in the model's context of {}",
            need - options_.max_tokens, options_.max_tokens, options_.context_tokens);
        out.notes.push_back(note);
        if (progress) progress->note(note);
      }
      if (with_previous) messages.push_back({"assistant", previous});
      messages.push_back({"user", fill(prompts_.get("gen_repair"), {{"feedback", feedback}})});
    }
    // One request, again with the next decoding when the server refuses this one's field.
    llm::ChatResult reply;
    for (;;) {
      llm::ChatRequest req;
      req.messages = messages;
      req.max_tokens = options_.max_tokens;
      req.temperature = options_.temperature;
      at.decoding = python ? "python" : decoding_name(decoding_);
      if (!python) {
        if (decoding_ == Decoding::json_schema)
          req.response_format = {
              {"type", "json_schema"},
              {"json_schema", {{"name", "kernel_ast"}, {"strict", true}, {"schema", schema}}}};
        else if (decoding_ == Decoding::json_object)
          req.response_format = {{"type", "json_object"}};
        else if (decoding_ == Decoding::llama_grammar)
          req.extra = {{"json_schema", schema}};
      }
      if (progress) progress->attempt_begin(n, options_.attempts, at.decoding);
      const double t0 = now();
      int64_t pieces = 0;
      try {
        reply = client_.stream(
            req,
            [&](std::string_view piece) {
              ++pieces;  // a streamed piece is about a token (servers send one per token)
              if (progress) progress->streamed(pieces, now() - t0);
            },
            options_.eval.cancel);
        at.model_seconds = now() - t0;
        break;
      } catch (const llm::LlmError& e) {
        at.model_seconds = now() - t0;
        if (!python && options_.decoding == Decoding::automatic && decoding_ != Decoding::none &&
            refused_decoding(e)) {
          const Decoding next = next_decoding(decoding_);
          const std::string note = fmt::format("the server refused {} ({}); asking with {} from now on",
                                               decoding_name(decoding_), e.what(), decoding_name(next));
          out.notes.push_back(note);
          if (progress) progress->note(note);
          decoding_ = next;
          continue;
        }
        if (e.kind == llm::LlmError::Kind::context_too_long && n > 1 && with_previous) {
          with_previous = false;  // the repair without the previous reply: only the feedback
          messages.erase(messages.end() - 2);
          const std::string note =
              "the repair request did not fit the model's context: sent without the previous reply";
          out.notes.push_back(note);
          if (progress) progress->note(note);
          continue;
        }
        if (e.kind == llm::LlmError::Kind::cancelled) throw;
        at.llm_error = fmt::format("{}: {}", llm::kind_name(e.kind), e.what());
        break;
      }
    }
    if (at.llm_error.empty()) {
      at.reply = reply.content;
      at.finish_reason = reply.finish_reason;
      if (reply.usage.is_object()) {
        at.prompt_tokens = reply.usage.value("prompt_tokens", int64_t{0});
        at.completion_tokens = reply.usage.value("completion_tokens", int64_t{0});
      }
      EvalOptions eo = options_.eval;
      eo.work_dir = (fs::path(work_dir) / fmt::format("attempt{}", n)).string();
      if (at.finish_reason == "length") {
        at.eval.error =
            fmt::format("the reply was cut at max_tokens ({} tokens) before it ended", options_.max_tokens);
      } else if (python) {
        at.eval = evaluate_python(task, python_in(at.reply), worker_, eo);
      } else {
        at.eval = evaluate(task, json_in(at.reply), worker_, eo);
      }
    }
    if (progress) progress->attempt_end(at);
    const bool passed = at.eval.passed();
    previous = at.reply;
    std::vector<std::string> lines = at.eval.feedback();
    if (!at.llm_error.empty()) lines = {"(no answer: " + at.llm_error + ")"};
    if (at.finish_reason == "length")
      lines = {fmt::format(
          "Your answer was cut off after {} tokens: write a shorter kernel (fewer ops, short names).",
          at.completion_tokens)};
    feedback.clear();
    for (const auto& l : lines) feedback += "- " + l + "\n";
    out.attempts.push_back(std::move(at));
    if (passed) break;
    // No answer (the client has retried what a retry can fix): asking again would fail the same way.
    if (!out.attempts.back().llm_error.empty()) break;
  }
  for (size_t i = 0; i < out.attempts.size(); ++i) {
    const Attempt& a = out.attempts[i];
    if (!a.llm_error.empty()) continue;
    if (out.best < 0 || stage_rank(a) >= stage_rank(out.attempts[static_cast<size_t>(out.best)]))
      out.best = static_cast<int>(i);
  }
  return out;
}

double pass_at_k(int n, int c, int k) {
  if (n <= 0 || k <= 0) return 0;
  if (n - c < k) return 1.0;
  // 1 - C(n-c, k) / C(n, k) = 1 - prod_{i=n-c+1}^{n} (1 - k / i)
  double p = 1.0;
  for (int i = n - c + 1; i <= n; ++i) p *= 1.0 - static_cast<double>(k) / i;
  return 1.0 - p;
}

json Evaluation::to_json() const {
  json problems_j = json::array();
  for (const auto& p : problems)
    problems_j.push_back({{"kind", gen::problem_kind_name(p.kind)},
                          {"pointer", p.pointer},
                          {"message", p.message},
                          {"expected", p.expected},
                          {"found", p.found}});
  json cases_j = json::array();
  for (const auto& c : cases) {
    json outs = json::array();
    for (const auto& o : c.outputs)
      outs.push_back(
          {{"name", o.name},
           {"ok", o.ok()},
           {"compared", o.compared},
           {"bad", o.bad},
           {"max_error", std::isfinite(o.max_error) ? json(o.max_error) : json("inf")},
           {"at", o.at},
           {"got", std::isfinite(o.got) ? json(o.got) : json(fmt::format("{}", o.got))},
           {"expected", std::isfinite(o.expected) ? json(o.expected) : json(fmt::format("{}", o.expected))},
           {"rtol", o.rtol},
           {"atol", o.atol},
           {"unwritten", o.unwritten},
           {"first_unwritten", o.first_unwritten},
           {"touched", o.touched},
           {"first_touched", o.first_touched}});
    json changed = json::array();
    for (const auto& ci : c.changed_inputs)
      changed.push_back({{"name", ci.name}, {"elements", ci.elements}, {"first", ci.first}});
    json findings = json::array();
    for (const auto& f : c.findings)
      findings.push_back(
          {{"kind", analysis::kind_name(f.kind)},
           {"op", f.site.op},
           {"ttir_line", f.site.ttir_line},
           {"pointer", f.site.ttir_line > 0 && static_cast<size_t>(f.site.ttir_line) <= line_pointers.size()
                           ? line_pointers[static_cast<size_t>(f.site.ttir_line) - 1]
                           : ""},
           {"summary", f.summary}});
    cases_j.push_back({{"size", c.size},
                       {"changed_inputs", changed},
                       {"grid", c.grid},
                       {"ok", c.ok()},
                       {"error", c.error},
                       {"outputs", outs},
                       {"findings", findings},
                       {"seconds", c.seconds}});
  }
  json j = {{"reached", stage_name(reached)},
            {"passed", passed()},
            {"problems", problems_j},
            {"error", error},
            {"cases", cases_j},
            {"seconds", seconds}};
  j["round_trip"] = round_trip ? json(*round_trip) : json(nullptr);
  if (!round_trip_note.empty()) j["round_trip_note"] = round_trip_note;
  return j;
}

json Attempt::to_json() const {
  return {{"attempt", number},
          {"decoding", decoding},
          {"finish_reason", finish_reason},
          {"llm_error", llm_error},
          {"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"model_seconds", model_seconds},
          {"evaluation", eval.to_json()},
          {"feedback", eval.feedback()}};
}

json Outcome::to_json() const {
  json a = json::array();
  for (const auto& x : attempts) a.push_back(x.to_json());
  return {{"task", task}, {"mode", mode},   {"passed", passed()},
          {"best", best}, {"notes", notes}, {"attempts", a}};
}

}  // namespace tilescope::generate
