// The Chat Completions client against a scripted fake server (httplib, in-process): the protocol,
// streaming, retries, and every error a user must be able to act on. The real-model tests are
// tests/python/test_llm.py (a llama.cpp server with a real model).
#include "tilescope/llm/client.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace tilescope::llm {
namespace {

using Kind = LlmError::Kind;

/// A fake OpenAI-compatible server on a free loopback port, with handlers the test sets.
struct Fake {
  httplib::Server http;
  std::thread thread;
  int port = 0;
  std::atomic<int> requests{0};
  std::string last_body, last_auth, last_header;

  Fake() {
    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response&) {
      ++requests;
      last_auth = req.get_header_value("Authorization");
      last_header = req.get_header_value("X-Team");
      return httplib::Server::HandlerResponse::Unhandled;
    });
  }
  void start() {
    port = http.bind_to_any_port("127.0.0.1");
    thread = std::thread([this] { http.listen_after_bind(); });
    while (!http.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~Fake() {
    http.stop();
    if (thread.joinable()) thread.join();
  }
  Endpoint endpoint() const {
    Endpoint e;
    e.base_url = "http://127.0.0.1:" + std::to_string(port) + "/v1";
    e.model = "tiny";
    e.max_retries = 3;
    return e;
  }
  /// POST /v1/chat/completions answers `status` with `body`.
  void answer(int status, std::string body) {
    http.Post("/v1/chat/completions",
              [this, status, body](const httplib::Request& req, httplib::Response& res) {
                last_body = req.body;
                res.status = status;
                res.set_content(body, "application/json");
              });
  }
  /// POST /v1/chat/completions streams `pieces` (raw bytes, written one by one), then closes the stream
  /// (or breaks the connection when `complete` is false).
  void stream(std::vector<std::string> pieces, bool complete = true, int delay_ms = 0) {
    http.Post("/v1/chat/completions",
              [this, pieces, complete, delay_ms](const httplib::Request& req, httplib::Response& res) {
                last_body = req.body;
                res.set_chunked_content_provider(
                    "text/event-stream", [pieces, complete, delay_ms](size_t, httplib::DataSink& sink) {
                      for (const std::string& p : pieces) {
                        if (delay_ms) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
                        if (!sink.write(p.data(), p.size())) return false;
                      }
                      if (!complete) return false;
                      sink.done();
                      return true;
                    });
              });
  }
};

std::string completion(const std::string& content, const std::string& finish = "stop") {
  return nlohmann::json({{"model", "tiny-q4"},
                         {"choices",
                          {{{"index", 0},
                            {"message", {{"role", "assistant"}, {"content", content}}},
                            {"finish_reason", finish}}}},
                         {"usage", {{"prompt_tokens", 5}, {"completion_tokens", 2}}}})
      .dump();
}

std::string chunk(const std::string& content, const char* finish = nullptr) {
  nlohmann::json c = {{"model", "tiny-q4"}, {"choices", {{{"index", 0}, {"delta", {{"content", content}}}}}}};
  if (finish) c["choices"][0]["finish_reason"] = finish;
  return "data: " + c.dump() + "\n\n";
}

ChatRequest hello() {
  ChatRequest r;
  r.messages = {{"system", "be brief"}, {"user", "hello"}};
  r.max_tokens = 8;
  return r;
}

LlmError error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const LlmError& e) {
    return e;
  }
  ADD_FAILURE() << "no LlmError";
  return LlmError(Kind::bad_request, -1, "none");
}

