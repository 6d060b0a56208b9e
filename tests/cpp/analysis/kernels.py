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
