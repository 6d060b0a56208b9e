// The Chat Completions client (client.h) over cpp-httplib (built with OpenSSL in Debian: https works).
#include "tilescope/llm/client.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <fstream>
#include <mutex>
#include <regex>
#include <thread>

namespace tilescope::llm {

std::string_view kind_name(LlmError::Kind kind) {
  switch (kind) {
    case LlmError::Kind::unauthorized: return "unauthorized";
    case LlmError::Kind::forbidden: return "forbidden";
    case LlmError::Kind::unknown_model: return "unknown_model";
    case LlmError::Kind::context_too_long: return "context_too_long";
    case LlmError::Kind::rate_limited: return "rate_limited";
    case LlmError::Kind::server: return "server";
    case LlmError::Kind::connection: return "connection";
    case LlmError::Kind::timeout: return "timeout";
    case LlmError::Kind::malformed: return "malformed";
    case LlmError::Kind::truncated: return "truncated";
    case LlmError::Kind::cancelled: return "cancelled";
    case LlmError::Kind::bad_request: return "bad_request";
  }
  return "error";
}

namespace {

using Kind = LlmError::Kind;
using Clock = std::chrono::steady_clock;

constexpr size_t kMaxBody = size_t{64} << 20;  // a response larger than this is not a chat answer

std::string replace_all(std::string s, const std::string& what, const std::string& with) {
  if (what.empty()) return s;
  for (size_t i = s.find(what); i != std::string::npos; i = s.find(what, i + with.size()))
    s.replace(i, what.size(), with);
  return s;
}

std::string shorten(std::string s, size_t n = 300) {
  if (s.size() > n) s = s.substr(0, n) + "...";
  return s;
}

/// The server's own words from an error body: OpenAI / vLLM / llama.cpp {"error": {"message"}},
/// Ollama {"error": "..."}, vLLM {"message": ...}; else the body itself.
std::string server_message(const std::string& body, std::string* type = nullptr) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_discarded() && j.is_object()) {
    if (auto e = j.find("error"); e != j.end()) {
      if (e->is_string()) return e->get<std::string>();
      if (e->is_object()) {
        if (type) {
          for (const char* k : {"type", "code"})
            if (auto t = e->find(k); t != e->end() && t->is_string()) *type += t->get<std::string>() + " ";
        }
        if (auto m = e->find("message"); m != e->end() && m->is_string()) return m->get<std::string>();
      }
    }
    if (auto m = j.find("message"); m != j.end() && m->is_string()) return m->get<std::string>();
  }
  return body;
}

bool mentions_context(const std::string& text) {
  std::string t = text;
  for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return t.find("context") != std::string::npos &&
         (t.find("exceed") != std::string::npos || t.find("length") != std::string::npos ||
          t.find("too long") != std::string::npos || t.find("too many tokens") != std::string::npos);
}

/// One parsed Server-Sent Events stream of chat chunks.
// NOLINTNEXTLINE(bugprone-exception-escape): nlohmann::json's destructor may allocate
struct SseParser {
  static constexpr size_t kMaxEvent = size_t{1} << 20;  // bytes of one line or one event
  std::string buffer;                                   // bytes not yet split into lines
  std::string data;                                     // the data lines of the event being read
  bool done = false;                                    // [DONE] seen
  ChatResult result;
  const std::function<void(std::string_view)>* on_delta = nullptr;
  bool any_delta = false;