TEST(LlmClient, ChatSendsTheRequestAndParsesTheAnswer) {
  Fake f;
  f.answer(200, completion("Hi."));
  f.start();
  Endpoint e = f.endpoint();
  e.api_key = "sk-test-1";
  e.headers = {{"X-Team", "kernels"}};
  Client c(e);
  ChatRequest r = hello();
  r.temperature = 0.5;
  r.response_format = {{"type", "json_object"}};
  r.extra = {{"grammar", "root ::= \"x\""}};
  ChatResult out = c.chat(r);
  EXPECT_EQ(out.content, "Hi.");
  EXPECT_EQ(out.finish_reason, "stop");
  EXPECT_EQ(out.model, "tiny-q4");
  EXPECT_EQ(out.requested_model, "tiny");  // what the request named: the server answered as another
  EXPECT_TRUE(model_differs(out));
  EXPECT_EQ(out.usage["completion_tokens"], 2);
  auto sent = nlohmann::json::parse(f.last_body);
  EXPECT_EQ(sent["model"], "tiny");
  EXPECT_EQ(sent["stream"], false);
  EXPECT_EQ(sent["max_tokens"], 8);
  EXPECT_EQ(sent["temperature"], 0.5);
  EXPECT_EQ(sent["messages"][1], (nlohmann::json{{"role", "user"}, {"content", "hello"}}));
  EXPECT_EQ(sent["response_format"]["type"], "json_object");
  EXPECT_EQ(sent["grammar"], "root ::= \"x\"");
  EXPECT_EQ(f.last_auth, "Bearer sk-test-1");
  EXPECT_EQ(f.last_header, "kernels");
}

TEST(LlmClient, AnAnswerFromAnotherModelIsNoticed) {
  auto result = [](std::string requested, std::string answered) {
    ChatResult r;
    r.requested_model = std::move(requested);
    r.model = std::move(answered);
    return r;
  };
  EXPECT_FALSE(model_differs(result("smol", "smol")));
  EXPECT_FALSE(model_differs(result("smol", "")));  // a server that names no model: nothing to compare
  // OpenAI answers an alias with its dated snapshot: the same model.
  EXPECT_FALSE(model_differs(result("gpt-4o", "gpt-4o-2024-08-06")));
  EXPECT_FALSE(model_differs(result("gpt-4", "gpt-4-0613")));
  // llama.cpp's server answers with the file it loaded, whatever the request named.
  EXPECT_TRUE(model_differs(result("gpt-4o", "/models/SmolLM2-135M-Instruct.Q4_1.gguf")));
  EXPECT_TRUE(model_differs(result("gpt-4o", "gpt-4o-mini")));  // another model, not a version
  EXPECT_TRUE(model_differs(result("gpt-4o", "gpt-4o-")));
  EXPECT_TRUE(model_differs(result("llama3", "Llama3")));
  EXPECT_EQ(model_warning(result("smol", "smol")), "");
  const std::string w = model_warning(result("gpt-4o", "/m/smol.gguf"));
  EXPECT_NE(w.find("asked for model 'gpt-4o'"), std::string::npos) << w;
  EXPECT_NE(w.find("answered as '/m/smol.gguf'"), std::string::npos) << w;
}

TEST(LlmClient, NoKeyMeansNoAuthorizationHeader) {
  Fake f;
  f.answer(200, completion("ok"));
  f.start();
  Client c(f.endpoint());
  c.chat(hello());
  EXPECT_EQ(f.last_auth, "");
}

TEST(LlmClient, StreamDeliversPiecesInOrderAcrossSplitChunks) {
  Fake f;
  // One event split across writes, CRLF line ends, a comment line, and a usage-only last chunk.
  const std::string a = chunk("Hel"), b = chunk("lo");
  f.stream(
      {": keep-alive\n\n", a.substr(0, 10), a.substr(10),
       "data: " + nlohmann::json({{"choices", {{{"delta", {{"content", ", world"}}}}}}}).dump() + "\r\n\r\n",
       b, chunk("", "stop"),
       "data: " +
           nlohmann::json({{"choices", nlohmann::json::array()}, {"usage", {{"completion_tokens", 3}}}})
               .dump() +
           "\n\n",
       "data: [DONE]\n\n"});
  f.start();
  Client c(f.endpoint());
  std::vector<std::string> pieces;
  ChatResult r = c.stream(hello(), [&](std::string_view p) { pieces.emplace_back(p); });
  EXPECT_EQ(pieces, (std::vector<std::string>{"Hel", ", world", "lo"}));
  EXPECT_EQ(r.content, "Hel, worldlo");
  EXPECT_EQ(r.finish_reason, "stop");
  EXPECT_EQ(r.model, "tiny-q4");
  EXPECT_EQ(r.requested_model, "tiny");
  EXPECT_EQ(r.usage["completion_tokens"], 3);
  auto sent = nlohmann::json::parse(f.last_body);
  EXPECT_EQ(sent["stream"], true);
  EXPECT_EQ(sent["stream_options"]["include_usage"], true);
}

