// The scheduler and the launch's bounds (issue 8, items 2, 3, 11): programs that wait on each other
// through memory (a spin lock, a grid barrier, a poll with a retry count) finish with exact results
// and a number of switches linear in the number of programs; the step limit ends a hung program with
// a located error; the cancel flag stops a program inside an endless loop; thread counts and the
// nesting of calls are bounded. Expected values are computed by hand from each kernel.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <numeric>
#include <regex>
#include <set>
#include <string>
#include <thread>

#include "tests/cpp/exec/sync_kernels.h"
#include "tests/cpp/harness.h"
#include "tilescope/ir/diag.h"

using namespace tilescope;
using exec::Arg;
using ir::Elem;

namespace {

// A grid barrier: every program adds 1 to `arrived`, polls it (an atomic add of 0) until all n have
// arrived, then writes what it read after the barrier to seen[pid]: n for every program.
const char* kBarrier = R"(module {
  tt.func public @k(%arrived: !tt.ptr<i32>, %seen: !tt.ptr<i32>, %n: i32) attributes {noinline = false} {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %true = arith.constant true
    %a = tt.atomic_rmw add, acq_rel, gpu, %arrived, %c1, %true : (!tt.ptr<i32>, i32, i1) -> i32
    %last = scf.while (%x = %a) : (i32) -> i32 {
      %v = tt.atomic_rmw add, acq_rel, gpu, %arrived, %c0, %true : (!tt.ptr<i32>, i32, i1) -> i32
      %early = arith.cmpi slt, %v, %n : i32
      scf.condition(%early) %v : i32
    } do {
    ^bb0(%y: i32):
      scf.yield %y : i32
    }
    %pid = tt.get_program_id x : i32
    %p = tt.addptr %seen, %pid : !tt.ptr<i32>, i32
    tt.store %p, %last : !tt.ptr<i32>
    tt.return
  }
})";

// Each program polls a flag that nobody sets, 500 times (a wait with a retry count), then writes the
// number of polls to out[pid].
const char* kBoundedPoll = R"(module {
  tt.func public @k(%flag: !tt.ptr<i32>, %out: !tt.ptr<i32>) attributes {noinline = false} {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c500 = arith.constant 500 : i32
    %n = scf.for %i = %c0 to %c500 step %c1 iter_args(%acc = %c0) -> (i32)  : i32 {
      %v = tt.load %flag {isVolatile = true} : !tt.ptr<i32>
      %s = arith.addi %acc, %c1 : i32
      %t = arith.addi %s, %v : i32
      scf.yield %t : i32
    }
    %pid = tt.get_program_id x : i32
    %p = tt.addptr %out, %pid : !tt.ptr<i32>, i32
    tt.store %p, %n : !tt.ptr<i32>
    tt.return
  }
})";

// A data-dependent loop that never ends (i stays in {0, 1}); no atomics: programs run directly.
// Ops counted per program: the entry block (4 ops and tt.return) 5, then per iteration 2 (cmpi,
// scf.condition) + 3 (addi, andi, scf.yield).
const char* kEndless = R"(module {
  tt.func public @k(%out: !tt.ptr<i32>) attributes {noinline = false} {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %r = scf.while (%i = %c0) : (i32) -> i32 {
      %go = arith.cmpi sge, %i, %c0 : i32
      scf.condition(%go) %i : i32
    } do {
    ^bb0(%j: i32):
      %k = arith.addi %j, %c1 : i32
      %m = arith.andi %k, %c1 : i32
      scf.yield %m : i32
    }
    tt.store %out, %r : !tt.ptr<i32>
    tt.return
  }
})";

// Program waits for a flag that no program sets: a hang (as fibers: the load is volatile). Ops
// counted: the entry block (2 ops and tt.return) 3, then per iteration 3 (load, cmpi,
// scf.condition) + 1 (scf.yield).
const char* kDeadlock = R"(module {
  tt.func public @k(%flag: !tt.ptr<i32>) attributes {noinline = false} {
    %c0 = arith.constant 0 : i32
    scf.while : () -> () {
      %v = tt.load %flag {isVolatile = true} : !tt.ptr<i32>
      %unset = arith.cmpi eq, %v, %c0 : i32
      scf.condition(%unset)
    } do {
      scf.yield
    }
    tt.return
  }
})";

std::string error_of(const std::string& ttir, const std::vector<Arg>& args, exec::Memory& mem,
                     std::array<int64_t, 3> grid, int threads, int64_t max_steps) {
  ir::Module m = ir::read(ttir, "test.ttir");
  ir::verify(m);
  exec::Engine e(m);
  exec::LaunchOptions o;
  o.grid = grid;
  o.threads = threads;
  o.max_steps = max_steps;
  try {
    e.launch(m.entry()->name, args, mem, o);
  } catch (const Error& err) {
    return err.what();
  }
  return "no error";
}

}  // namespace

