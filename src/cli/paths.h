// Where the package's own files are, found from the executable: <bin>/../NAME in the installed package
// (tilescope/bin/tilescope -> tilescope/NAME) and in a build tree beside the sources (build/tilescope
// -> NAME at the repository's root).
#pragma once

#include <filesystem>
#include <string>

namespace tilescope::cli {

/// <directory of the executable>/../`name`, or `env_var`'s value when it is set and not empty.
std::filesystem::path beside_executable(const std::string& name, const char* env_var);

/// The assistant's prompt files (TILESCOPE_PROMPTS, else <bin>/../prompts).
inline std::filesystem::path prompts_dir() { return beside_executable("prompts", "TILESCOPE_PROMPTS"); }

}  // namespace tilescope::cli
