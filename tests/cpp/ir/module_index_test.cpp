// The module's function table (issue 8, item 12): functions stay in text order and `find` is a lookup by
// name. Before, `find` scanned every function, once per function definition (the redefinition check)
// and once per tt.call (the verifier), so 100,000 functions took minutes; speed itself is measured in
// bench/, not here (CONTRIBUTING: tests assert values, never timings).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "tilescope/ir/reader.h"
#include "tilescope/ir/verify.h"

using namespace tilescope;
using namespace tilescope::ir;

namespace {

// Triton's spelling of a helper's name (module path, function, specialization suffix).
std::string helper(int i) { return "kernels.my_module._helper_ret__i32__" + std::to_string(1000000 + i); }

// `n` private helpers, then a public kernel that makes `n` calls, to helper (i * 7919) % n for the i-th.
std::string module_text(int n) {
  std::string t = "module {\n";
  for (int i = 0; i < n; ++i)
    t += "  tt.func private @" + helper(i) + "(%x: i32) -> i32 {\n    tt.return %x : i32\n  }\n";
  t += "  tt.func public @k(%p: !tt.ptr<i32>) {\n    %v0 = arith.constant 1 : i32\n";
  for (int i = 0; i < n; ++i)
    t += "    %v" + std::to_string(i + 1) + " = tt.call @" + helper(static_cast<int>((i * 7919LL) % n)) +
         "(%v" + std::to_string(i) + ") : (i32) -> i32\n";
  t += "    tt.store %p, %v" + std::to_string(n) + " : !tt.ptr<i32>\n    tt.return\n  }\n}\n";
  return t;
}

}  // namespace

TEST(ModuleIndex, ManyFunctionsKeepTheirOrderAndAreFoundByName) {
  const int n = 3000;
  Module m = read(module_text(n), "t.ttir");
  verify(m);
  ASSERT_EQ(m.functions.size(), static_cast<size_t>(n + 1));
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(m.functions[i]->name, helper(i));
    ASSERT_EQ(m.find(helper(i)), m.functions[i].get());
  }
  EXPECT_EQ(m.functions[n]->name, "k");
  EXPECT_EQ(m.entry(), m.functions[n].get());
  EXPECT_EQ(m.find("k"), m.functions[n].get());
  EXPECT_EQ(m.find("kernels.my_module._helper_ret__i32__"), nullptr);
  EXPECT_EQ(m.find(""), nullptr);
  int i = 0;
  for (auto& f : m.functions) EXPECT_EQ(f.get(), m.functions[i++].get());
  EXPECT_EQ(i, n + 1);
}

TEST(ModuleIndex, AFunctionAddedLaterIsFound) {
  Module m = read(module_text(3), "t.ttir");
  auto f = std::make_unique<Function>();
  f->name = "added";
  Function* raw = f.get();
  m.functions.push_back(std::move(f));
  EXPECT_EQ(m.find("added"), raw);
  EXPECT_EQ(m.functions.back().get(), raw);
  EXPECT_EQ(m.functions.size(), 5u);
  Module moved = std::move(m);  // the index moves with the functions
  EXPECT_EQ(moved.find("added"), raw);
  EXPECT_EQ(moved.find(helper(2)), moved.functions[2].get());
}

TEST(ModuleIndex, RedefinedFunctionIsALocatedError) {
  std::string text =
      "module {\n  tt.func private @f(%x: i32) -> i32 {\n    tt.return %x : i32\n  }\n"
      "  tt.func private @f(%x: i32) -> i32 {\n    tt.return %x : i32\n  }\n}\n";
  try {
    read(text, "t.ttir");
    FAIL() << "a second @f was accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "t.ttir:5:3: redefinition of function '@f'");
  }
}