TEST(Schedule, LockCounterOf2048ProgramsIsExactAndCostsFewSwitches) {
  for (int threads : {1, 2}) {
    std::vector<int32_t> lock(1, 0), counter(1, 0);
    exec::Memory mem;
    int l = test::add_buffer(mem, lock, "lock", Elem::i32);
    int c = test::add_buffer(mem, counter, "counter", Elem::i32);
    exec::LaunchStats st =
        test::run_ttir(test::kSpinLockKernel, {Arg::buf(l), Arg::buf(c)}, mem, {2048, 1, 1}, threads);
    EXPECT_EQ(counter[0], 2048) << threads << " threads";
    EXPECT_EQ(lock[0], 0);
    EXPECT_EQ(st.programs, 2048);
    // Linear: polling every waiter once per hand-over (the old scheduler) is ~2048 * 256 switches.
    EXPECT_LE(st.switches, 4 * 2048) << threads << " threads";
  }
}

TEST(Schedule, GridBarrierOf4096ProgramsReleasesEveryProgramWithLinearSwitches) {
  for (int threads : {1, 2}) {
    std::vector<int32_t> arrived(1, 0), seen(4096, -1);
    exec::Memory mem;
    int a = test::add_buffer(mem, arrived, "arrived", Elem::i32);
    int s = test::add_buffer(mem, seen, "seen", Elem::i32);
    exec::LaunchStats st =
        test::run_ttir(kBarrier, {Arg::buf(a), Arg::buf(s), Arg::i64(4096)}, mem, {4096, 1, 1}, threads);
    EXPECT_EQ(arrived[0], 4096);
    EXPECT_EQ(seen, std::vector<int32_t>(4096, 4096)) << threads << " threads";
    // Each program parks on arrival and is woken about once more before the last one arrives.
    EXPECT_LE(st.switches, 4 * 4096) << threads << " threads";
  }
}

TEST(Schedule, APollWithARetryCountFinishesWhenNobodyWritesItsAddress) {
  for (int threads : {1, 2}) {
    std::vector<int32_t> flag(1, 0), out(8, -1);
    exec::Memory mem;
    int f = test::add_buffer(mem, flag, "flag", Elem::i32);
    int o = test::add_buffer(mem, out, "out", Elem::i32);
    test::run_ttir(kBoundedPoll, {Arg::buf(f), Arg::buf(o)}, mem, {8, 1, 1}, threads);
    EXPECT_EQ(out, std::vector<int32_t>(8, 500)) << threads << " threads";
  }
}

TEST(Schedule, StepLimitEndsAnEndlessLoopWithALocatedError) {
  // 5 + 5k > 1000 first at the check of iteration k = 200: 1005 operations.
  std::vector<int32_t> out(1, -1);
  exec::Memory mem;
  int o = test::add_buffer(mem, out, "out", Elem::i32);
  std::string e = error_of(kEndless, {Arg::buf(o)}, mem, {1, 1, 1}, 1, 1000);
  EXPECT_NE(e.find("test.ttir:5:5: "), std::string::npos) << e;  // the scf.while
  EXPECT_NE(e.find("program (0, 0, 0) executed 1005 operations without finishing"), std::string::npos) << e;
  EXPECT_NE(e.find("the limit is 1000"), std::string::npos) << e;
  EXPECT_EQ(out[0], -1);
  // Another program of a grid is named by its own id; the count is per program.
  e = error_of(kEndless, {Arg::buf(o)}, mem, {1, 3, 1}, 1, 1000);
  EXPECT_NE(e.find("program (0, 0, 0) executed 1005 operations"), std::string::npos) << e;
  // With the flag set, the wait ends in its first iteration after 3 + 3 ops: a limit of 6 is not
  // reached; one of 2 is, at the check before that iteration (3 ops).
  std::vector<int32_t> flag(1, 1);
  int f = test::add_buffer(mem, flag, "flag", Elem::i32);
  EXPECT_EQ(error_of(kDeadlock, {Arg::buf(f)}, mem, {1, 1, 1}, 1, 6), "no error");
  EXPECT_NE(error_of(kDeadlock, {Arg::buf(f)}, mem, {1, 1, 1}, 1, 2).find("executed 3 operations"),
            std::string::npos);
}