TEST(LlmClient, RetriesRateLimitsAndServerErrorsThenSucceeds) {
  Fake f;
  std::atomic<int> calls{0};
  f.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
    const int n = ++calls;
    res.status = n == 1 ? 429 : n == 2 ? 503 : 200;
    res.set_content(n < 3 ? R"({"error": {"message": "busy"}})" : completion("done"), "application/json");
  });
  f.start();
  Client c(f.endpoint());
  EXPECT_EQ(c.chat(hello()).content, "done");
  EXPECT_EQ(calls.load(), 3);
}

TEST(LlmClient, GivesUpAfterMaxRetries) {
  Fake f;
  f.answer(429, R"({"error": {"message": "slow down"}})");
  f.start();
  Endpoint e = f.endpoint();
  e.max_retries = 1;
  Client c(e);
  LlmError err = error_of([&] { c.chat(hello()); });
  EXPECT_EQ(err.kind, Kind::rate_limited);
  EXPECT_EQ(err.status, 429);
  EXPECT_NE(std::string(err.what()).find("slow down"), std::string::npos);
  EXPECT_EQ(f.requests.load(), 2);
}

TEST(LlmClient, ErrorStatusesBecomeKindsWithTheServersWords) {
  struct Case {
    int status;
    std::string body;
    Kind kind;
    std::string says;
  };
  const std::vector<Case> cases = {
      {401, R"({"error": {"message": "Incorrect API key provided: sk-test-1"}})", Kind::unauthorized,
       "not accepted"},
      {403, R"({"error": "no access"})", Kind::forbidden, "no access"},
      {404, R"({"error": {"message": "The model `tiny` does not exist", "type": "invalid_request_error"}})",
       Kind::unknown_model, "does not know the model 'tiny'"},
      {404, "404 page not found", Kind::bad_request, "ends in /v1"},
      // llama.cpp's server, measured (../shared/reference/llm-test-server.md)
      {400,
       R"x({"error": {"code": 400, "message": "request (9000 tokens) exceeds the available context size (8192 tokens)", "type": "exceed_context_size_error"}})x",
       Kind::context_too_long, "exceeds the available context"},
      {400,
       R"({"error": {"message": "This model's maximum context length is 4096 tokens", "code": "context_length_exceeded"}})",
       Kind::context_too_long, "maximum context length"},
      {400, R"({"object": "error", "message": "bad temperature", "type": "BadRequestError", "code": 400})",
       Kind::bad_request, "bad temperature"},
      {500, R"({"error": {"message": "CUDA out of memory"}})", Kind::server, "out of memory"},
  };
  for (const Case& k : cases) {
    Fake f;
    f.answer(k.status, k.body);
    f.start();
    Endpoint e = f.endpoint();
    e.api_key = "sk-test-1";
    e.max_retries = 0;
    Client c(e);
    LlmError err = error_of([&] { c.chat(hello()); });
    EXPECT_EQ(err.kind, k.kind) << k.body;
    EXPECT_EQ(err.status, k.status) << k.body;
    EXPECT_NE(std::string(err.what()).find(k.says), std::string::npos) << err.what();
    EXPECT_EQ(std::string(err.what()).find("sk-test-1"), std::string::npos)
        << "the key leaked: " << err.what();
  }
}

