#include "cache.h"

#include <fmt/format.h>
#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <regex>

#include "tilescope/ir/diag.h"

namespace tilescope::cli {
namespace fs = std::filesystem;

std::optional<fs::path> ttir_cache_dir() {
  if (const char* dir = std::getenv("TILESCOPE_CACHE_DIR")) {
    if (!*dir) return std::nullopt;
    return fs::path(dir);
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/')
    return fs::path(xdg) / "tilescope" / "ttir";
  const char* home = std::getenv("HOME");
  if (!home || !*home) {
    const passwd* pw = ::getpwuid(::getuid());
    home = pw ? pw->pw_dir : nullptr;
  }
  if (!home || !*home) throw Error("cannot find the TTIR cache: HOME is not set (set TILESCOPE_CACHE_DIR)");
  return fs::path(home) / ".cache" / "tilescope" / "ttir";
}

Cleared clear_ttir_cache(const fs::path& dir) {
  static const std::regex ours(R"(^([0-9a-f]{64}\.ttir|\.[0-9a-f]{64}\.ttir\..+\.tmp)$)");
  Cleared c;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return c;
  fs::directory_iterator it(dir, ec);
  if (ec) throw Error(fmt::format("cannot read the TTIR cache {}: {}", dir.string(), ec.message()));
  for (const fs::directory_entry& e : it) {
    if (!std::regex_match(e.path().filename().string(), ours) || e.is_directory(ec)) continue;
    uintmax_t size = e.is_regular_file(ec) ? e.file_size(ec) : 0;
    if (ec) size = 0;
    bool removed = fs::remove(e.path(), ec);
    if (ec) throw Error(fmt::format("cannot remove {}: {}", e.path().string(), ec.message()));
    if (removed) {  // else another process removed it first
      ++c.files;
      c.bytes += size;
    }
  }
  return c;
}

CLI::App* add_cache(CLI::App& app) {
  auto* cache = app.add_subcommand(
      "cache",
      "The TTIR cache of the Python front door (TILESCOPE_CACHE_DIR, default ~/.cache/tilescope/ttir)");
  cache->require_subcommand(1);
  cache->add_subcommand("clear", "Remove every cache entry");
  return cache;
}

int cache_command() {
  std::optional<fs::path> dir = ttir_cache_dir();
  if (!dir) {
    std::cout << "tilescope: the TTIR cache is off (TILESCOPE_CACHE_DIR is empty); nothing to clear\n";
    return 0;
  }
  Cleared c = clear_ttir_cache(*dir);
  std::cout << fmt::format("tilescope: removed {} files ({} bytes) from {}\n", c.files, c.bytes,
                           dir->string());
  return 0;
}

}  // namespace tilescope::cli
