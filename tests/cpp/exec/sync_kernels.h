// Test kernels shared by the scheduler, observer and planner tests: programs that wait on each other
// through atomics (so they run as fibers and park).
#pragma once

namespace tilescope::test {

// Every program takes a lock with atomic_cas, does a non-atomic read-modify-write of a counter, and
// releases the lock with an exchange. The count is exact only if the lock works; the launch finishes
// only if spinning programs let the lock holder run. Arguments: lock (i32[1], 0), counter (i32[1]).
inline constexpr const char* kSpinLockKernel = R"(module {
  tt.func public @k(%lock: !tt.ptr<i32>, %counter: !tt.ptr<i32>) attributes {noinline = false} {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %true = arith.constant true
    scf.while : () -> () {
      %old = tt.atomic_cas acq_rel, gpu, %lock, %c0, %c1 : (!tt.ptr<i32>, i32, i32) -> i32
      %busy = arith.cmpi eq, %old, %c1 : i32
      scf.condition(%busy)
    } do {
      scf.yield
    }
    %v = tt.load %counter : !tt.ptr<i32>
    %v1 = arith.addi %v, %c1 : i32
    tt.store %counter, %v1 : !tt.ptr<i32>
    %r = tt.atomic_rmw exch, acq_rel, gpu, %lock, %c0, %true : (!tt.ptr<i32>, i32, i1) -> i32
    tt.return
  }
})";

// Program i waits until program i + 1 has set its flag (the last one sets its own), then sets its own:
// a chain that completes only if programs not yet started still start while earlier ones spin, so
// every program is in flight at once. Arguments: flags (i32[n], zeros), n.
inline constexpr const char* kWaitChainKernel = R"(module {
  tt.func public @k(%flags: !tt.ptr<i32>, %n: i32) attributes {noinline = false} {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %true = arith.constant true
    %pid = tt.get_program_id x : i32
    %next = arith.addi %pid, %c1 : i32
    %last = arith.cmpi eq, %next, %n : i32
    %wait_on = arith.select %last, %pid, %next : i32
    %p = tt.addptr %flags, %wait_on : !tt.ptr<i32>, i32
    %mine = tt.addptr %flags, %pid : !tt.ptr<i32>, i32
    scf.if %last {
      %o = tt.atomic_rmw exch, acq_rel, gpu, %mine, %c1, %true : (!tt.ptr<i32>, i32, i1) -> i32
    }
    scf.while : () -> () {
      %v = tt.atomic_rmw add, acq_rel, gpu, %p, %c0, %true : (!tt.ptr<i32>, i32, i1) -> i32
      %notyet = arith.cmpi eq, %v, %c0 : i32
      scf.condition(%notyet)
    } do {
      scf.yield
    }
    %o2 = tt.atomic_rmw exch, acq_rel, gpu, %mine, %c1, %true : (!tt.ptr<i32>, i32, i1) -> i32
    tt.return
  }
})";

}  // namespace tilescope::test
