#include "paths.h"

#include <cstdlib>

namespace tilescope::cli {

namespace fs = std::filesystem;

fs::path beside_executable(const std::string& name, const char* env_var) {
  if (const char* d = std::getenv(env_var); d && *d) return d;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return exe.parent_path().parent_path() / name;
}

}  // namespace tilescope::cli