TEST(LlmClient, MalformedAnswersAreErrorsNotCrashes) {
  for (const std::string body :
       {"not json", "{}", R"({"choices": []})", R"({"choices": [{"text": "x"}]})", "[1, 2]"}) {
    Fake f;
    f.answer(200, body);
    f.start();
    Client c(f.endpoint());
    EXPECT_EQ(error_of([&] { c.chat(hello()); }).kind, Kind::malformed) << body;
  }
  for (const std::string event : {"data: {not json\n\n", "data: {\"id\": 1}\n\n"}) {
    Fake f;
    f.stream({chunk("a"), event, "data: [DONE]\n\n"});
    f.start();
    Client c(f.endpoint());
    EXPECT_EQ(error_of([&] { c.stream(hello(), nullptr); }).kind, Kind::malformed) << event;
  }
  // With a cancel flag (the CLI's Ctrl-C, the web's stop) the request has a watcher thread: a malformed
  // event must still be an error, not the end of the process.
  const std::atomic<bool> cancel{false};
  for (const std::string& event : {std::string("data: {not json\n\n"), std::string(3 << 20, 'x')}) {
    Fake f;
    f.stream({chunk("a"), event, "data: [DONE]\n\n"});
    f.start();
    Client c(f.endpoint());
    EXPECT_EQ(error_of([&] { c.stream(hello(), nullptr, &cancel); }).kind, Kind::malformed) << event.size();
  }
}

TEST(LlmClient, AnErrorEventInTheStreamIsReported) {
  Fake f;
  f.stream({chunk("par"),
            R"(data: {"error": {"message": "context size exceeded", "type": "exceed_context_size_error"}})"
            "\n\n"});
  f.start();
  Client c(f.endpoint());
  LlmError err = error_of([&] { c.stream(hello(), nullptr); });
  EXPECT_EQ(err.kind, Kind::context_too_long);
  EXPECT_NE(std::string(err.what()).find("context size exceeded"), std::string::npos);
}

TEST(LlmClient, AStreamThatStopsEarlyIsTruncated) {
  for (bool broken : {false, true}) {
    Fake f;
    f.stream({chunk("The answer "), chunk("is")}, /*complete=*/!broken);  // no finish_reason, no [DONE]
    f.start();
    Client c(f.endpoint());
    std::string got;
    LlmError err = error_of([&] { c.stream(hello(), [&](std::string_view p) { got += p; }); });
    EXPECT_EQ(err.kind, Kind::truncated) << "broken connection: " << broken << ": " << err.what();
    EXPECT_EQ(got, "The answer is");
    EXPECT_EQ(f.requests.load(), 1) << "content already reached the caller: no retry";
  }
}

TEST(LlmClient, AServerThatIgnoresStreamStillAnswers) {
  Fake f;
  f.answer(200, completion("whole answer"));
  f.start();
  Client c(f.endpoint());
  std::string got;
  ChatResult r = c.stream(hello(), [&](std::string_view p) { got += p; });
  EXPECT_EQ(r.content, "whole answer");
  EXPECT_EQ(got, "whole answer");
}

TEST(LlmClient, CancelStopsASlowStream) {
  Fake f;
  std::vector<std::string> many;
  for (int i = 0; i < 100; ++i) many.push_back(chunk("x"));
  f.stream(many, true, /*delay_ms=*/50);
  f.start();
  Client c(f.endpoint());
  std::atomic<bool> cancel{false};
  int pieces = 0;
  LlmError err = error_of([&] {
    c.stream(
        hello(),
        [&](std::string_view) {
          if (++pieces == 2) cancel = true;
        },
        &cancel);
  });
  EXPECT_EQ(err.kind, Kind::cancelled);
  EXPECT_LT(pieces, 100);
}

