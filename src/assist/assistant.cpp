// The assistant's conversation (assistant.h).
#include "tilescope/assist/assistant.h"

#include <fmt/format.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "tilescope/ir/diag.h"

namespace tilescope::assist {

namespace fs = std::filesystem;
using json = nlohmann::json;

Prompts::Prompts(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".md") continue;
    std::ifstream f(e.path());
    std::stringstream ss;
    ss << f.rdbuf();
    text_[e.path().stem().string()] = ss.str();
  }
  for (const char* need : {"system", "analyze"})
    if (!text_.count(need))
      throw Error(fmt::format("the assistant's prompt '{}' is missing from {} (reinstall tilescope)", need,
                              dir.string()));
}

const std::string& Prompts::get(const std::string& name) const {
  auto it = text_.find(name);
  if (it == text_.end()) {
    std::string names;
    for (const auto& [n, t] : text_) names += (names.empty() ? "" : ", ") + n;
    throw Error(fmt::format("no prompt '{}' (there are: {})", name, names));
  }
  return it->second;
}

std::vector<std::string> Prompts::names() const {
  std::vector<std::string> out;
  for (const auto& [n, t] : text_) out.push_back(n);
  return out;
}

std::vector<llm::Message> messages(const Prompts& prompts, const nlohmann::ordered_json& context,
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