TEST(Schedule, StepLimitEndsAProgramWaitingForAWriteThatNeverComes) {
  // Parked, resumed when every worker idles, parked again ...: 3 + 4k > 10000 first at k = 2500.
  for (int threads : {1, 2}) {
    std::vector<int32_t> flag(1, 0);
    exec::Memory mem;
    int f = test::add_buffer(mem, flag, "flag", Elem::i32);
    std::string e = error_of(kDeadlock, {Arg::buf(f)}, mem, {1, 1, 1}, threads, 10000);
    EXPECT_NE(e.find("test.ttir:4:5: "), std::string::npos) << e;
    EXPECT_NE(e.find("program (0, 0, 0) executed 10003 operations without finishing"), std::string::npos)
        << e;
    // 300 programs that all wait: one of them reaches the limit (3 + 4k > 100000 first at k = 25000).
    e = error_of(kDeadlock, {Arg::buf(f)}, mem, {300, 1, 1}, threads, 100000);
    EXPECT_TRUE(
        std::regex_search(e, std::regex(R"(program \(\d+, 0, 0\) executed 100003 operations without)")))
        << e;
  }
}

TEST(Schedule, CancelStopsProgramsInsideEndlessLoops) {
  struct Case {
    const char* ttir;
    int threads;
    std::array<int64_t, 3> grid;
  };
  // Straight on the worker (no atomics), and as fibers parked on a flag, on one and two threads.
  for (const Case& c : {Case{kEndless, 1, {1, 1, 1}}, Case{kEndless, 2, {4, 1, 1}},
                        Case{kDeadlock, 1, {3, 1, 1}}, Case{kDeadlock, 2, {3, 1, 1}}}) {
    std::vector<int32_t> buf(1, 0);
    exec::Memory mem;
    int b = test::add_buffer(mem, buf, "b", Elem::i32);
    ir::Module m = ir::read(c.ttir, "test.ttir");
    ir::verify(m);
    exec::Engine e(m);
    std::atomic<bool> cancel{false};
    exec::LaunchOptions o;
    o.grid = c.grid;
    o.threads = c.threads;
    o.max_steps = 0;  // no limit: only the cancel flag can end these launches
    o.cancel = &cancel;
    std::thread setter([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      cancel = true;
    });
    EXPECT_THROW(e.launch("k", {Arg::buf(b)}, mem, o), exec::Interrupted) << c.threads;
    setter.join();
  }
}

namespace {

// Each program sums 0..n-1 in a loop and writes the sum to out[pid]: n (n - 1) / 2.
const char* kLoopSum = R"(module {
  tt.func public @k(%out: !tt.ptr<i64>, %n: i64) attributes {noinline = false} {
    %c0 = arith.constant 0 : i64
    %c1 = arith.constant 1 : i64
    %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c0) -> (i64)  : i64 {
      %t = arith.addi %acc, %i : i64
      scf.yield %t : i64
    }
    %pid = tt.get_program_id x : i32
    %p = tt.addptr %out, %pid : !tt.ptr<i64>, i32
    tt.store %p, %s : !tt.ptr<i64>
    tt.return
  }
})";

/// The threads the programs of a launch ran on.
class ThreadsSeen : public exec::Observer {
 public:
  exec::Subscription on_launch_begin(const exec::LaunchContext&) override { return {exec::kProgram, {}, {}}; }
  void* on_program_begin(exec::ProgramId) override {
    std::lock_guard<std::mutex> g(mu_);
    ids_.insert(std::this_thread::get_id());
    ++programs_;
    return nullptr;
  }
  size_t threads() {
    std::lock_guard<std::mutex> g(mu_);
    return ids_.size();
  }
  int64_t programs() {
    std::lock_guard<std::mutex> g(mu_);
    return programs_;
  }

 private:
  std::mutex mu_;
  std::set<std::thread::id> ids_;
  int64_t programs_ = 0;
};

}  // namespace

TEST(Schedule, WithTheDefaultThreadCountHelpersJoinOnlyALaunchWorthThem) {
  // The calling thread starts alone and brings the pool's helpers in once the programs left are worth
  // them: a long launch (64 programs of 200,000 iterations, tens of milliseconds) runs on more than
  // one thread where there is more than one core; every program runs once either way.
  for (int64_t n : {int64_t{3}, int64_t{200000}}) {
    std::vector<int64_t> out(64, -1);
    exec::Memory mem;
    int o = test::add_buffer(mem, out, "out", Elem::i64);
    ThreadsSeen seen;
    auto st = test::run_ttir(kLoopSum, {Arg::buf(o), Arg::i64(n)}, mem, {64, 1, 1}, 0, {&seen});
    EXPECT_EQ(st.programs, 64);
    EXPECT_EQ(seen.programs(), 64);
    EXPECT_EQ(out, std::vector<int64_t>(64, n * (n - 1) / 2)) << n;
    if (n > 3 && std::thread::hardware_concurrency() > 1) {
      EXPECT_GE(seen.threads(), 2u);
    }
  }
  // Launches one after another reuse the pool's threads; each sees only its own programs.
  for (int rep = 0; rep < 20; ++rep) {
    std::vector<int64_t> out(256, -1);
    exec::Memory mem;
    int o = test::add_buffer(mem, out, "out", Elem::i64);
    auto st = test::run_ttir(kLoopSum, {Arg::buf(o), Arg::i64(1000)}, mem, {256, 1, 1}, rep % 2 ? 2 : 0);
    EXPECT_EQ(st.programs, 256);
    EXPECT_EQ(out, std::vector<int64_t>(256, 1000 * 999 / 2)) << rep;
  }
}