TEST(LlmClient, CancelWhileWaitingForTheServer) {
  Fake f;
  f.http.Post("/v1/chat/completions", [](const httplib::Request&, httplib::Response& res) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    res.set_content(completion("late"), "application/json");
  });
  f.start();
  Client c(f.endpoint());
  std::atomic<bool> cancel{false};
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancel = true;
  });
  LlmError err = error_of([&] { c.chat(hello(), &cancel); });
  t.join();
  EXPECT_EQ(err.kind, Kind::cancelled);
}

TEST(LlmClient, ASilentServerTimesOut) {
  Fake f;
  f.http.Post("/v1/chat/completions", [](const httplib::Request&, httplib::Response& res) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    res.set_content(completion("late"), "application/json");
  });
  f.start();
  Endpoint e = f.endpoint();
  e.timeout_s = 0.3;
  e.max_retries = 0;
  Client c(e);
  LlmError err = error_of([&] { c.chat(hello()); });
  EXPECT_EQ(err.kind, Kind::timeout) << err.what();
  EXPECT_NE(std::string(err.what()).find("0.3 s"), std::string::npos) << err.what();
}

TEST(LlmClient, ARefusedConnectionSaysSo) {
  int closed_port;
  {
    Fake f;
    f.start();
    closed_port = f.port;
  }
  Endpoint e;
  e.base_url = "http://127.0.0.1:" + std::to_string(closed_port) + "/v1";
  e.model = "m";
  e.max_retries = 0;
  Client c(e);
  LlmError err = error_of([&] { c.chat(hello()); });
  EXPECT_EQ(err.kind, Kind::connection);
  EXPECT_NE(std::string(err.what()).find("is the server running"), std::string::npos);
}

TEST(LlmClient, TheModelDefaultsToTheFirstTheServerLists) {
  Fake f;
  f.http.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"object": "list", "data": [{"id": "smol-135m"}, {"id": "other"}]})",
                    "application/json");
  });
  f.answer(200, completion("ok"));
  f.start();
  Endpoint e = f.endpoint();
  e.model.clear();
  Client c(e);
  EXPECT_EQ(c.models(), (std::vector<std::string>{"smol-135m", "other"}));
  c.chat(hello());
  EXPECT_EQ(nlohmann::json::parse(f.last_body)["model"], "smol-135m");
}

TEST(LlmClient, TheDebugLogHasRequestsAndResponsesButNeverTheKey) {
  Fake f;
  f.answer(401, R"({"error": {"message": "Incorrect API key provided: sk-live-XYZ"}})");
  f.start();
  const auto log =
      std::filesystem::temp_directory_path() / ("tilescope-llm-log-" + std::to_string(f.port) + ".jsonl");
  std::filesystem::remove(log);
  Endpoint e = f.endpoint();
  e.api_key = "sk-live-XYZ";
  e.debug_log = log.string();
  e.max_retries = 0;
  Client c(e);
  error_of([&] { c.chat(hello()); });
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  std::filesystem::remove(log);
  EXPECT_NE(text.find("\"hello\""), std::string::npos) << text;
  EXPECT_NE(text.find("401"), std::string::npos) << text;
  EXPECT_NE(text.find("[redacted]"), std::string::npos) << text;
  EXPECT_EQ(text.find("sk-live-XYZ"), std::string::npos) << text;
}

TEST(LlmClient, BadBaseUrlsAreRejectedUpFront) {
  for (const char* url : {"127.0.0.1:8080/v1", "ftp://host/v1", "http://", "http://host/v1 x", ""}) {
    Endpoint e;
    e.base_url = url;
    EXPECT_EQ(error_of([&] { Client c(e); }).kind, Kind::bad_request) << url;
  }
  Endpoint e;
  e.base_url = "https://api.example.com/v1/";
  EXPECT_NO_THROW(Client c(e));
}

}  // namespace
}  // namespace tilescope::llm
