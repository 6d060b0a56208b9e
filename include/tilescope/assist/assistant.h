// tilescope/assist: the kernel-debugging assistant's conversation: the shipped prompts and the messages
// sent to the model (llm/client.h) with a context from the trace (context.h).
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tilescope/llm/client.h"

namespace tilescope::assist {

/// The prompt files shipped with tilescope (prompts/<name>.md in the package, readable and editable):
/// "system" (who the assistant is and how it must cite) and "analyze" (the first-pass bug summary).
class Prompts {
 public:
  /// Read every *.md of `dir`; tilescope::Error naming the folder when it or "system" / "analyze" is
  /// missing.
  explicit Prompts(const std::filesystem::path& dir);
  /// Prompt `name`; tilescope::Error listing the names there are.
  const std::string& get(const std::string& name) const;
  std::vector<std::string> names() const;

 private:
  std::map<std::string, std::string> text_;
};

/// The messages for one question about `context` (an empty question: the analysis prompt), after
/// `history` (earlier user / assistant turns of the same conversation).
std::vector<llm::Message> messages(const Prompts& prompts, const nlohmann::ordered_json& context,
                                   const std::string& question,
                                   const std::vector<llm::Message>& history = {});

/// The ids the answer cites that the context has ("op 24", "finding 1"): for checking that an answer
/// is grounded.
std::vector<std::string> cited_ids(const std::string& answer, const nlohmann::ordered_json& context);

}  // namespace tilescope::assist
