// Control flow through the engine: scf.for / if / while, cf branches with block arguments, calls,
// and programs that wait on each other through an atomic_cas lock. Expected values are computed
// by hand from the programs' meaning (closed forms), not by tilescope.
#include <gtest/gtest.h>

#include <numeric>

#include "tests/cpp/exec/sync_kernels.h"
#include "tests/cpp/harness.h"

using namespace tilescope;
using exec::Arg;
using ir::Elem;

namespace {

int32_t run_scalar_kernel(const std::string& ttir, int32_t n) {
  std::vector<int32_t> out(1, -12345);
  exec::Memory mem;
  int b = test::add_buffer(mem, out, "out", Elem::i32);
  test::run_ttir(ttir, {Arg::buf(b), Arg::i64(n)}, mem);
  return out[0];
}

// Regression (issue 7, bug 1): program 0 polls a flag with tt.atomic_load (3.9) until program 1 sets
// it with tt.atomic_store. Only tt.atomic_load may wait here, so the kernel runs as fibers only if the
// op registry's `waits` effect is what the scheduler asks (it once matched op names, missed
// tt.atomic_load, and this launch spun forever on one thread).
TEST(Control, SpinWaitOnAtomicLoadMakesProgress) {
  const char* k = R"(module {
  tt.func public @k(%flag: !tt.ptr<i32>, %out: !tt.ptr<i32>) attributes {noinline = false} {
    %c0 = arith.constant 0 : i32
    %c7 = arith.constant 7 : i32
    %pid = tt.get_program_id x : i32
    %first = arith.cmpi eq, %pid, %c0 : i32
    scf.if %first {
      %seen = scf.while (%a = %c0) : (i32) -> i32 {
        %v = tt.atomic_load acquire, gpu, %flag : (!tt.ptr<i32>) -> i32
        %unset = arith.cmpi eq, %v, %c0 : i32
        scf.condition(%unset) %v : i32
      } do {
      ^bb0(%x: i32):
        scf.yield %x : i32
      }
      tt.store %out, %seen : !tt.ptr<i32>
    } else {
      tt.atomic_store release, gpu, %flag, %c7 : !tt.ptr<i32>
    }
    tt.return
  }
})";
  for (int threads : {1, 2}) {
    std::vector<int32_t> flag(1, 0), out(1, -1);
    exec::Memory mem;
    int f = test::add_buffer(mem, flag, "flag", Elem::i32);
    int o = test::add_buffer(mem, out, "out", Elem::i32);
    test::run_ttir(k, {Arg::buf(f), Arg::buf(o)}, mem, {2, 1, 1}, threads);
    EXPECT_EQ(out[0], 7) << threads << " threads";
  }
}

}  // namespace

TEST(Control, ForLoopSum) {
  const char* k = R"(module {
  tt.func public @k(%out: !tt.ptr<i32>, %n: i32) attributes {noinline = false} {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c0) -> (i32)  : i32 {
      %a = arith.addi %acc, %i : i32
      scf.yield %a : i32
    }
    tt.store %out, %s : !tt.ptr<i32>
    tt.return
  }
})";
  for (int n : {0, 1, 7, 100}) EXPECT_EQ(run_scalar_kernel(k, n), n * (n - 1) / 2) << n;
}

TEST(Control, ForLoopYieldPermutesValues) {
  // Fibonacci: (a, b) <- (b, a + b), and a pure swap: yields reuse the block arguments.
  const char* k = R"(module {
  tt.func public @k(%out: !tt.ptr<i32>, %n: i32) attributes {noinline = false} {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%a = %c0, %b = %c1) -> (i32, i32)  : i32 {
      %s = arith.addi %a, %b : i32
      scf.yield %b, %s : i32, i32
    }
    %w:2 = scf.for %i = %c0 to %n step %c1 iter_args(%x = %c0, %y = %c1) -> (i32, i32)  : i32 {
      scf.yield %y, %x : i32, i32
    }
    %c1000 = arith.constant 1000 : i32
    %t = arith.muli %w#0, %c1000 : i32
    %u = arith.addi %r#0, %t : i32
    tt.store %out, %u : !tt.ptr<i32>
    tt.return
  }
})";
  // fib(10) = 55; after 10 swaps x = 0; after 7 swaps x = 1.
  EXPECT_EQ(run_scalar_kernel(k, 10), 55);
  EXPECT_EQ(run_scalar_kernel(k, 7), 13 + 1000);
}

