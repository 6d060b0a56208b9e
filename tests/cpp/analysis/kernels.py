"""Small buggy (and matching correct) kernels for the sanitizer tests (tests/cpp/analysis/).

Compiled to TTIR by generate.py (Triton 3.6, cuda:90, no GPU needed); the tests check findings against
the line numbers of this file, so append new kernels at the end.
"""
import triton
import triton.language as tl


@triton.jit
def undef_sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    s = tl.sum(x, axis=0)
    tl.store(out_ptr, s)


@triton.jit
def where_sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    x = tl.where(mask, x, 0.0)
    s = tl.sum(x, axis=0)
    tl.store(out_ptr, s)


@triton.jit
def overflow_kernel(x_ptr, out_ptr, stride, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    start = pid * stride
    x = tl.load(x_ptr + start + tl.arange(0, BLOCK))
    tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), x)


@triton.jit
def divide_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    q = a // b
    tl.store(out_ptr + offs, q, mask=mask)


@triton.jit
def undef_store_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x * 2.0)


@triton.jit
def atomic_hist_kernel(idx_ptr, hist_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    idx = tl.load(idx_ptr + offs)
    tl.atomic_add(hist_ptr + idx, 1)


@triton.jit
def undef_rows_kernel(x_ptr, out_ptr, rows, ROWS: tl.constexpr, COLS: tl.constexpr):
    r = tl.arange(0, ROWS)
    c = tl.arange(0, COLS)
    rmask = r < rows
    x = tl.load(x_ptr + r[:, None] * COLS + c[None, :], mask=rmask[:, None])
    s = tl.sum(x, axis=1)
    tl.store(out_ptr + r, s, mask=rmask)


@triton.jit
def loop_undef_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for k in range(0, 4):
        o = k * BLOCK + offs
        acc += tl.load(x_ptr + o, mask=o < n)
    tl.store(out_ptr + offs, acc, mask=offs < n)
    total = tl.sum(acc, axis=0)
    tl.store(out_ptr + BLOCK, total)


@triton.jit
def undef_branch_kernel(x_ptr, out_ptr, n):
    v = tl.load(x_ptr, mask=n > 0)
    if v > 0:
        tl.store(out_ptr, 1.0)
    i = 0
    while i < v:
        i += 1
    tl.store(out_ptr + 1, i.to(tl.float32))


# -- races (races_test.cpp) ------------------------------------------------------------------------


@triton.jit
def lock_release_kernel(lock_ptr, counter_ptr):
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    v = tl.load(counter_ptr)
    tl.store(counter_ptr, v + 1)
    tl.atomic_xchg(lock_ptr, 0, sem="release")


@triton.jit
def lock_relaxed_kernel(lock_ptr, counter_ptr):
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    v = tl.load(counter_ptr)
    tl.store(counter_ptr, v + 1)
    tl.atomic_xchg(lock_ptr, 0, sem="relaxed")


@triton.jit
def half_pairs_kernel(out_ptr):
    pid = tl.program_id(0)
    tl.store(out_ptr + pid, pid.to(tl.float16))


@triton.jit
def slice_copy_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2)


@triton.jit
def last_reduce_kernel(x_ptr, partial_ptr, counter_ptr, out_ptr, NPROG: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK))
    tl.store(partial_ptr + pid, tl.sum(x, axis=0))
    done = tl.atomic_add(counter_ptr, 1)
    if done == NPROG - 1:
        p = tl.load(partial_ptr + tl.arange(0, NPROG))
        tl.store(out_ptr, tl.sum(p, axis=0))


@triton.jit
def same_out_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + tl.program_id(0) * BLOCK + offs)
    tl.store(out_ptr + offs, x)


@triton.jit
def scatter_add_kernel(idx_ptr, src_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    idx = tl.load(idx_ptr + offs)
    v = tl.load(src_ptr + offs)
    cur = tl.load(out_ptr + idx)
    tl.store(out_ptr + idx, cur + v)


@triton.jit
def dup_store_kernel(out_ptr, BLOCK: tl.constexpr):
    lane = tl.arange(0, BLOCK)
    tl.store(out_ptr + lane // 2, lane)


@triton.jit
def dup_same_kernel(out_ptr, BLOCK: tl.constexpr):
    lane = tl.arange(0, BLOCK)
    tl.store(out_ptr + lane // 2, lane // 2)


@triton.jit
def shift_kernel(buf_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(buf_ptr + offs, offs)
    v = tl.load(buf_ptr + (offs + 1) % BLOCK)
    w = tl.load(buf_ptr + offs)
    tl.store(out_ptr + offs, v + w)


@triton.jit
def shift_barrier_kernel(buf_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(buf_ptr + offs, offs)
    tl.debug_barrier()
    v = tl.load(buf_ptr + (offs + 1) % BLOCK)
    w = tl.load(buf_ptr + offs)
    tl.store(out_ptr + offs, v + w)
