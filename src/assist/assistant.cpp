// The assistant's conversation (assistant.h).
#include "tilescope/assist/assistant.h"

#include <fmt/format.h>

#include <regex>
#include <set>

#include "tilescope/ir/diag.h"

namespace tilescope::assist {

using json = nlohmann::json;

std::vector<llm::Message> messages(const llm::Prompts& prompts, const nlohmann::ordered_json& context,
                                   const std::string& question, const std::vector<llm::Message>& history) {
  std::vector<llm::Message> m;
  m.push_back({"system", prompts.get("system") + "\nThe record of the launch, as JSON:\n" +
                             context.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace)});
  m.insert(m.end(), history.begin(), history.end());
  m.push_back({"user", question.empty() ? prompts.get("analyze") : question});
  return m;
}

std::vector<std::string> cited_ids(const std::string& answer, const nlohmann::ordered_json& context) {
  std::set<std::string> known;
  std::function<void(const nlohmann::ordered_json&)> walk = [&](const nlohmann::ordered_json& j) {
    if (j.is_object()) {
      if (auto it = j.find("id"); it != j.end() && it->is_string()) known.insert(it->get<std::string>());
      for (const auto& [k, v] : j.items()) walk(v);
    } else if (j.is_array()) {
      for (const auto& v : j) walk(v);
    }
  };
  walk(context);
  std::vector<std::string> out;
  static const std::regex id(R"((op|finding)\s+(\d+))", std::regex::icase);
  std::set<std::string> seen;
  for (auto it = std::sregex_iterator(answer.begin(), answer.end(), id); it != std::sregex_iterator(); ++it) {
    std::string word = (*it)[1].str();
    for (char& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::string s = fmt::format("{} {}", word, (*it)[2].str());
    if (known.count(s) && seen.insert(s).second) out.push_back(s);
  }
  return out;
}

}  // namespace tilescope::assist