TEST(Control, WhileLoopGcd) {
  const char* k = R"(module {
  tt.func public @k(%out: !tt.ptr<i32>, %n: i32) attributes {noinline = false} {
    %c18 = arith.constant 18 : i32
    %c0 = arith.constant 0 : i32
    %r:2 = scf.while (%a = %n, %b = %c18) : (i32, i32) -> (i32, i32) {
      %nz = arith.cmpi ne, %b, %c0 : i32
      scf.condition(%nz) %a, %b : i32, i32
    } do {
    ^bb0(%a1: i32, %b1: i32):
      %m = arith.remsi %a1, %b1 : i32
      scf.yield %b1, %m : i32, i32
    }
    tt.store %out, %r#0 : !tt.ptr<i32>
    tt.return
  }
})";
  EXPECT_EQ(run_scalar_kernel(k, 48), 6);
  EXPECT_EQ(run_scalar_kernel(k, 35), 1);
}

TEST(Control, IfWithResultsAndEarlyReturnBranches) {
  const char* k = R"(module {
  tt.func public @k(%out: !tt.ptr<i32>, %n: i32) attributes {noinline = false} {
    %c10 = arith.constant 10 : i32
    %c2 = arith.constant 2 : i32
    %big = arith.cmpi sgt, %n, %c10 : i32
    cf.cond_br %big, ^bb1, ^bb2(%n : i32)
  ^bb1:  // pred: ^bb0
    %h = arith.muli %n, %c2 : i32
    cf.br ^bb2(%h : i32)
  ^bb2(%v: i32):  // 2 preds: ^bb0, ^bb1
    %odd = arith.remsi %v, %c2 : i32
    %c0 = arith.constant 0 : i32
    %isodd = arith.cmpi ne, %odd, %c0 : i32
    %r = scf.if %isodd -> (i32) {
      %p = arith.addi %v, %c10 : i32
      scf.yield %p : i32
    } else {
      scf.yield %v : i32
    }
    tt.store %out, %r : !tt.ptr<i32>
    tt.return
  }
})";
  EXPECT_EQ(run_scalar_kernel(k, 3), 13);   // small, odd: 3 + 10
  EXPECT_EQ(run_scalar_kernel(k, 4), 4);    // small, even
  EXPECT_EQ(run_scalar_kernel(k, 11), 22);  // big: doubled, even
}

TEST(Control, CallToPrivateHelperWithEarlyReturn) {
  const char* k = R"(module {
  tt.func public @k(%out: !tt.ptr<i32>, %n: i32) attributes {noinline = false} {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c0) -> (i32)  : i32 {
      %h = tt.call @"__main__.clip__i32__"(%i) : (i32) -> i32
      %a = arith.addi %acc, %h : i32
      scf.yield %a : i32
    }
    tt.store %out, %s : !tt.ptr<i32>
    tt.return
  }
  tt.func private @"__main__.clip__i32__"(%x: i32) -> i32 attributes {noinline = false} {
    %c5 = arith.constant 5 : i32
    %gt = arith.cmpi sgt, %x, %c5 : i32
    cf.cond_br %gt, ^bb1, ^bb2
  ^bb1:  // pred: ^bb0
    tt.return %c5 : i32
  ^bb2:  // pred: ^bb0
    tt.return %x : i32
  }
})";
  // sum of min(i, 5) for i < 10 = 0+1+2+3+4+5 + 4*5 = 35
  EXPECT_EQ(run_scalar_kernel(k, 10), 35);
}

// Every program takes a lock with atomic_cas, does a non-atomic read-modify-write of a counter,
// and releases the lock. The count is exact only if the lock works, and the launch finishes only
// if spinning programs let the lock holder run (1 and 2 threads).
TEST(Control, SpinLockMakesProgressAndSerialises) {
  const char* k = test::kSpinLockKernel;
  for (int threads : {1, 2}) {
    std::vector<int32_t> lock(1, 0), counter(1, 0);
    exec::Memory mem;
    int l = test::add_buffer(mem, lock, "lock", Elem::i32);
    int c = test::add_buffer(mem, counter, "counter", Elem::i32);
    test::run_ttir(k, {Arg::buf(l), Arg::buf(c)}, mem, {300, 1, 1}, threads);
    EXPECT_EQ(counter[0], 300) << threads << " threads";
    EXPECT_EQ(lock[0], 0);
  }
}

// Program i waits until program i + 1 has set its flag (the last one sets its own): a chain that
// only completes if programs that have not started yet still get started while many earlier ones
// spin. 600 programs exceed the scheduler's parking limit on one thread.
TEST(Control, WaitingOnLaterProgramsDoesNotStarve) {
  const char* k = test::kWaitChainKernel;
  for (int threads : {1, 2}) {
    std::vector<int32_t> flags(600, 0);
    exec::Memory mem;
    int f = test::add_buffer(mem, flags, "flags", Elem::i32);
    test::run_ttir(k, {Arg::buf(f), Arg::i64(600)}, mem, {600, 1, 1}, threads);
    EXPECT_EQ(std::accumulate(flags.begin(), flags.end(), 0), 600) << threads << " threads";
  }
}