TEST(Schedule, ThreadCountsAreCheckedByOneRule) {
  EXPECT_EQ(exec::parse_threads("0", "--threads"), 0);
  EXPECT_EQ(exec::parse_threads("8", "--threads"), 8);
  EXPECT_EQ(exec::parse_threads("1024", "--threads"), 1024);
  for (const char* bad : {"1025", "100000", "-1", "-5", "99999999999999999999999", "abc", "", "4x", " 4"}) {
    try {
      exec::parse_threads(bad, "--threads");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("--threads"), std::string::npos) << m;
      EXPECT_NE(m.find("1024"), std::string::npos) << m;  // the bound, never a 300-digit one
      EXPECT_LT(m.size(), 120u) << m;
    }
  }
  // The engine applies the same check to LaunchOptions::threads (100000 threads once aborted).
  std::vector<int32_t> out(1, 0);
  exec::Memory mem;
  int o = test::add_buffer(mem, out, "out", Elem::i32);
  for (int threads : {100000, -1})
    EXPECT_NE(error_of(kEndless, {Arg::buf(o)}, mem, {1, 1, 1}, threads, 100).find("0 (all cores) to 1024"),
              std::string::npos);
}

namespace {

// A chain of `calls` nested tt.calls: the kernel calls @f0, @f<i> adds 1 and calls @f<i+1>, the last
// one adds 1 and returns. out = n + calls. With `atomic`, the last one also adds 0 to out atomically,
// so that the launch runs as fibers (1 MiB stacks). The kernel takes lines 2-6; each @f<i> that calls
// the next takes 6 lines, its call on line 10 + 6 i.
std::string call_chain(int calls, bool atomic) {
  std::string t = "module {\n";
  t += "  tt.func public @k(%out: !tt.ptr<i32>, %n: i32) attributes {noinline = false} {\n";
  t += "    %r = tt.call @f0(%out, %n) : (!tt.ptr<i32>, i32) -> i32\n";
  t += "    tt.store %out, %r : !tt.ptr<i32>\n";
  t += "    tt.return\n";
  t += "  }\n";
  for (int i = 0; i < calls; ++i) {
    t += "  tt.func private @f" + std::to_string(i) +
         "(%p: !tt.ptr<i32>, %x: i32) -> i32 attributes {noinline = false} {\n";
    t += "    %c1 = arith.constant 1 : i32\n";
    t += "    %y = arith.addi %x, %c1 : i32\n";
    if (i + 1 < calls) {
      t += "    %r = tt.call @f" + std::to_string(i + 1) + "(%p, %y) : (!tt.ptr<i32>, i32) -> i32\n";
      t += "    tt.return %r : i32\n";
    } else if (atomic) {
      t += "    %z = arith.constant 0 : i32\n    %t = arith.constant true\n";
      t += "    %o = tt.atomic_rmw add, acq_rel, gpu, %p, %z, %t : (!tt.ptr<i32>, i32, i1) -> i32\n";
      t += "    tt.return %y : i32\n";
    } else {
      t += "    tt.return %y : i32\n";
    }
    t += "  }\n";
  }
  t += "}\n";
  return t;
}

}  // namespace

TEST(Schedule, CallsNestAtMost256LevelsWithALocatedError) {
  // 256 nested calls run, on the worker's stack and on a fiber's.
  for (bool atomic : {false, true}) {
    std::vector<int32_t> out(1, 0);
    exec::Memory mem;
    int o = test::add_buffer(mem, out, "out", Elem::i32);
    test::run_ttir(call_chain(256, atomic), {Arg::buf(o), Arg::i64(7)}, mem);
    EXPECT_EQ(out[0], 7 + 256) << atomic;
  }
  // 20000 once overflowed the planner's stack (a crash); the 257th call is the error, in @f255.
  for (int calls : {257, 20000}) {
    std::vector<int32_t> out(1, 0);
    exec::Memory mem;
    int o = test::add_buffer(mem, out, "out", Elem::i32);
    std::string e = error_of(call_chain(calls, false), {Arg::buf(o), Arg::i64(7)}, mem, {1, 1, 1}, 1, 0);
    EXPECT_NE(e.find("test.ttir:" + std::to_string(10 + 6 * 255) + ":"), std::string::npos)
        << e.substr(0, 300);
    EXPECT_NE(e.find("more than 256 levels"), std::string::npos) << e.substr(0, 300);
    EXPECT_EQ(out[0], 0);
  }
}