  /// Take the next bytes of the body; throws LlmError (malformed, server) on a bad or error event.
  void feed(const char* p, size_t n) {
    buffer.append(p, n);
    size_t start = 0;
    for (size_t nl; (nl = buffer.find('\n', start)) != std::string::npos; start = nl + 1) {
      std::string_view line(buffer.data() + start, nl - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      on_line(line);
    }
    buffer.erase(0, start);
    // A stream of garbage (no line ends, or data lines that never end an event) must not grow without
    // bound: no real chunk comes near this.
    if (buffer.size() > kMaxEvent || data.size() > kMaxEvent)
      throw LlmError(
          Kind::malformed, 200,
          fmt::format("the server's stream has a line or event over {} KiB: not Server-Sent Events",
                      kMaxEvent >> 10));
  }
  void finish() {
    if (!buffer.empty()) {
      on_line(buffer);
      buffer.clear();
    }
    on_line("");
  }
  void on_line(std::string_view line) {
    if (line.empty()) {  // end of an event
      if (!data.empty()) on_event(data);
      data.clear();
      return;
    }
    if (line.front() == ':') return;  // a comment (keep-alive)
    if (line.substr(0, 5) == "data:") {
      line.remove_prefix(5);
      if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
      if (!data.empty()) data += '\n';
      data += line;
    }  // other fields (event:, id:, retry:) carry nothing for chat
  }
  void on_event(const std::string& payload) {
    if (done) return;
    if (payload == "[DONE]") {
      done = true;
      return;
    }
    auto j = nlohmann::json::parse(payload, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      throw LlmError(Kind::malformed, 200,
                     "the server's stream has an event that is not JSON: " + shorten(payload, 120));
    if (j.contains("error")) {
      std::string type;
      const std::string msg = server_message(payload, &type);
      throw LlmError(mentions_context(msg + type) ? Kind::context_too_long : Kind::server, 200,
                     "the server reported an error in its stream: " + shorten(msg));
    }
    if (auto m = j.find("model"); m != j.end() && m->is_string()) result.model = m->get<std::string>();
    if (auto u = j.find("usage"); u != j.end() && u->is_object()) result.usage = *u;
    auto ch = j.find("choices");
    if (ch == j.end() || !ch->is_array())
      throw LlmError(Kind::malformed, 200,
                     "the server's stream has a chunk without choices: " + shorten(payload, 120));
    if (ch->empty()) return;  // the usage-only last chunk
    const auto& c = (*ch)[0];
    if (auto d = c.find("delta"); d != c.end() && d->is_object()) {
      if (auto t = d->find("content");
          t != d->end() && t->is_string() && !t->get_ref<const std::string&>().empty()) {
        const std::string& piece = t->get_ref<const std::string&>();
        result.content += piece;
        any_delta = true;
        if (on_delta && *on_delta) (*on_delta)(piece);
      }
    }
    if (auto f = c.find("finish_reason"); f != c.end() && f->is_string())
      result.finish_reason = f->get<std::string>();
  }
};

std::string transport_error(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection: return "could not connect";
    case httplib::Error::SSLConnection: return "the TLS handshake failed";
    case httplib::Error::SSLLoadingCerts: return "the system's CA certificates could not be loaded";
    case httplib::Error::SSLServerVerification: return "the server's TLS certificate did not verify";
    case httplib::Error::Read: return "the connection closed before an answer";
    case httplib::Error::Write: return "the request could not be sent";
    default: return httplib::to_string(e);
  }
}

ChatResult parse_completion(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  auto bad = [&](const std::string& why) {
    return LlmError(
        Kind::malformed, 200,
        "the server's answer is not a Chat Completions response (" + why + "): " + shorten(body, 160));
  };
  if (j.is_discarded() || !j.is_object()) throw bad("not JSON");
  auto ch = j.find("choices");
  if (ch == j.end() || !ch->is_array() || ch->empty() || !(*ch)[0].is_object()) throw bad("no choices");
  const auto& c = (*ch)[0];
  ChatResult r;
  auto msg = c.find("message");
  if (msg == c.end() || !msg->is_object()) throw bad("no message");
  if (auto t = msg->find("content"); t != msg->end() && t->is_string()) r.content = t->get<std::string>();
  if (auto f = c.find("finish_reason"); f != c.end() && f->is_string())
    r.finish_reason = f->get<std::string>();
  if (auto m = j.find("model"); m != j.end() && m->is_string()) r.model = m->get<std::string>();
  if (auto u = j.find("usage"); u != j.end() && u->is_object()) r.usage = *u;
  return r;
}

}  // namespace

struct Client::Impl {
  Endpoint ep;
  std::string origin;  // scheme://host:port
  std::string prefix;  // path prefix without a trailing '/'
  std::string resolved_model;
  std::mutex mu;  // resolved_model, the debug log

  void log(const nlohmann::json& entry) {
    if (ep.debug_log.empty()) return;
    std::string line = entry.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    line = replace_all(line, ep.api_key, "[redacted]");  // the key never reaches the log
    std::lock_guard<std::mutex> g(mu);
    std::ofstream f(ep.debug_log, std::ios::app);
    f << line << '\n';
  }

  std::string redact(std::string s) const { return replace_all(std::move(s), ep.api_key, "[redacted]"); }

