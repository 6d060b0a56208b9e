// Robustness of the reader: every strict prefix of a real module is a located error (never a crash or
// a hang), and random byte mutations give either a module or a tilescope::Error. verify() runs on
// whatever reads, so it must not crash on odd-but-parsable input either.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "tilescope/ir/reader.h"

namespace fs = std::filesystem;
using namespace tilescope;
using namespace tilescope::ir;

namespace {

std::string slurp(const std::string& name) {
  fs::path p = fs::path(__FILE__).parent_path() / ".." / ".." / "ttir" / "reader" / name;
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Returns "" on success, the message on tilescope::Error; anything else escapes and fails the test.
std::string attempt(std::string_view text) {
  try {
    Module m = read(text, "cut.ttir");
    verify(m);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

size_t content_end(const std::string& s) {
  size_t e = s.size();
  while (e > 0 && (s[e - 1] == '\n' || s[e - 1] == ' ')) --e;
  return e;
}

}  // namespace

TEST(ReaderRobust, EveryPrefixIsALocatedError) {
  for (const char* name : {"add.ttir", "argmax.ttir", "call.ttir", "while.ttir", "cond_br.ttir",
                           "dot_scaled.ttir", "print_assert.ttir", "block_ptr.source.ttir", "desc.ttir",
                           "loop_annot.ttir", "inline_asm.ttir", "map_elementwise.ttir"}) {
    SCOPED_TRACE(name);
    std::string text = slurp(name);
    ASSERT_FALSE(text.empty());
    ASSERT_EQ(attempt(text), "");
    size_t end = content_end(text);
    int failures = 0;
    for (size_t n = 0; n < end && failures < 5; ++n) {
      std::string err = attempt(std::string_view(text).substr(0, n));
      if (err.empty() || err.rfind("cut.ttir:", 0) != 0) {
        ADD_FAILURE() << "prefix of " << n << " bytes: " << (err.empty() ? "accepted" : err);
        ++failures;
      }
    }
    EXPECT_EQ(attempt(std::string_view(text).substr(0, end)), "");  // only trailing whitespace cut
  }
}

TEST(ReaderRobust, ByteMutationsGiveModuleOrError) {
  const std::string pool = "%#^@:,=<>(){}[]\"x0123456789-.!\n \\";
  const char* names[] = {"matmul.ttir", "argmax.ttir", "call.ttir", "block_ptr.source.ttir",
                         "dot_scaled.ttir"};
  std::mt19937 rng(12345);  // fixed seed: the same mutations every run
  int errors = 0, ok = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string t = slurp(names[iter % 5]);
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < edits; ++k) {
      size_t pos = rng() % t.size();
      switch (rng() % 4) {
        case 0: t[pos] = pool[rng() % pool.size()]; break;
        case 1: t.erase(pos, 1 + rng() % 8); break;
        case 2: t.insert(pos, 1, pool[rng() % pool.size()]); break;
        case 3: t[pos] = static_cast<char>(rng() % 256); break;
      }
      if (t.empty()) t.push_back('x');
    }
    std::string err = attempt(t);
    if (err.empty()) {
      ++ok;
    } else {
      ++errors;
      EXPECT_EQ(err.rfind("cut.ttir:", 0), 0u) << err;
    }
  }
  EXPECT_GT(errors, 1000);  // most mutations break the module
  EXPECT_EQ(ok + errors, 3000);
}
