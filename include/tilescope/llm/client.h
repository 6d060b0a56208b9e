// tilescope/llm: an OpenAI-compatible Chat Completions client (the assistant and the kernel generator
// talk to models through it).
//
// Protocol: OpenAI's Chat Completions API (POST {base_url}/chat/completions, GET {base_url}/models),
// which OpenAI, vLLM, llama.cpp's server, Ollama (/v1) and other servers implement. Streaming is
// Server-Sent Events: `data: {chunk}` lines, each chunk's choices[0].delta.content, ended by
// `data: [DONE]`.
//
// Errors are LlmError with a kind and a message a user can act on; the API key never appears in one
// (nor in a log line: the debug log redacts it).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tilescope/ir/diag.h"

namespace tilescope::llm {

/// Where and how to reach a model (see config.h for where each value comes from).
struct Endpoint {
  std::string base_url = "http://127.0.0.1:8080/v1";  // scheme, host, port and path prefix
  std::string model;                                  // empty: the first model GET /models lists
  std::string api_key;                                // empty: no Authorization header
  std::map<std::string, std::string> headers;         // extra request headers
  double timeout_s = 120;         // a response (or the gap between two streamed bytes) may take this long
  double connect_timeout_s = 10;  // to open the connection
  int max_retries = 3;            // on 429, 5xx, refused or reset connections; backoff 0.5 s, 1 s, 2 s, ...
  std::string debug_log;          // a JSONL file of requests and responses (key redacted); empty: none
  int max_tokens = 1024;          // the longest answer the assistant asks for, in tokens
};

struct Message {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

// NOLINTNEXTLINE(bugprone-exception-escape): nlohmann::json's destructor may allocate
struct ChatRequest {
  std::vector<Message> messages;
  std::optional<int> max_tokens;
  std::optional<double> temperature;
  /// OpenAI's `response_format` ({"type": "json_schema", "json_schema": {...}} or {"type":
  /// "json_object"}); null: free text.
  nlohmann::json response_format;
  /// More body fields, merged last (e.g. llama.cpp's "grammar"); must be an object or null.
  nlohmann::json extra;
};

// NOLINTNEXTLINE(bugprone-exception-escape): nlohmann::json's destructor may allocate
struct ChatResult {
  std::string content;
  std::string finish_reason;    // "stop", "length" (cut at max_tokens: the content is incomplete), ...
  std::string model;            // as the server names it
  std::string requested_model;  // the model the request named (Endpoint::model, else the first listed)
  nlohmann::json usage;         // {"prompt_tokens", "completion_tokens", ...} when the server sends them
};

/// Whether the server answered as a model other than the one requested: a server that serves one model
/// whatever the request names (llama.cpp's server answers with its own model's name) would otherwise go
/// unnoticed. Not a mismatch: no name in the answer, the same name, or the requested name followed by
/// "-" and a version of digits and dashes (OpenAI answers `gpt-4o` as `gpt-4o-2024-08-06`).
bool model_differs(const ChatResult& result);
/// The warning for people when model_differs: "asked for model 'A', but the server answered as 'B'
/// (...)"; empty otherwise.
std::string model_warning(const ChatResult& result);

class LlmError : public Error {
 public:
  enum class Kind {
    unauthorized,      // 401: no key or a wrong one
    forbidden,         // 403
    unknown_model,     // 404, or the server says the model does not exist
    context_too_long,  // the prompt does not fit the model's context
    rate_limited,      // 429 after the retries
    server,            // 5xx after the retries, or another error status
    connection,        // refused, reset, DNS, TLS
    timeout,           // no response (or no streamed byte) within the timeout
    malformed,         // not the protocol: a body that is not JSON, a chunk without choices
    truncated,         // the stream ended without [DONE] or a finish_reason
    cancelled,         // the caller's cancel flag
    bad_request,       // other 4xx
  };
  LlmError(Kind kind, int status, const std::string& message) : Error(message), kind(kind), status(status) {}
  const Kind kind;
  const int status;  // the HTTP status; 0 when there was none
};

/// The name of `kind` ("unauthorized", ...), for JSON output.
std::string_view kind_name(LlmError::Kind kind);

class Client {
 public:
  /// Throws LlmError (bad_request) for a base URL that is not http(s)://host[:port][/path].
  explicit Client(Endpoint endpoint);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  /// One completion (stream: false).
  ChatResult chat(const ChatRequest& request, const std::atomic<bool>* cancel = nullptr);
  /// One completion streamed: `on_delta` gets each piece of content as it arrives; the result holds
  /// all of it. A retry happens only before the first piece arrived.
  ChatResult stream(const ChatRequest& request, const std::function<void(std::string_view)>& on_delta,
                    const std::atomic<bool>* cancel = nullptr);
  /// The model ids the server lists (GET /models).
  std::vector<std::string> models(const std::atomic<bool>* cancel = nullptr);
  /// The model requests go to: Endpoint::model, else the first of models() (asked once).
  std::string model(const std::atomic<bool>* cancel = nullptr);

  const Endpoint& endpoint() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tilescope::llm