  LlmError status_error(int status, const std::string& body) const {
    std::string type;
    const std::string msg = redact(shorten(server_message(body, &type)));
    const std::string where = ep.base_url;
    switch (status) {
      case 401:
        return LlmError(Kind::unauthorized, status,
                        fmt::format("{} refused the request as unauthorized (401; the API key is {}): {}",
                                    where, ep.api_key.empty() ? "not set" : "set but not accepted", msg));
      case 403:
        return LlmError(Kind::forbidden, status,
                        fmt::format("{} forbids this request (403): {}", where, msg));
      case 404:
        if (msg.find("model") != std::string::npos || type.find("model") != std::string::npos)
          return LlmError(Kind::unknown_model, status,
                          fmt::format("{} does not know the model '{}' (404): {}", where, ep.model, msg));
        return LlmError(
            Kind::bad_request, status,
            fmt::format("{}: no such endpoint (404; base_url usually ends in /v1): {}", where, msg));
      case 413:
        return LlmError(Kind::context_too_long, status,
                        fmt::format("{}: the request is too large (413): {}", where, msg));
      case 429:
        return LlmError(Kind::rate_limited, status, fmt::format("{} is rate limiting (429): {}", where, msg));
      default: break;
    }
    if (mentions_context(msg + " " + type))
      return LlmError(Kind::context_too_long, status,
                      fmt::format("the prompt does not fit the model's context ({}): {}", status, msg));
    if (status >= 500)
      return LlmError(Kind::server, status, fmt::format("{} failed ({}): {}", where, status, msg));
    if (msg.find("model") != std::string::npos && msg.find("not") != std::string::npos)
      return LlmError(Kind::unknown_model, status,
                      fmt::format("{}: the model '{}' ({}): {}", where, ep.model, status, msg));
    return LlmError(Kind::bad_request, status,
                    fmt::format("{} rejected the request ({}): {}", where, status, msg));
  }

  static bool retryable(const LlmError& e) {
    return e.kind == Kind::rate_limited || e.kind == Kind::connection ||
           (e.kind == Kind::server && e.status >= 500 && e.status != 501);
  }

