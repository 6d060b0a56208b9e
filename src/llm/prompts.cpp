#include "tilescope/llm/prompts.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "tilescope/ir/diag.h"

namespace tilescope::llm {

namespace fs = std::filesystem;

Prompts::Prompts(const fs::path& dir, std::initializer_list<const char*> required) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".md") continue;
    std::ifstream f(e.path());
    std::stringstream ss;
    ss << f.rdbuf();
    text_[e.path().stem().string()] = ss.str();
  }
  for (const char* need : required)
    if (!text_.count(need))
      throw Error(
          fmt::format("the prompt '{}' is missing from {} (reinstall tilescope)", need, dir.string()));
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

}  // namespace tilescope::llm
