// tilescope/llm: the prompt files shipped with tilescope (prompts/<name>.md in the package, readable and
// editable), for the assistant (system, analyze) and the kernel generator (gen_system, gen_task, ...).
#pragma once

#include <filesystem>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

namespace tilescope::llm {

class Prompts {
 public:
  /// Read every *.md of `dir`; tilescope::Error naming the folder when it or one of `required` is missing
  /// (the installation is broken).
  Prompts(const std::filesystem::path& dir, std::initializer_list<const char*> required);
  /// Prompt `name`; tilescope::Error listing the names there are.
  const std::string& get(const std::string& name) const;
  std::vector<std::string> names() const;

 private:
  std::map<std::string, std::string> text_;
};

}  // namespace tilescope::llm