  /// Sleep `seconds`, waking early (and throwing) when cancelled.
  static void backoff(double seconds, const std::atomic<bool>* cancel) {
    const auto until = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < until) {
      if (cancel && cancel->load()) throw LlmError(Kind::cancelled, 0, "cancelled");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  struct Reply {
    int status = 0;
    std::string body;  // the error body, or the whole body when not streamed
    std::string retry_after;
  };

  /// One HTTP exchange. `chunk` (may be null) gets a 200 response's body as it arrives.
  Reply send(const std::string& method, const std::string& path, const std::string& body,
             const std::function<void(const char*, size_t)>& chunk, const std::atomic<bool>* cancel) {
    httplib::Client cli(origin);
    cli.set_connection_timeout(std::chrono::duration<double>(ep.connect_timeout_s));
    cli.set_read_timeout(std::chrono::duration<double>(ep.timeout_s));
    cli.set_write_timeout(std::chrono::duration<double>(ep.timeout_s));
    cli.enable_server_certificate_verification(true);
    httplib::Request req;
    req.method = method;
    req.path = prefix + path;
    if (!ep.api_key.empty()) req.headers.emplace("Authorization", "Bearer " + ep.api_key);
    for (const auto& [k, v] : ep.headers) req.headers.emplace(k, v);
    if (!body.empty()) {
      req.headers.emplace("Content-Type", "application/json");
      req.body = body;
    }
    Reply reply;
    std::atomic<bool> stop_watch{false}, cancelled{false};
    std::exception_ptr chunk_error;
    req.response_handler = [&](const httplib::Response& r) {
      reply.status = r.status;
      reply.retry_after = r.get_header_value("Retry-After");
      return true;
    };
    req.content_receiver = [&](const char* p, size_t n, uint64_t, uint64_t) {
      if (cancel && cancel->load()) {
        cancelled = true;
        return false;
      }
      if (reply.status == 200 && chunk) {
        // An error in the stream (a malformed event) is rethrown once the watcher below has been
        // joined: thrown through httplib it would leave that thread running, and end the process.
        try {
          chunk(p, n);
        } catch (...) {
          chunk_error = std::current_exception();
          return false;
        }
      } else {
        if (reply.body.size() + n > kMaxBody) return false;
        reply.body.append(p, n);
      }
      return true;
    };
    // A cancel while the request waits for the server: stop the client from a watcher thread.
    std::thread watcher;
    if (cancel)
      watcher = std::thread([&] {
        while (!stop_watch.load()) {
          if (cancel->load()) {
            cancelled = true;
            cli.stop();
            return;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
      });
    const auto t0 = Clock::now();
    httplib::Response res;
    httplib::Error err = httplib::Error::Success;
    const bool ok = cli.send(req, res, err);
    stop_watch = true;
    if (watcher.joinable()) watcher.join();
    if (chunk_error) std::rethrow_exception(chunk_error);
    const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    if (cancelled || (cancel && cancel->load())) throw LlmError(Kind::cancelled, 0, "cancelled");
    if (!ok) {
      if (err == httplib::Error::ConnectionTimeout)
        throw LlmError(Kind::timeout, 0,
                       fmt::format("{}: no connection within {} s", ep.base_url, ep.connect_timeout_s));
      if (err == httplib::Error::Read && elapsed >= ep.timeout_s * 0.9)
        throw LlmError(Kind::timeout, reply.status,
                       fmt::format("{}: no answer within {} s (timeout_s)", ep.base_url, ep.timeout_s));
      if (err == httplib::Error::Canceled && reply.body.size() >= kMaxBody)
        throw LlmError(Kind::malformed, reply.status,
                       fmt::format("{}: the response is larger than {} MiB", ep.base_url, kMaxBody >> 20));
      if (reply.status != 0 && err == httplib::Error::Read)
        throw LlmError(Kind::truncated, reply.status,
                       fmt::format("{}: the connection broke in the middle of the response", ep.base_url));
      throw LlmError(Kind::connection, 0,
                     fmt::format("cannot reach {} ({}): is the server running, and is base_url right?",
                                 ep.base_url, transport_error(err)));
    }
    reply.status = res.status;
    return reply;
  }

  /// `attempt` with retries on retryable errors (before any streamed content reached the caller).
  template <class F>
  auto with_retries(F&& attempt, const std::atomic<bool>* cancel, const bool* delivered = nullptr) {
    for (int i = 0;; ++i) {
      try {
        return attempt();
      } catch (const LlmError& e) {
        if (!retryable(e) || i >= ep.max_retries || (delivered && *delivered)) throw;
        log({{"retry", i + 1}, {"after_error", e.what()}});
        backoff(0.5 * std::pow(2.0, i), cancel);
      }
    }
  }

  nlohmann::json body_of(const ChatRequest& r, const std::string& model, bool stream) const {
    nlohmann::json b = {{"model", model}, {"messages", nlohmann::json::array()}, {"stream", stream}};
    for (const Message& m : r.messages) b["messages"].push_back({{"role", m.role}, {"content", m.content}});
    if (r.max_tokens) b["max_tokens"] = *r.max_tokens;
    if (r.temperature) b["temperature"] = *r.temperature;
    if (!r.response_format.is_null()) b["response_format"] = r.response_format;
    if (stream) b["stream_options"] = {{"include_usage", true}};
    if (r.extra.is_object())
      for (const auto& [k, v] : r.extra.items()) b[k] = v;
    return b;
  }
};

Client::Client(Endpoint endpoint) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.ep = std::move(endpoint);
  static const std::regex url(R"(^(https?://[^/?#\s]+)(/[^?#\s]*)?$)", std::regex::icase);
  std::smatch mt;
  if (!std::regex_match(m.ep.base_url, mt, url))
    throw LlmError(
        Kind::bad_request, 0,
        fmt::format("base_url '{}' is not an http(s) URL such as http://127.0.0.1:8080/v1", m.ep.base_url));
  m.origin = mt[1].str();
  m.prefix = mt[2].str();
  while (!m.prefix.empty() && m.prefix.back() == '/') m.prefix.pop_back();
  if (m.ep.timeout_s <= 0 || m.ep.connect_timeout_s <= 0 || m.ep.max_retries < 0)
    throw LlmError(Kind::bad_request, 0, "timeouts must be positive and max_retries not negative");
}

Client::~Client() = default;

const Endpoint& Client::endpoint() const { return impl_->ep; }

std::vector<std::string> Client::models(const std::atomic<bool>* cancel) {
  Impl& m = *impl_;
  return m.with_retries(
      [&] {
        Impl::Reply r = m.send("GET", "/models", "", nullptr, cancel);
        m.log({{"request", "GET " + m.ep.base_url + "/models"},
               {"status", r.status},
               {"response", shorten(r.body, 4000)}});
        if (r.status != 200) throw m.status_error(r.status, r.body);
        auto j = nlohmann::json::parse(r.body, nullptr, false);
        std::vector<std::string> ids;
        if (!j.is_discarded() && j.is_object() && j.contains("data") && j["data"].is_array())
          for (const auto& d : j["data"])
            if (d.is_object() && d.contains("id") && d["id"].is_string())
              ids.push_back(d["id"].get<std::string>());
        if (j.is_discarded() || !j.is_object() || !j.contains("data"))
          throw LlmError(
              Kind::malformed, 200,
              "the server's model list is not an OpenAI /models response: " + shorten(r.body, 160));
        return ids;
      },
      cancel);
}

std::string Client::model(const std::atomic<bool>* cancel) {
  Impl& m = *impl_;
  {
    std::lock_guard<std::mutex> g(m.mu);
    if (!m.ep.model.empty()) return m.ep.model;
    if (!m.resolved_model.empty()) return m.resolved_model;
  }
  std::vector<std::string> ids = models(cancel);
  if (ids.empty())
    throw LlmError(Kind::unknown_model, 0,
                   fmt::format("{} lists no model: set the model (TILESCOPE_LLM_MODEL)", m.ep.base_url));
  std::lock_guard<std::mutex> g(m.mu);
  m.resolved_model = ids.front();
  return m.resolved_model;
}

ChatResult Client::chat(const ChatRequest& request, const std::atomic<bool>* cancel) {
  Impl& m = *impl_;
  const std::string requested = model(cancel);
  const std::string body =
      m.body_of(request, requested, false).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  ChatResult out = m.with_retries(
      [&] {
        Impl::Reply r = m.send("POST", "/chat/completions", body, nullptr, cancel);
        m.log({{"request", nlohmann::json::parse(body)},
               {"status", r.status},
               {"response", shorten(r.body, 1 << 20)}});
        if (r.status != 200) throw m.status_error(r.status, r.body);
        return parse_completion(r.body);
      },
      cancel);
  out.requested_model = requested;
  return out;
}

ChatResult Client::stream(const ChatRequest& request, const std::function<void(std::string_view)>& on_delta,
                          const std::atomic<bool>* cancel) {
  Impl& m = *impl_;
  const std::string requested = model(cancel);
  const std::string body =
      m.body_of(request, requested, true).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  bool delivered = false;
  ChatResult out = m.with_retries(
      [&] {
        SseParser sse;
        sse.on_delta = &on_delta;
        std::string raw;  // the first bytes, for the log and for servers that answer without SSE
        Impl::Reply r;
        try {
          r = m.send(
              "POST", "/chat/completions", body,
              [&](const char* p, size_t n) {
                if (raw.size() < 65536) raw.append(p, std::min(n, 65536 - raw.size()));
                sse.feed(p, n);
                delivered = delivered || sse.any_delta;
              },
              cancel);
        } catch (const LlmError& e) {
          if (e.kind == Kind::truncated || (e.kind == Kind::timeout && sse.any_delta))
            throw LlmError(
                e.kind, e.status,
                fmt::format("{} (after {} characters of the answer)", e.what(), sse.result.content.size()));
          throw;
        }
        m.log({{"request", nlohmann::json::parse(body)},
               {"status", r.status},
               {"response", r.status == 200 ? shorten(raw, 1 << 20) : r.body}});
        if (r.status != 200) throw m.status_error(r.status, r.body);
        sse.finish();
        if (!sse.done && sse.result.finish_reason.empty()) {
          // A server that ignored "stream": a plain completion.
          if (!sse.any_delta && raw.find("data:") == std::string::npos) {
            ChatResult whole = parse_completion(raw);
            if (on_delta && !whole.content.empty()) on_delta(whole.content);
            return whole;
          }
          throw LlmError(
              Kind::truncated, 200,
              fmt::format("{}: the stream ended before the answer did (no finish_reason, no [DONE]; "
                          "{} characters received)",
                          m.ep.base_url, sse.result.content.size()));
        }
        return sse.result;
      },
      cancel, &delivered);
  out.requested_model = requested;
  return out;
}

bool model_differs(const ChatResult& r) {
  if (r.model.empty() || r.model == r.requested_model) return false;
  const std::string& want = r.requested_model;
  if (r.model.size() > want.size() + 1 && r.model.compare(0, want.size(), want) == 0 &&
      r.model[want.size()] == '-') {
    const std::string_view version = std::string_view(r.model).substr(want.size() + 1);
    if (std::all_of(version.begin(), version.end(),
                    [](char c) { return c == '-' || (c >= '0' && c <= '9'); }))
      return false;  // a dated snapshot of the requested model
  }
  return true;
}

std::string model_warning(const ChatResult& r) {
  if (!model_differs(r)) return "";
  return fmt::format(
      "asked for model '{}', but the server answered as '{}' (a server that serves one model whatever the "
      "request names, as llama.cpp's does, ignores the model setting)",
      r.requested_model, r.model);
}

}  // namespace tilescope::llm
