"""Kernels that talk to each other through global memory: races, their correct forms, and reads of
never-written memory (issue 10). Each CASE runs on a GPU (tests/gpu/sync_truth.py records what an H200
and compute-sanitizer say about it) and on the CPU under tilescope (tests/python/test_sync_cases.py):
the same kernels, the same host code.

Every case is a function ``case(device) -> (result, reference)``: it allocates its tensors on
``device``, launches its kernel(s) and returns the tensor to compare and what a race-free, fully
initialized execution gives (computed with torch, independently of the kernel; None where the case
has no single right answer). ``EXPECT[name]`` is what the case is: the kind of bug it has ("" for a
correct kernel). The buggy forms are the bugs of real reports:

- scatter-add with duplicate indices done as load + add + store instead of tl.atomic_add
  (triton-lang/triton#558, #5326);
- every program storing the whole output (TritonBench's nested_loops_processing, thunlp/TritonBench#10);
- a spin lock released with a relaxed exchange (the critical sections are then not ordered);
- an atomic_add accumulating into torch.empty (compute-sanitizer's initcheck misses it; issue 10);
- an output region no program writes, read by the next kernel (tgale96/grouped_gemm#36,
  fla-org/flash-linear-attention#892: empty_like buffers whose tail rows are never written).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

# --------------------------------------------------------------------------------------------- kernels


@triton.jit
def scatter_add_kernel(idx_ptr, val_ptr, out_ptr, n, BLOCK: tl.constexpr, ATOMIC: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    idx = tl.load(idx_ptr + offs, mask=m, other=0)
    v = tl.load(val_ptr + offs, mask=m, other=0.0)
    if ATOMIC:
        tl.atomic_add(out_ptr + idx, v, mask=m)
    else:
        old = tl.load(out_ptr + idx, mask=m, other=0.0)
        tl.store(out_ptr + idx, old + v, mask=m)


@triton.jit
def copy_all_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, SCALE_BY_PID: tl.constexpr):
    # Every program writes the whole output (no program id in the addresses).
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if SCALE_BY_PID:
        x = x * (tl.program_id(0) + 1).to(tl.float32)
    tl.store(out_ptr + offs, x, mask=m)


@triton.jit
def halves_kernel(out_ptr, HALF: tl.constexpr):
    # Program p writes the same value into its own half: no two programs touch the same bytes.
    offs = tl.program_id(0) * HALF + tl.arange(0, HALF)
    tl.store(out_ptr + offs, tl.full([HALF], 1.0, tl.float32))


@triton.jit
def fp16_neighbours_kernel(out_ptr):
    # Program p writes element p of an fp16 array: programs 2k and 2k+1 share a 32-bit word, not a byte.
    pid = tl.program_id(0)
    tl.store(out_ptr + pid, pid.to(tl.float16))


@triton.jit
def lock_sum_kernel(x_ptr, acc_ptr, lock_ptr, n, BLOCK: tl.constexpr, ACQUIRE: tl.constexpr,
                    RELEASE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    s = tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0)
    while tl.atomic_cas(lock_ptr, 0, 1, sem=ACQUIRE) == 1:
        pass
    tl.store(acc_ptr, tl.load(acc_ptr) + s)
    tl.atomic_xchg(lock_ptr, 0, sem=RELEASE)


@triton.jit
def last_program_sum_kernel(x_ptr, partial_ptr, count_ptr, out_ptr, n, BLOCK: tl.constexpr,
                            NPROG: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(partial_ptr + pid, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0))
    done = tl.atomic_add(count_ptr, 1)  # sem acq_rel (Triton's default): orders the partial stores
    if done == NPROG - 1:
        tl.store(out_ptr, tl.sum(tl.load(partial_ptr + tl.arange(0, NPROG)), axis=0))


@triton.jit
def atomic_sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(out_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0))


@triton.jit
def pair_store_kernel(out_ptr, BLOCK: tl.constexpr):
    # Lanes 2k and 2k+1 of one store write element k with different values.
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs // 2, offs.to(tl.float32))


@triton.jit
def reverse_through_memory_kernel(x_ptr, tmp_ptr, out_ptr, BLOCK: tl.constexpr, BARRIER: tl.constexpr):
    # Lane i stores x[i]; lane i then loads what lane BLOCK-1-i stored: another thread's store.
    offs = tl.arange(0, BLOCK)
    tl.store(tmp_ptr + offs, tl.load(x_ptr + offs))
    if BARRIER:
        tl.debug_barrier()
    tl.store(out_ptr + offs, tl.load(tmp_ptr + (BLOCK - 1 - offs)))


@triton.jit
def row_copy_kernel(x_ptr, out_ptr, cols, COLS_WRITTEN, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < COLS_WRITTEN
    tl.store(out_ptr + row * cols + offs, tl.load(x_ptr + row * cols + offs, mask=m), mask=m)


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + row, tl.sum(tl.load(x_ptr + row * cols + offs, mask=offs < cols, other=0.0), axis=0))


# ------------------------------------------------------------------------------------------------ cases


def _gen(device):
    g = torch.Generator(device="cpu").manual_seed(0)
    return g


def scatter_add_race(device):
    g = _gen(device)
    n = 4096
    idx = torch.randint(0, 64, (n,), generator=g).to(device)
    val = torch.randint(-8, 8, (n,), generator=g).float().to(device)  # exact sums in any order
    out = torch.zeros(64, device=device)
    scatter_add_kernel[(triton.cdiv(n, 256),)](idx, val, out, n, BLOCK=256, ATOMIC=False)
    ref = torch.zeros(64).index_add_(0, idx.cpu(), val.cpu())
    return out, ref


def scatter_add_atomic(device):
    g = _gen(device)
    n = 4096
    idx = torch.randint(0, 64, (n,), generator=g).to(device)
    val = torch.randint(-8, 8, (n,), generator=g).float().to(device)  # exact sums in any order
    out = torch.zeros(64, device=device)
    scatter_add_kernel[(triton.cdiv(n, 256),)](idx, val, out, n, BLOCK=256, ATOMIC=True)
    ref = torch.zeros(64).index_add_(0, idx.cpu(), val.cpu())
    return out, ref


def every_program_same_values(device):
    x = torch.arange(100, dtype=torch.float32).to(device)
    out = torch.zeros(100, device=device)
    copy_all_kernel[(4,)](x, out, 100, BLOCK=128, SCALE_BY_PID=False)
    return out, x.cpu()


def every_program_own_values(device):
    x = torch.arange(100, dtype=torch.float32).to(device)
    out = torch.zeros(100, device=device)
    copy_all_kernel[(4,)](x, out, 100, BLOCK=128, SCALE_BY_PID=True)
    return out, None  # the last writer wins: any of x * 1 .. x * 4


def disjoint_halves(device):
    out = torch.zeros(256, device=device)
    halves_kernel[(2,)](out, HALF=128)
    return out, torch.ones(256)


def fp16_neighbours(device):
    out = torch.zeros(64, dtype=torch.float16, device=device)
    fp16_neighbours_kernel[(64,)](out)
    return out, torch.arange(64, dtype=torch.float16)


def _lock_sum(device, acquire, release):
    g = _gen(device)
    n = 64 * 128
    x = torch.randint(-8, 8, (n,), generator=g).float().to(device)  # small integers: exact in any order
    acc = torch.zeros(1, device=device)
    lock = torch.zeros(1, dtype=torch.int32, device=device)
    lock_sum_kernel[(64,)](x, acc, lock, n, BLOCK=128, ACQUIRE=acquire, RELEASE=release)
    return acc, x.cpu().sum().reshape(1)


def lock_acquire_release(device):
    return _lock_sum(device, "acquire", "release")


def lock_relaxed(device):
    return _lock_sum(device, "relaxed", "relaxed")


def last_program_sum(device):
    g = _gen(device)
    n = 32 * 128
    x = torch.randint(-8, 8, (n,), generator=g).float().to(device)
    partial = torch.empty(32, device=device)
    count = torch.zeros(1, dtype=torch.int32, device=device)
    out = torch.zeros(1, device=device)
    last_program_sum_kernel[(32,)](x, partial, count, out, n, BLOCK=128, NPROG=32)
    return out, x.cpu().sum().reshape(1)


def pair_store(device):
    out = torch.zeros(64, device=device)
    pair_store_kernel[(1,)](out, BLOCK=128)
    return out, None  # element k gets 2k or 2k + 1


def _reverse(device, barrier):
    x = torch.arange(1024, dtype=torch.float32).to(device)
    tmp = torch.zeros(1024, device=device)
    out = torch.zeros(1024, device=device)
    reverse_through_memory_kernel[(1,)](x, tmp, out, BLOCK=1024, BARRIER=barrier, num_warps=8)
    return out, x.cpu().flip(0)


def reverse_no_barrier(device):
    return _reverse(device, False)


def reverse_with_barrier(device):
    return _reverse(device, True)


def atomic_into_empty(device):
    g = _gen(device)
    n = 8 * 128
    x = torch.randint(-8, 8, (n,), generator=g).float().to(device)
    out = torch.empty(1, device=device)  # BUG: torch.zeros
    atomic_sum_kernel[(8,)](x, out, n, BLOCK=128)
    return out, x.cpu().sum().reshape(1)


def atomic_into_zeroed_empty(device):
    g = _gen(device)
    n = 8 * 128
    x = torch.randint(-8, 8, (n,), generator=g).float().to(device)
    out = torch.empty(1, device=device)
    out.zero_()
    atomic_sum_kernel[(8,)](x, out, n, BLOCK=128)
    return out, x.cpu().sum().reshape(1)


def _rows(device, cols_written):
    g = _gen(device)
    rows, cols = 16, 100
    x = torch.randint(-8, 8, (rows, cols), generator=g).float().to(device)
    y = torch.empty(rows, cols, device=device)  # the intermediate: the first kernel should fill it
    row_copy_kernel[(rows,)](x, y, cols, cols_written, BLOCK=128)
    s = torch.empty(rows, device=device)
    row_sum_kernel[(rows,)](y, s, cols, BLOCK=128)
    return s, x.cpu().sum(1)


def unwritten_tail_read(device):
    return _rows(device, 96)  # BUG: columns 96..99 of y are never written, then summed


def written_then_read(device):
    return _rows(device, 100)


CASES = {
    f.__name__: f
    for f in (scatter_add_race, scatter_add_atomic, every_program_same_values, every_program_own_values,
              disjoint_halves, fp16_neighbours, lock_acquire_release, lock_relaxed, last_program_sum, pair_store,
              reverse_no_barrier, reverse_with_barrier, atomic_into_empty, atomic_into_zeroed_empty,
              unwritten_tail_read, written_then_read)
}

# What each case is: "" = correct; else the bug (a race between programs, within one program, or a read
# of never-written memory).
EXPECT = {
    "scatter_add_race": "race",
    "scatter_add_atomic": "",
    "every_program_same_values": "race",
    "every_program_own_values": "race",
    "disjoint_halves": "",
    "fp16_neighbours": "",
    "lock_acquire_release": "",
    "lock_relaxed": "race",
    "last_program_sum": "",
    "pair_store": "intra-program-race",
    "reverse_no_barrier": "intra-program-race",
    "reverse_with_barrier": "",
    "atomic_into_empty": "uninitialized-read",
    "atomic_into_zeroed_empty": "",
    "unwritten_tail_read": "uninitialized-read",
    "written_then_read": "",
}
assert EXPECT.keys() == CASES.keys()
