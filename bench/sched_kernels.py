"""Kernels whose programs wait on each other through atomics: the scheduler's workloads in `make bench`.

tilescope runs them alone (bench/run.py, "Scheduler"): Triton's interpreter runs programs one after
another, so a program that waits for a later one never finishes there.
"""
import triton
import triton.language as tl


@triton.jit
def lock_counter_kernel(lock_ptr, count_ptr):
    # Every program takes a spin lock built with atomic_cas, increments a counter, and releases it.
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    c = tl.load(count_ptr, volatile=True)
    tl.store(count_ptr, c + 1)
    tl.atomic_xchg(lock_ptr, 0)


@triton.jit
def grid_barrier_kernel(arrived_ptr, seen_ptr, n):
    # Every program arrives at a grid-wide barrier (an atomic counter), waits until all n have arrived,
    # then records the count it saw after the barrier (n for every program when the barrier works).
    tl.atomic_add(arrived_ptr, 1)
    while tl.load(arrived_ptr, volatile=True) < n:
        pass
    pid = tl.program_id(0)
    tl.store(seen_ptr + pid, tl.load(arrived_ptr, volatile=True))
