// The web visualizer's assistant (`tilescope view`): its routes on the visualizer's route table, over
// the same LLM client (llm/client.h), settings (llm/config.h), context builder (assist/context.h) and
// prompts (assist/assistant.h) as `tilescope explain` and `ask`.
//
// Routes (all behind the server's token, Host and Origin checks; none takes a file path):
//   POST   /api/assist/chat          {"question"?, "launch", "program": [x, y, z], "op"?, "max_tokens"?}:
//                                    one turn, streamed as Server-Sent Events (start, delta..., done |
//                                    error); no question: the first-pass analysis (prompts/analyze.md)
//   POST   /api/assist/stop          cancel the answer being streamed (the upstream request too); no
//                                    body needed: {"stopped": whether one was streaming}
//   GET    /api/assist/conversation  the session's turns, and whether one is being answered
//   DELETE /api/assist/conversation  start over (stops the answer in flight)
//   GET    /api/assist/settings      base URL, model, whether a key is set (never the key), their sources
//   PUT    /api/assist/settings      {"base_url"?, "model"?, "api_key"?} for this server session only;
//                                    "" or null gives a setting back to the lower layers
// Earlier turns go with a question as history: an answer that was stopped (or cut at its length limit)
// with a note saying it is incomplete; a question whose answer failed or never began, not at all. The
// done event and the turn carry the model the server named, the one asked for, and whether they differ
// (llm::model_differs).
// One answer at a time (409 busy); bodies of at most 64 KiB, questions of at most 8000 characters,
// answers of at most max_tokens and 64 KiB; the conversation keeps its latest 200 turns.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tilescope/llm/config.h"
#include "tilescope/server/server.h"
#include "tilescope/trace/query.h"

namespace tilescope::cli {

class WebAssistant {
 public:
  /// `config`: the settings of every layer below the web's (resolved by the command); `config_error`:
  /// why they could not be resolved (then the assistant answers 503 with it until the page sets a
  /// base URL). `budget`: context tokens per question.
  WebAssistant(const trace::Query& q, llm::Config config, std::string config_error, int64_t budget);
  ~WebAssistant();
  WebAssistant(const WebAssistant&) = delete;
  WebAssistant& operator=(const WebAssistant&) = delete;

  /// The routes above; they refer to this object, which must outlive the server.
  std::vector<server::Route> routes();

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace tilescope::cli
