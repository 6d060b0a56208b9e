// tilescope/assist: the kernel-debugging assistant's conversation: the shipped prompts and the messages
// sent to the model (llm/client.h) with a context from the trace (context.h).
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tilescope/llm/client.h"
#include "tilescope/llm/prompts.h"

namespace tilescope::assist {

/// The assistant's prompts (llm/prompts.h): "system" (who the assistant is and how it must cite) and
/// "analyze" (the first-pass bug summary).
inline llm::Prompts prompts(const std::filesystem::path& dir) {
  return llm::Prompts(dir, {"system", "analyze"});
}

/// The messages for one question about `context` (an empty question: the analysis prompt), after
/// `history` (earlier user / assistant turns of the same conversation).
std::vector<llm::Message> messages(const llm::Prompts& prompts, const nlohmann::ordered_json& context,
                                   const std::string& question,
                                   const std::vector<llm::Message>& history = {});

/// The ids the answer cites that the context has ("op 24", "finding 1"): for checking that an answer
/// is grounded.
std::vector<std::string> cited_ids(const std::string& answer, const nlohmann::ordered_json& context);

}  // namespace tilescope::assist
