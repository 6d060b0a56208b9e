// The module's function table (issue 8, item 12): functions stay in text order, `find` is a lookup by
// name, and reading a module costs time linear in its number of functions and calls. Before the fix
// `find` scanned every function, once per function definition (the redefinition check) and once per
// tt.call (the verifier), so 100,000 functions took minutes.
#include <gtest/gtest.h>
#include <time.h>

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

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// CPU time of reading and verifying `text` (the best of three: the least disturbed by other work).
double read_cost(const std::string& text) {
  double best = 1e30;
  for (int r = 0; r < 3; ++r) {
    double t0 = thread_cpu_seconds();
    Module m = read(text, "t.ttir");
    verify(m);
    best = std::min(best, thread_cpu_seconds() - t0);
  }
  return best;
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

// A complexity check, not a speed measurement: 16 times more functions and calls must cost about 16
// times more, never the 256 times of a scan per lookup. The bound (64) leaves a factor 4 either way
// for caches and machine noise; CPU time of this thread, so other processes do not count.
TEST(ModuleIndex, ReadingIsLinearInTheNumberOfFunctions) {
  const int small = 2000, large = 16 * small;
  std::string a = module_text(small), b = module_text(large);
  double t_small = read_cost(a), t_large = read_cost(b);
  EXPECT_LT(t_large, 64 * t_small) << "reading " << small << " functions took " << t_small << " s, " << large
                                   << " took " << t_large << " s";
}
