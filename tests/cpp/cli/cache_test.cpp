// `tilescope cache clear` (src/cli/cache.cpp; issue 8, item 6): where the TTIR cache is (the rules of
// the README, as python/tilescope/_cache.py applies them) and that clearing removes the cache's own
// files and nothing else.
#include "src/cli/cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

using namespace tilescope::cli;
namespace fs = std::filesystem;

namespace {

// Sets an environment variable for the scope of the object (nullptr: unset), then restores it.
class Env {
 public:
  Env(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~Env() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace

TEST(CacheClear, LocationFollowsTheReadme) {
  {
    Env dir("TILESCOPE_CACHE_DIR", "/some/where");
    EXPECT_EQ(ttir_cache_dir(), fs::path("/some/where"));
  }
  {
    Env dir("TILESCOPE_CACHE_DIR", "");
    EXPECT_EQ(ttir_cache_dir(), std::nullopt);  // off
  }
  Env dir("TILESCOPE_CACHE_DIR", nullptr);
  Env home("HOME", "/home/someone");
  {
    Env xdg("XDG_CACHE_HOME", "/var/cache/someone");  // the XDG base directory spec's variable
    EXPECT_EQ(ttir_cache_dir(), fs::path("/var/cache/someone/tilescope/ttir"));
  }
  {
    Env xdg("XDG_CACHE_HOME", "relative/path");  // ignored, as the spec says
    EXPECT_EQ(ttir_cache_dir(), fs::path("/home/someone/.cache/tilescope/ttir"));
  }
  Env xdg("XDG_CACHE_HOME", nullptr);
  EXPECT_EQ(ttir_cache_dir(), fs::path("/home/someone/.cache/tilescope/ttir"));
}

TEST(CacheClear, RemovesEntriesAndTemporaryFilesOnly) {
  fs::path d = fs::temp_directory_path() / ("tilescope-cache-test-" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d / "sub");
  const std::string hex(64, 'a'), hex2(64, '0');
  for (const std::string& name : {hex + ".ttir", hex2 + ".ttir", "." + hex + ".ttir.123.ab12.tmp"})
    std::ofstream(d / name) << "12345";
  for (const std::string& name : {std::string("notes.txt"), hex + ".ttir.bak", hex.substr(1) + ".ttir",
                                  "A" + hex.substr(1) + ".ttir", "." + hex + ".ttir"})
    std::ofstream(d / name) << "keep";
  Cleared c = clear_ttir_cache(d);
  EXPECT_EQ(c.files, 3);
  EXPECT_EQ(c.bytes, 15u);
  std::vector<std::string> left;
  for (auto& e : fs::directory_iterator(d)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"." + hex + ".ttir", "A" + hex.substr(1) + ".ttir",
                                            hex.substr(1) + ".ttir", hex + ".ttir.bak", "notes.txt", "sub"}));
  // A cache that does not exist is empty.
  Cleared none = clear_ttir_cache(d / "missing");
  EXPECT_EQ(none.files, 0);
  fs::remove_all(d);
}
