// The web visualizer's assistant (assist_web.h).
#include "assist_web.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "paths.h"
#include "tilescope/assist/assistant.h"
#include "tilescope/assist/context.h"
#include "tilescope/ir/diag.h"

namespace tilescope::cli {

using json = nlohmann::json;
using server::ApiError;
using server::Request;
using server::Response;

namespace {

constexpr size_t kMaxBody = size_t{64} << 10;    // bytes of a request body
constexpr size_t kMaxQuestion = 8000;            // characters of a question
constexpr size_t kMaxAnswer = size_t{64} << 10;  // bytes of one answer: past it, the answer is stopped
constexpr size_t kMaxTurns = 200;                // kept in the conversation (oldest dropped)
// Earlier messages sent with a question, and the characters of each: about 2,400 tokens at most, so that
// a context of the default budget, the history and an answer fit a model of 8k tokens.
constexpr size_t kHistoryMessages = 6;
constexpr size_t kHistoryChars = 1200;
constexpr auto kKeepAlive = std::chrono::milliseconds(500);  // a comment while the model is silent
// Appended to an incomplete earlier answer when it goes back to the model as history.
constexpr std::string_view kStoppedNote = "\n\n[This answer was stopped by the user before it was complete.]";
constexpr std::string_view kLengthNote =
    "\n\n[This answer was cut at its length limit before it was complete.]";

/// One event of the stream: `event: NAME` and its data as one line of JSON.
std::string sse(std::string_view event, const json& data) {
  return fmt::format("event: {}\ndata: {}\n\n", event,
                     data.dump(-1, ' ', false, json::error_handler_t::replace));
}

/// Bytes at the end of `s` that start a UTF-8 sequence not complete yet (0 to 3): held back so that an
/// event never splits a character.
size_t incomplete_utf8_tail(const std::string& s) {
  for (size_t back = 1; back <= 3 && back <= s.size(); ++back) {
    const auto c = static_cast<unsigned char>(s[s.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const size_t need = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
    return need > back ? back : 0;
  }
  return 0;
}

std::string clip(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  size_t cut = n;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  return s.substr(0, cut) + " [...]";
}

const json& body_of(const Request& r, json& holder) {
  if (r.body.size() > kMaxBody)
    throw ApiError(413, "body_too_large", fmt::format("the request body is over {} KiB", kMaxBody >> 10));
  holder = r.body.empty() ? json::object() : r.json();
  if (!holder.is_object()) throw ApiError(400, "bad_json", "the request body must be a JSON object");
  return holder;
}

void only_fields(const json& body, std::initializer_list<std::string_view> allowed) {
  for (const auto& [k, v] : body.items()) {
    bool ok = false;
    for (std::string_view a : allowed) ok = ok || k == a;
    if (!ok) throw ApiError(400, "bad_parameter", fmt::format("unknown field '{}'", clip(k, 64)));
  }
}

int64_t int_field(const json& body, const char* name, int64_t lo, int64_t hi) {
  const json& v = body.at(name);
  if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
    throw ApiError(400, "bad_parameter", fmt::format("'{}' must be an integer from {} to {}", name, lo, hi));
  return v.get<int64_t>();
}

std::string selection_note(const nlohmann::ordered_json& ctx) {
  std::string s = "(Selected in the visualizer:";
  const auto& sel = ctx["selected"];
  s += fmt::format(" launch {}", sel["launch"].dump());
  if (sel.contains("program") && sel["program"].is_array()) {
    const auto& p = sel["program"];
    s += fmt::format(", program ({}, {}, {})", p[0].dump(), p[1].dump(), p[2].dump());
  }
  if (sel.contains("op") && sel["op"].is_object() && sel["op"].contains("id"))
    s += fmt::format(", {} at {}", sel["op"]["id"].get<std::string>(),
                     sel["op"].value("python", std::string()));
  return s + ".)";
}

}  // namespace

// One answer being streamed.
struct Job {
  std::mutex mu;
  std::condition_variable cv;
  std::string pending;  // content not yet sent to the page
  std::string text;     // all the content so far
  bool finished = false;
  bool capped = false;  // stopped at kMaxAnswer
  std::atomic<bool> cancel{false};
  std::optional<llm::ChatResult> result;
  std::optional<json> error;  // {"kind", "message"}
  bool finalized = false;     // its turn is written (Impl::finish)
  size_t turn = 0;            // the assistant turn's index when it started
  uint64_t generation = 0;    // the conversation it belongs to (a DELETE starts a new one)
};

// NOLINTNEXTLINE(bugprone-exception-escape): nlohmann::json's destructor may allocate
struct WebAssistant::Impl : std::enable_shared_from_this<WebAssistant::Impl> {
  const trace::Query& q;
  llm::Config base;
  std::string base_error;
  int64_t budget;
  json web = json::object();  // the web layer's settings (this server session)

  std::mutex mu;
  json turns = json::array();  // {"role", "content", "selection", "state", ...}; "sent": what the model got
  size_t dropped = 0;          // turns dropped from the front (kMaxTurns)
  uint64_t generation = 0;
  std::shared_ptr<Job> running;

  Impl(const trace::Query& q, llm::Config base, std::string base_error, int64_t budget)
      : q(q), base(std::move(base)), base_error(std::move(base_error)), budget(budget) {}

  /// The settings in effect: the command's layers, then the web's. Under mu.
  llm::Config effective() const {
    llm::Config c = base;
    llm::apply(c, llm::Layer::web, web, "web settings (this session)");
    return c;
  }

  json settings_json() {
    std::lock_guard<std::mutex> g(mu);
    json out = {{"error", base_error.empty() ? json(nullptr) : json(base_error)}};
    const llm::Config c = effective();
    const json d = llm::describe(c)["settings"];
    const std::string key = d["api_key"]["value"].get<std::string>();
    out["base_url"] = d["base_url"];
    out["model"] = {{"value", c.endpoint.model}, {"source", d["model"]["source"]}};
    out["api_key"] = {{"set", key != "not set"},
                      {"sent", !c.endpoint.api_key.empty()},
                      {"source", d["api_key"]["source"]}};  // never the value
    out["key_withheld"] = c.key_withheld;
    out["max_tokens"] = c.endpoint.max_tokens;
    out["timeout_s"] = c.endpoint.timeout_s;
    out["web"] = {{"base_url", web.value("base_url", json(nullptr))},
                  {"model", web.value("model", json(nullptr))},
                  {"api_key", web.contains("api_key")}};
    return out;
  }

  Response put_settings(const Request& r) {
    json holder;
    const json& body = body_of(r, holder);
    only_fields(body, {"base_url", "model", "api_key"});
    {
      std::lock_guard<std::mutex> g(mu);
      json next = web;
      for (const auto& [k, v] : body.items()) {
        if (v.is_null() || (v.is_string() && v.get_ref<const std::string&>().empty())) {
          next.erase(k);
          continue;
        }
        if (!v.is_string() || v.get_ref<const std::string&>().size() > 4096)
          throw ApiError(400, "bad_parameter", fmt::format("'{}' must be a string of at most 4096 bytes", k));
        next[k] = v;
      }
      llm::Config c = base;
      try {
        llm::apply(c, llm::Layer::web, next, "web settings (this session)");
        llm::Client check(c.endpoint);  // a base URL it cannot use is refused now, not at the next question
      } catch (const llm::LlmError& e) {
        throw ApiError(400, "bad_setting", e.what());  // LlmError never holds the key
      }
      web = std::move(next);
    }
    return Response::json(settings_json());
  }

  json conversation_json() {
    std::lock_guard<std::mutex> g(mu);
    json t = json::array();
    for (const json& turn : turns) {
      json shown = turn;
      shown.erase("sent");
      if (running && shown["state"] == "streaming") shown["content"] = running_text();
      t.push_back(std::move(shown));
    }
    return {{"turns", t}, {"running", running != nullptr}, {"dropped", dropped}};
  }

  std::string running_text() {
    std::lock_guard<std::mutex> g(running->mu);
    return running->text;
  }

  /// Write the job's turn (once) and free the assistant for the next question.
  void finish(const std::shared_ptr<Job>& job) {
    std::lock_guard<std::mutex> g(mu);
    std::lock_guard<std::mutex> gj(job->mu);
    if (job->finalized) return;
    job->finalized = true;
    if (running == job) running.reset();
    if (job->generation != generation || job->turn < dropped) return;  // the conversation was cleared
    json& turn = turns[job->turn - dropped];
    turn["content"] = job->text;
    if (job->error) {
      turn["state"] = "error";
      turn["error"] = *job->error;
    } else if (job->cancel && !job->capped) {
      turn["state"] = "stopped";
    } else {
      turn["state"] = "done";
      turn["finish_reason"] = job->capped ? "length" : job->result ? job->result->finish_reason : "";
      if (job->result) {
        turn["model"] = job->result->model;
        turn["requested_model"] = job->result->requested_model;
        turn["model_mismatch"] = llm::model_differs(*job->result);
        turn["usage"] = job->result->usage;
      }
    }
    if (!job->finished) {  // the stream never ran (the page went away first)
      turn["state"] = "stopped";
      job->cancel = true;
    }
  }

  /// What the page shows next to the analysis whatever the model says: each finding with its op,
  /// line, first program and elements, from the trace (links into the views).
  json evidence(const nlohmann::ordered_json& ctx) const {
    json out = json::array();
    const json L = q.launch(ctx["selected"]["launch"].get<int64_t>());
    int i = 0;
    for (const json& f : L["findings"]) {
      if (++i > 8) break;
      json e = {{"id", fmt::format("finding {}", i)},
                {"kind", f.value("kind", "")},
                {"summary", f.value("summary", "")},
                {"line", f.value("line", 0)},
                {"file", f.value("file", "")}};
      for (const json& s : L["sites"])
        if (f.contains("ttir") && s["ttir_line"] == f["ttir"]["line"]) e["op"] = s["site"];
      if (f.contains("programs") && !f["programs"]["first"].empty()) e["program"] = f["programs"]["first"][0];
      if (f.contains("offsets") && f["offsets"].is_object())
        e["elements"] = {f["offsets"].value("min", 0), f["offsets"].value("max", 0)};
      out.push_back(std::move(e));
    }
    return out;
  }

  Response chat(const Request& r) {
    json holder;
    const json& body = body_of(r, holder);
    only_fields(body, {"question", "launch", "program", "op", "max_tokens"});
    std::string question;
    if (body.contains("question") && !body["question"].is_null()) {
      if (!body["question"].is_string()) throw ApiError(400, "bad_parameter", "'question' must be a string");
      question = body["question"].get<std::string>();
      // Characters (UTF-8 code points: every byte that does not continue a sequence), not bytes.
      const auto characters = static_cast<size_t>(std::count_if(question.begin(), question.end(), [](char c) {
        return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
      }));
      if (characters > kMaxQuestion)
        throw ApiError(413, "question_too_long",
                       fmt::format("the question is over {} characters", kMaxQuestion));
    }
    assist::Selection sel;
    if (body.contains("launch")) sel.launch = int_field(body, "launch", 0, int64_t{1} << 40);
    if (body.contains("program") && !body["program"].is_null()) {
      const json& p = body["program"];
      if (!p.is_array() || p.size() != 3) throw ApiError(400, "bad_parameter", "'program' must be [x, y, z]");
      std::array<int64_t, 3> pid{};
      for (size_t k = 0; k < 3; ++k) {
        if (!p[k].is_number_integer() || p[k].get<int64_t>() < 0 || p[k].get<int64_t>() > (int64_t{1} << 31))
          throw ApiError(400, "bad_parameter", "'program' must be [x, y, z] of non-negative integers");
        pid[k] = p[k].get<int64_t>();
      }
      sel.pid = pid;
    }
    if (body.contains("op") && !body["op"].is_null())
      sel.site = static_cast<int>(int_field(body, "op", 0, 1 << 30));

    auto job = std::make_shared<Job>();
    llm::Endpoint endpoint;
    {
      std::lock_guard<std::mutex> g(mu);
      if (running)
        throw ApiError(409, "busy", "the assistant is answering another question: stop it or wait");
      if (!base_error.empty() && !web.contains("base_url"))
        throw ApiError(503, "llm_not_configured", base_error);
      try {
        endpoint = effective().endpoint;
      } catch (const llm::LlmError& e) {
        throw ApiError(503, "llm_not_configured", e.what());
      }
      running = job;
      job->generation = generation;
    }
    // From here the job holds the assistant: give it back on every way out until the stream owns it.
    struct Release {
      Impl* self;
      std::shared_ptr<Job> job;
      bool armed = true;
      ~Release() {
        if (!armed) return;
        std::lock_guard<std::mutex> g(self->mu);
        if (self->running == job) self->running.reset();
      }
    } release{this, job};

    const int max_tokens =
        body.contains("max_tokens")
            ? static_cast<int>(int_field(body, "max_tokens", 1, std::max(1, endpoint.max_tokens)))
            : endpoint.max_tokens;
    nlohmann::ordered_json ctx;
    try {
      ctx = assist::build_context(q, sel, budget);
    } catch (const trace::Query::NotFound& e) {
      throw ApiError(404, "not_found", e.what());
    } catch (const Error& e) {
      throw ApiError(400, "bad_parameter", e.what());
    }
    const llm::Prompts prompts = assist::prompts(prompts_dir());
    const std::string sent =
        (question.empty() ? prompts.get("analyze") : question) + "\n\n" + selection_note(ctx);
    json selection = {{"launch", ctx["selected"]["launch"]},
                      {"program", ctx["selected"].value("program", json(nullptr))},
                      {"op", nullptr}};
    if (ctx["selected"].contains("op") && ctx["selected"]["op"].is_object())
      selection["op"] = std::stoi(ctx["selected"]["op"]["id"].get<std::string>().substr(3));
    const json ev = evidence(ctx);

    llm::ChatRequest req;
    {
      std::lock_guard<std::mutex> g(mu);
      std::vector<llm::Message> history;
      for (const json& t : turns) {
        if (t["role"] == "user") {
          history.push_back({"user", clip(t["sent"].get<std::string>(), kHistoryChars)});
          continue;
        }
        const std::string content = t["content"].get<std::string>();
        const bool stopped = t["state"] == "stopped";
        if ((t["state"] == "done" || stopped) && !content.empty()) {
          // An answer the user stopped, or one cut at its length limit, goes back marked as incomplete:
          // the model is not told it said something whole that it did not finish.
          std::string sent_back = clip(content, kHistoryChars);
          if (stopped)
            sent_back += kStoppedNote;
          else if (t.value("finish_reason", "") == "length")
            sent_back += kLengthNote;
          history.push_back({"assistant", std::move(sent_back)});
        } else if (!history.empty() && history.back().role == "user") {
          history.pop_back();  // a question whose answer failed or never began: not sent again
        }
      }
      if (history.size() > kHistoryMessages)
        history.erase(history.begin(), history.end() - static_cast<std::ptrdiff_t>(kHistoryMessages));
      if (!history.empty() && history.front().role == "assistant") history.erase(history.begin());
      req.messages = assist::messages(prompts, ctx, sent, history);
      turns.push_back({{"role", "user"},
                       {"content", question.empty() ? "Analyze" : question},
                       {"analyze", question.empty()},
                       {"sent", sent},
                       {"selection", selection}});
      turns.push_back({{"role", "assistant"},
                       {"content", ""},
                       {"state", "streaming"},
                       {"selection", selection},
                       {"evidence", question.empty() ? ev : json::array()},
                       {"cited", json::array()}});
      while (turns.size() > kMaxTurns) {
        turns.erase(turns.begin());
        ++dropped;
      }
      job->turn = dropped + turns.size() - 1;
    }
    req.temperature = 0.2;
    req.max_tokens = max_tokens;

    json start = {{"turn", job->turn},
                  {"selection", selection},
                  {"question", question.empty() ? "Analyze" : question},
                  {"context", {{"tokens", ctx["tokens"]}, {"omitted", ctx["omitted"]}}},
                  {"evidence", question.empty() ? ev : json::array()}};
    // Whatever happens to the stream (never started, the page gone), the turn is written once.
    struct Finish {
      Finish(std::shared_ptr<Impl> s, std::shared_ptr<Job> j) : self(std::move(s)), job(std::move(j)) {}
      Finish(const Finish&) = delete;
      Finish& operator=(const Finish&) = delete;
      ~Finish() {
        try {
          self->finish(job);
        } catch (...) {  // nlohmann::json may throw bad_alloc: the turn is then left as it was
        }
      }
      std::shared_ptr<Impl> self;
      std::shared_ptr<Job> job;
    };
    auto fin = std::make_shared<Finish>(shared_from_this(), job);
    release.armed = false;

    Response out;
    out.content_type = "text/event-stream";
    out.stream = [fin, job, endpoint, req = std::move(req), ctx = std::move(ctx),
                  start = std::move(start)](const server::Writer& write) {
      bool open = write(sse("start", start));
      std::thread worker([&] {
        try {
          llm::Client client(endpoint);
          llm::ChatResult r = client.stream(
              req,
              [&](std::string_view piece) {
                std::lock_guard<std::mutex> g(job->mu);
                job->pending.append(piece);
                job->text.append(piece);
                if (job->text.size() > kMaxAnswer) {
                  job->capped = true;
                  job->cancel = true;
                }
                job->cv.notify_all();
              },
              &job->cancel);
          std::lock_guard<std::mutex> g(job->mu);
          job->result = std::move(r);
        } catch (const llm::LlmError& e) {
          std::lock_guard<std::mutex> g(job->mu);
          if (e.kind != llm::LlmError::Kind::cancelled)
            job->error = json{{"kind", llm::kind_name(e.kind)}, {"status", e.status}, {"message", e.what()}};
        } catch (const std::exception& e) {
          std::lock_guard<std::mutex> g(job->mu);
          job->error = json{{"kind", "internal"}, {"status", 0}, {"message", e.what()}};
        }
        std::lock_guard<std::mutex> g(job->mu);
        job->finished = true;
        job->cv.notify_all();
      });
      for (;;) {
        std::unique_lock<std::mutex> g(job->mu);
        job->cv.wait_for(g, kKeepAlive, [&] { return job->finished || !job->pending.empty(); });
        const bool finished = job->finished;
        std::string piece;
        const size_t hold = finished ? 0 : incomplete_utf8_tail(job->pending);
        piece = job->pending.substr(0, job->pending.size() - hold);
        job->pending.erase(0, piece.size());
        g.unlock();
        if (open) {
          open = piece.empty() ? (finished || write(": keep-alive\n\n"))
                               : write(sse("delta", {{"text", piece}}));
          if (!open) job->cancel = true;  // the page went away: stop the model too
        }
        if (finished) break;
      }
      worker.join();
      json end;
      {
        std::lock_guard<std::mutex> g(job->mu);
        if (job->error) {
          end = *job->error;
        } else {
          end = {{"stopped", job->cancel && !job->capped},
                 {"finish_reason", job->capped   ? "length"
                                   : job->result ? job->result->finish_reason
                                                 : ""},
                 {"model", job->result ? job->result->model : ""},
                 {"requested_model", job->result ? job->result->requested_model : ""},
                 {"model_mismatch", job->result && llm::model_differs(*job->result)},
                 {"model_warning", job->result ? llm::model_warning(*job->result) : ""},
                 {"usage", job->result ? job->result->usage : json(nullptr)},
                 {"cited", assist::cited_ids(job->text, ctx)}};
        }
      }
      {
        // The cited ids go into the turn too (finish() writes the rest).
        std::lock_guard<std::mutex> g(fin->self->mu);
        if (job->generation == fin->self->generation && job->turn >= fin->self->dropped &&
            end.contains("cited"))
          fin->self->turns[job->turn - fin->self->dropped]["cited"] = end["cited"];
      }
      fin->self->finish(job);
      if (open) write(sse(end.contains("kind") ? "error" : "done", end));
    };
    return out;
  }

  Response stop() {
    std::lock_guard<std::mutex> g(mu);
    const bool any = running != nullptr;
    if (any) running->cancel = true;
    return Response::json({{"stopped", any}});
  }

  Response clear() {
    std::lock_guard<std::mutex> g(mu);
    if (running) running->cancel = true;
    turns = json::array();
    dropped = 0;
    ++generation;
    return Response::json({{"turns", json::array()}, {"running", running != nullptr}, {"dropped", 0}});
  }
};

WebAssistant::WebAssistant(const trace::Query& q, llm::Config config, std::string config_error,
                           int64_t budget)
    : impl_(std::make_shared<Impl>(q, std::move(config), std::move(config_error), budget)) {}

WebAssistant::~WebAssistant() {
  std::lock_guard<std::mutex> g(impl_->mu);
  if (impl_->running) impl_->running->cancel = true;
}

std::vector<server::Route> WebAssistant::routes() {
  Impl* m = impl_.get();
  return {
      {"POST", "/api/assist/chat", [m](const Request& r) { return m->chat(r); }},
      {"POST", "/api/assist/stop", [m](const Request&) { return m->stop(); }},
      {"GET", "/api/assist/conversation",
       [m](const Request&) { return Response::json(m->conversation_json()); }},
      {"DELETE", "/api/assist/conversation", [m](const Request&) { return m->clear(); }},
      {"GET", "/api/assist/settings", [m](const Request&) { return Response::json(m->settings_json()); }},
      {"PUT", "/api/assist/settings", [m](const Request& r) { return m->put_settings(r); }},
  };
}

}  // namespace tilescope::cli
