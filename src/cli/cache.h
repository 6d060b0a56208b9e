// `tilescope cache clear`: empties the TTIR disk cache of the Python front door
// (python/tilescope/_cache.py holds the cache itself and documents its files).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <filesystem>
#include <optional>

namespace tilescope::cli {

/// The cache directory as the front door finds it: TILESCOPE_CACHE_DIR, else
/// $XDG_CACHE_HOME/tilescope/ttir (an absolute XDG_CACHE_HOME), else $HOME/.cache/tilescope/ttir (the
/// password database's home when HOME is unset); nullopt when the cache is off (TILESCOPE_CACHE_DIR
/// set and empty). (The front door also leaves the cache off when the home directory does not exist;
/// clearing that path then finds nothing.)
std::optional<std::filesystem::path> ttir_cache_dir();

struct Cleared {
  int64_t files = 0;
  uintmax_t bytes = 0;
};
/// Remove the cache's files from `dir`: entries (`<64 hex digits>.ttir`) and the temporary files of
/// writers that were killed (`.<entry name>.<anything>.tmp`); nothing else, so a cache directory
/// pointed at a folder with other files loses none of them. A missing `dir` is an empty cache.
/// Throws tilescope::Error naming a file that cannot be removed.
Cleared clear_ttir_cache(const std::filesystem::path& dir);

/// Register `cache` (with its subcommand `clear`) on `app`; run it with cache_command once parsed.
CLI::App* add_cache(CLI::App& app);
/// Run the parsed `cache` subcommand (`clear`, its only one): prints what was removed; returns the
/// exit status.
int cache_command();

}  // namespace tilescope::cli
