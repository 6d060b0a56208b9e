"""Kernels and cases of `make bench-peers` (bench/peers.py): the kinds of kernels triton-viz benchmarks
its sanitizer with, at several sizes.

Written here (for this benchmark): gemm, gemm with a planted out-of-bounds read (two kinds: a row mask
off by one, and triton-viz's own A offset one element too far, for its seven gemm sizes), an indirect load
(gather), nested loops, a block-pointer loop with tl.advance, a layer norm and SwiGLU. Taken unmodified
from the installed Liger-Kernel package (`liger-kernel` on PyPI) and called through its own host
functions: the JSD loss, cross-entropy and the fused linear JSD (torch matmuls around Liger's JSD
kernel). Liger's own layer-norm and SwiGLU kernels are not used: they call `.to()` on a float scalar
argument, which neither Triton's interpreter nor triton-viz (built on it) can run.

triton-viz's own benchmark suite (`benchmarks/bench_sanitizer.py` in its repository) also runs here, at
its sizes, one case per benchmark that launches all of its configurations as that script does: gemm and
gemm_oob at seven sizes, the indirect load, the nested loops at seven (outer, inner) pairs, the 1-D
block-pointer loop, Liger's JSD and element_mul kernels at twelve configurations (bfloat16 and float32),
FlagGems' layer norm (forward kernel picked by the row length, and the backward) at three shapes, SwiGLU
forward and backward at eleven widths, Liger's cross-entropy at 28 configurations and fused linear JSD's
kernels at 18. Its kernels are written here from what each computes (not copied), except Liger's, which
are the installed package's own.

Every case is `Case(name, size, setup, run, kernels)`:
  setup(rng) -> dict of torch CPU tensors and ints (deterministic from the numpy generator, so every
               tool gets the same inputs),
  run(data)  -> dict name -> tensor of the outputs (the launch or launches that are timed),
  kernels()  -> the @triton.jit objects the case launches (the sanitizers wrap or mark them),
  planted    -> the case contains a planted out-of-bounds access,
  reference(data) -> (optional) the outputs computed independently with torch in float64, for cases the
               interpreter gets wrong (bfloat16: it truncates stores and misreads a bfloat16 scalar); the
               outputs of every tool are compared with it instead of with the interpreter's.

This module is imported by the measuring child process after the tool is chosen (TRITON_INTERPRET=1
must be set before the kernels are decorated for the interpreter), never by the parent.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np
import torch
import triton
import triton.language as tl


# --------------------------------------------------------------------------------------------
# Kernels written for this benchmark


@triton.jit
def gemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # C[M, N] = A[M, K] @ B[K, N], row-major, masked on every edge; fp32 with IEEE products.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BM + tl.arange(0, BM)
    cols = pid_n * BN + tl.arange(0, BN)
    ks = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + ks
        a = tl.load(a_ptr + rows[:, None] * stride_am + kk[None, :],
                    mask=(rows[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * stride_bk + cols[None, :],
                    mask=(kk[:, None] < K) & (cols[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :], acc,
             mask=(rows[:, None] < M) & (cols[None, :] < N))


@triton.jit
def gemm_oob_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # The same gemm with a planted bug: the row mask of the A load is off by one (`<=`), so the
    # last row tile reads row M of A, one row past its end (M is not a multiple of BM). The store
    # mask is right, so the outputs of a run that does not fault are still the right product.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BM + tl.arange(0, BM)
    cols = pid_n * BN + tl.arange(0, BN)
    ks = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + ks
        a = tl.load(a_ptr + rows[:, None] * stride_am + kk[None, :],
                    mask=(rows[:, None] <= M) & (kk[None, :] < K), other=0.0)  # planted: <= M
        b = tl.load(b_ptr + kk[:, None] * stride_bk + cols[None, :],
                    mask=(kk[:, None] < K) & (cols[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :], acc,
             mask=(rows[:, None] < M) & (cols[None, :] < N))


@triton.jit
def gemm_shift_oob_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                          BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # The same gemm with the planted bug of triton-viz's own gemm_oob benchmark: every A offset is one
    # element too far (+1), so the last row's last tile reads one element past the end of A (the sizes
    # are multiples of the tiles, where the row-mask bug above would not fire).
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BM + tl.arange(0, BM)
    cols = pid_n * BN + tl.arange(0, BN)
    ks = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + ks
        a = tl.load(a_ptr + rows[:, None] * stride_am + kk[None, :] + 1,  # planted: + 1
                    mask=(rows[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * stride_bk + cols[None, :],
                    mask=(kk[:, None] < K) & (cols[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :], acc,
             mask=(rows[:, None] < M) & (cols[None, :] < N))


@triton.jit
def gather_kernel(idx_ptr, src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # out[i] = src[idx[i]]: the address of the second load comes from loaded data.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    idx = tl.load(idx_ptr + offs, mask=ok, other=0)
    tl.store(out_ptr + offs, tl.load(src_ptr + idx, mask=ok, other=0.0), mask=ok)


@triton.jit
def nested_loop_kernel(x_ptr, out_ptr, OUTER, INNER, BLOCK: tl.constexpr):
    # out[p, :] = sum over i < OUTER, j < INNER of x[p, i, j, :] * (i + 1) - j, two runtime loops.
    pid = tl.program_id(0)
    lanes = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(0, OUTER):
        for j in range(0, INNER):
            row = (pid * OUTER + i) * INNER + j
            v = tl.load(x_ptr + row * BLOCK + lanes)
            acc += v * (i + 1) - j
    tl.store(out_ptr + pid * BLOCK + lanes, acc)


@triton.jit
def block_ptr_rowsum_kernel(x_ptr, out_ptr, M, N, stride_m, BM: tl.constexpr, BN: tl.constexpr):
    # Row sums of X[M, N] through a block pointer advanced along the columns; the boundary check
    # pads the ragged right and bottom edges with zeros.
    pid = tl.program_id(0)
    bp = tl.make_block_ptr(base=x_ptr, shape=(M, N), strides=(stride_m, 1), offsets=(pid * BM, 0),
                           block_shape=(BM, BN), order=(1, 0))
    acc = tl.zeros((BM,), dtype=tl.float32)
    for _ in range(0, N, BN):
        t = tl.load(bp, boundary_check=(0, 1), padding_option="zero")
        acc += tl.sum(t, axis=1)
        bp = tl.advance(bp, (0, BN))
    rows = pid * BM + tl.arange(0, BM)
    tl.store(out_ptr + rows, acc, mask=rows < M)


@triton.jit
def layer_norm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, N, stride, eps, BLOCK: tl.constexpr):
    # One row per program, in column chunks: a mean pass, a variance pass, a normalising pass.
    row = tl.program_id(0)
    x_row = x_ptr + row * stride
    y_row = y_ptr + row * stride
    total = tl.zeros((BLOCK,), dtype=tl.float32)
    for c0 in range(0, N, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        total += tl.load(x_row + cols, mask=cols < N, other=0.0)
    mean = tl.sum(total, axis=0) / N
    sq = tl.zeros((BLOCK,), dtype=tl.float32)
    for c0 in range(0, N, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        d = tl.where(cols < N, tl.load(x_row + cols, mask=cols < N, other=0.0) - mean, 0.0)
        sq += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(sq, axis=0) / N + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    for c0 in range(0, N, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        ok = cols < N
        x = tl.load(x_row + cols, mask=ok, other=0.0)
        w = tl.load(w_ptr + cols, mask=ok, other=0.0)
        b = tl.load(b_ptr + cols, mask=ok, other=0.0)
        tl.store(y_row + cols, (x - mean) * rstd * w + b, mask=ok)


@triton.jit
def swiglu_kernel(a_ptr, b_ptr, c_ptr, n_cols, stride, BLOCK: tl.constexpr):
    # c = silu(a) * b, one row per program in column chunks.
    row = tl.program_id(0).to(tl.int64)
    for c0 in range(0, n_cols, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        ok = cols < n_cols
        a = tl.load(a_ptr + row * stride + cols, mask=ok, other=0.0)
        b = tl.load(b_ptr + row * stride + cols, mask=ok, other=0.0)
        tl.store(c_ptr + row * stride + cols, a * tl.sigmoid(a) * b, mask=ok)


# ---- Kernels of triton-viz's own benchmark (benchmarks/bench_sanitizer.py in its repository), written
# here from what each computes: its nested-loop, block-pointer, SwiGLU and FlagGems layer-norm kernels.


@triton.jit
def nested_store_kernel(out_ptr, OUTER: tl.constexpr, INNER: tl.constexpr):
    # One program, two loops of compile-time trip counts, one scalar store per inner iteration:
    # out[i * INNER + j] = i * INNER + j.
    for i in range(0, OUTER):
        for j in range(0, INNER):
            flat = i * INNER + j
            tl.store(out_ptr + flat, flat)


@triton.jit
def block_ptr_scan_kernel(x_ptr, N: tl.constexpr, BLOCK: tl.constexpr):
    # Walks X[N] in BLOCK-element steps through a 1-D block pointer and loads each block (the loaded
    # values are unused: what the benchmark checks is the addresses).
    bp = tl.make_block_ptr(base=x_ptr, shape=(N,), strides=(1,), offsets=(0,), block_shape=(BLOCK,),
                           order=(0,))
    for _ in range(0, N // BLOCK):
        tl.load(bp, boundary_check=(0,))
        bp = tl.advance(bp, (BLOCK,))


@triton.jit
def swiglu_row_fwd_kernel(a_ptr, b_ptr, c_ptr, stride, n_cols: tl.constexpr, BLOCK: tl.constexpr):
    # c = silu(a) * b, one program per row, the whole row in one tile of BLOCK >= n_cols lanes.
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    ok = cols < n_cols
    a = tl.load(a_ptr + row * stride + cols, mask=ok, other=0.0)
    b = tl.load(b_ptr + row * stride + cols, mask=ok, other=0.0)
    tl.store(c_ptr + row * stride + cols, a * tl.sigmoid(a) * b, mask=ok)


@triton.jit
def swiglu_row_bwd_kernel(dc_ptr, a_ptr, b_ptr, stride, n_cols: tl.constexpr, BLOCK: tl.constexpr):
    # The gradients of c = silu(a) * b, written over a and b: with s = sigmoid(a),
    # da = dc * b * (s + a * s * (1 - s)), db = dc * a * s.
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    ok = cols < n_cols
    dc = tl.load(dc_ptr + row * stride + cols, mask=ok, other=0.0)
    a = tl.load(a_ptr + row * stride + cols, mask=ok, other=0.0)
    b = tl.load(b_ptr + row * stride + cols, mask=ok, other=0.0)
    s = tl.sigmoid(a)
    tl.store(a_ptr + row * stride + cols, dc * b * (s + a * s * (1.0 - s)), mask=ok)
    tl.store(b_ptr + row * stride + cols, dc * a * s, mask=ok)


@triton.jit
def ln_rows_fwd_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, M, N, eps,
                       TILE_M: tl.constexpr, TILE_N: tl.constexpr):
    # Layer norm of X[M, N] (row-major), TILE_M whole rows per program in one [TILE_M, TILE_N] tile
    # (TILE_N >= N): FlagGems' kernel for short rows. w_ptr / b_ptr may be None (no affine part).
    rows = tl.program_id(0).to(tl.int64) * TILE_M + tl.arange(0, TILE_M)
    cols = tl.arange(0, TILE_N)
    ok = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=ok, other=0.0)
    mean = tl.sum(x, axis=1) / N
    d = tl.where(ok, x - mean[:, None], 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=1) / N + eps)
    tl.store(mean_ptr + rows, mean, mask=rows < M)
    tl.store(rstd_ptr + rows, rstd, mask=rows < M)
    y = d * rstd[:, None]
    if w_ptr is not None:
        y = y * tl.load(w_ptr + cols, mask=cols < N)[None, :]
    if b_ptr is not None:
        y = y + tl.load(b_ptr + cols, mask=cols < N)[None, :]
    tl.store(y_ptr + rows[:, None] * N + cols[None, :], y, mask=ok)


@triton.jit
def ln_row_fwd_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, M, N, eps, TILE_N: tl.constexpr):
    # Layer norm, one row per program in one tile of TILE_N >= N lanes: FlagGems' kernel for rows up
    # to 4096. w_ptr / b_ptr may be None.
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, TILE_N)
    ok = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=ok, other=0.0)
    mean = tl.sum(x, axis=0) / N
    d = tl.where(ok, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / N + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    y = d * rstd
    if w_ptr is not None:
        y = y * tl.load(w_ptr + cols, mask=ok)
    if b_ptr is not None:
        y = y + tl.load(b_ptr + cols, mask=ok)
    tl.store(y_ptr + row * N + cols, y, mask=ok)


@triton.jit
def ln_long_row_fwd_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, M, N, eps, TILE_N: tl.constexpr):
    # Layer norm of rows longer than one tile, one row per program: FlagGems' kernel for long rows.
    # Each lane keeps a running mean and sum of squared deviations over its columns (Welford's update;
    # the full tiles unmasked, the last one masked), the lanes are merged (Chan et al.), then a second
    # sweep normalises. w_ptr / b_ptr may be None.
    row = tl.program_id(0).to(tl.int64)
    lanes = tl.arange(0, TILE_N)
    mu = tl.zeros((TILE_N,), dtype=tl.float32)
    m2 = tl.zeros((TILE_N,), dtype=tl.float32)
    n_full = N // TILE_N
    for t in range(0, n_full):
        x = tl.load(x_ptr + row * N + t * TILE_N + lanes)
        delta = x - mu
        mu = mu + delta / (t + 1)
        m2 = m2 + delta * (x - mu)
    cnt = tl.zeros((TILE_N,), dtype=tl.float32) + n_full
    cols = n_full * TILE_N + lanes
    tail = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=tail, other=0.0)
    cnt = cnt + tail.to(tl.float32)
    delta = x - mu
    mu = tl.where(tail, mu + delta / tl.maximum(cnt, 1.0), mu)
    m2 = tl.where(tail, m2 + delta * (x - mu), m2)
    mean = tl.sum(mu * cnt, axis=0) / N
    var = tl.sum(m2 + cnt * (mu - mean) * (mu - mean), axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    for c0 in range(0, N, TILE_N):
        cols = c0 + lanes
        ok = cols < N
        y = (tl.load(x_ptr + row * N + cols, mask=ok, other=0.0) - mean) * rstd
        if w_ptr is not None:
            y = y * tl.load(w_ptr + cols, mask=ok)
        if b_ptr is not None:
            y = y + tl.load(b_ptr + cols, mask=ok)
        tl.store(y_ptr + row * N + cols, y, mask=ok)


@triton.jit
def ln_bwd_dx_kernel(dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr, M, N,
                     ROWS: tl.constexpr, COLS: tl.constexpr):
    # The input gradient of layer norm, ROWS rows per program in COLS-column chunks (FlagGems' backward):
    # with x_hat = (x - mean) * rstd and g = dy * w, dx = rstd * (g - (sum(g) + x_hat * sum(g * x_hat)) / N).
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)[:, None]
    row_ok = rows < M
    mean = tl.load(mean_ptr + rows, mask=row_ok, other=0.0)
    rstd = tl.load(rstd_ptr + rows, mask=row_ok, other=0.0)
    sum_g = tl.zeros((ROWS, COLS), dtype=tl.float32)
    sum_gx = tl.zeros((ROWS, COLS), dtype=tl.float32)
    for c0 in range(0, N, COLS):
        cols = c0 + tl.arange(0, COLS)[None, :]
        ok = row_ok & (cols < N)
        g = tl.load(dy_ptr + rows * N + cols, mask=ok, other=0.0)
        if w_ptr is not None:
            g = g * tl.load(w_ptr + cols, mask=cols < N, other=0.0)
        x_hat = tl.where(ok, tl.load(x_ptr + rows * N + cols, mask=ok, other=0.0) - mean, 0.0) * rstd
        sum_g += g
        sum_gx += g * x_hat
    a = tl.sum(sum_g, axis=1)[:, None]
    b = tl.sum(sum_gx, axis=1)[:, None]
    for c0 in range(0, N, COLS):
        cols = c0 + tl.arange(0, COLS)[None, :]
        ok = row_ok & (cols < N)
        g = tl.load(dy_ptr + rows * N + cols, mask=ok, other=0.0)
        if w_ptr is not None:
            g = g * tl.load(w_ptr + cols, mask=cols < N, other=0.0)
        x_hat = tl.where(ok, tl.load(x_ptr + rows * N + cols, mask=ok, other=0.0) - mean, 0.0) * rstd
        tl.store(dx_ptr + rows * N + cols, rstd * (g - (a + x_hat * b) / N), mask=ok)


@triton.jit
def warmup_kernel(x_ptr, n, BLOCK: tl.constexpr):
    # Launched once by each tool before the timed launch (bench/peers.py), so that one-time costs of
    # the process (imports, thread pools) are not counted against the first kernel.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)


def warmup(kernel=None) -> None:
    x = torch.zeros(10)
    (kernel or warmup_kernel)[(1,)](x, 10, BLOCK=16)


# --------------------------------------------------------------------------------------------
# Cases


@dataclasses.dataclass
class Case:
    kernel: str  # the row of the table
    size: str  # shown in the table
    setup: Callable
    run: Callable
    kernels: Callable
    planted: bool = False
    reference: Callable | None = None  # data -> outputs computed with torch in float64, where the
    # interpreter's own outputs are not a reference (it mishandles bfloat16); else the interpreter's

    @property
    def name(self) -> str:
        return f"{self.kernel}[{self.size}]"


def _t(a) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a))


def _randn(rng, *shape, scale=1.0):
    return _t((rng.standard_normal(shape) * scale).astype(np.float32))


def _gemm_case(name, kernel_attr, M, N, K, BM, BN, BK, planted=False):
    def setup(rng):
        # A is a view of the first M*K elements of a longer buffer: a run that reads past the end
        # of A (the planted bug; the interpreter does not check) reads padding, not unmapped memory.
        padded = _randn(rng, M * K + 2 * K)
        return dict(a=padded[:M * K].view(M, K), b=_randn(rng, K, N), c=torch.zeros(M, N), pad=padded)

    def run(d):
        k = globals()[kernel_attr]
        grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
        k[grid](d["a"], d["b"], d["c"], M, N, K, d["a"].stride(0), d["b"].stride(0), d["c"].stride(0),
                BM=BM, BN=BN, BK=BK)
        return {"c": d["c"]}

    return Case(name, f"{M}x{N}x{K}, {BM}x{BN}x{BK} tiles", setup, run, lambda: [globals()[kernel_attr]],
                planted)


# The (M, N, K, tile) sizes of triton-viz's own gemm and gemm_oob benchmarks
# (benchmarks/bench_sanitizer.py in its repository), all seven run in one case as that script does.
VIZ_GEMM_SIZES = [(64, 64, 64, 16), (128, 128, 128, 16), (64, 128, 64, 16), (128, 64, 128, 16),
                  (64, 64, 64, 32), (128, 128, 128, 32), (64, 128, 128, 32)]


def _gemm_sweep_case(name, kernel_attr, planted=False, sizes=tuple(VIZ_GEMM_SIZES), label="7 sizes: 64-128, tiles 16 and 32"):
    def setup(rng):
        d = {}
        for i, (M, N, K, _) in enumerate(sizes):
            # A is the front of a buffer padded with zeros: the planted read past A's end sees 0 in
            # every tool (tilescope gives an out-of-bounds lane `other`, 0), so the outputs agree.
            padded = torch.cat([_randn(rng, M * K), torch.zeros(K)])
            d.update({f"a{i}": padded[:M * K].view(M, K), f"pad{i}": padded, f"b{i}": _randn(rng, K, N),
                      f"c{i}": torch.zeros(M, N)})
        return d

    def run(d):
        k = globals()[kernel_attr]
        for i, (M, N, K, T) in enumerate(sizes):
            a, b, c = d[f"a{i}"], d[f"b{i}"], d[f"c{i}"]
            k[(M // T, N // T)](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0), BM=T, BN=T, BK=T)
        return {f"c{i}": d[f"c{i}"] for i in range(len(sizes))}

    return Case(f"{name} (triton-viz's sizes)", label, setup, run, lambda: [globals()[kernel_attr]], planted)


def _gather_case(n, block):
    def setup(rng):
        return dict(idx=_t(rng.permutation(n).astype(np.int32)), src=_randn(rng, n), out=torch.zeros(n))

    def run(d):
        gather_kernel[(triton.cdiv(n, block),)](d["idx"], d["src"], d["out"], n, BLOCK=block)
        return {"out": d["out"]}

    return Case("indirect_load", f"{n} elements, BLOCK {block}", setup, run, lambda: [gather_kernel])


def _nested_case(progs, outer, inner, block):
    def setup(rng):
        return dict(x=_randn(rng, progs * outer * inner * block), out=torch.zeros(progs * block))

    def run(d):
        nested_loop_kernel[(progs,)](d["x"], d["out"], outer, inner, BLOCK=block)
        return {"out": d["out"]}

    return Case("nested_loops", f"{progs} progs x {outer}x{inner} iters x {block}", setup, run,
                lambda: [nested_loop_kernel])


def _block_ptr_case(M, N, BM, BN):
    def setup(rng):
        return dict(x=_randn(rng, M, N), out=torch.zeros(M))

    def run(d):
        block_ptr_rowsum_kernel[(triton.cdiv(M, BM),)](d["x"], d["out"], M, N, d["x"].stride(0), BM=BM, BN=BN)
        return {"out": d["out"]}

    return Case("block_ptr_advance", f"{M}x{N}, {BM}x{BN} blocks", setup, run, lambda: [block_ptr_rowsum_kernel])


def _layer_norm_case(rows, n, block):
    def setup(rng):
        return dict(x=_randn(rng, rows, n), w=_randn(rng, n), b=_randn(rng, n), y=torch.zeros(rows, n),
                    mean=torch.zeros(rows), rstd=torch.zeros(rows))

    def run(d):
        layer_norm_kernel[(rows,)](d["x"], d["y"], d["w"], d["b"], d["mean"], d["rstd"], n, d["x"].stride(0), 1e-5,
                                   BLOCK=block)
        return {"y": d["y"], "mean": d["mean"], "rstd": d["rstd"]}

    return Case("layer_norm", f"{rows}x{n}, BLOCK {block}", setup, run, lambda: [layer_norm_kernel])


def _swiglu_case(rows, n, block):
    def setup(rng):
        return dict(a=_randn(rng, rows, n), b=_randn(rng, rows, n), c=torch.zeros(rows, n))

    def run(d):
        swiglu_kernel[(rows,)](d["a"], d["b"], d["c"], n, d["a"].stride(0), BLOCK=block)
        return {"c": d["c"]}

    return Case("swiglu", f"{rows}x{n}, BLOCK {block}", setup, run, lambda: [swiglu_kernel])


# ---- Liger-Kernel (installed package), through its own host functions


def _liger_jsd_kernels():
    from liger_kernel.ops import jsd
    from liger_kernel.ops.backends._triton import jsd as _triton_jsd  # noqa: F401  (Liger's dispatcher
    # loads this module at the first call; loaded now so that a sanitizer that wraps kernel objects
    # also finds the reference it launches)

    return [jsd._jsd_kernel]


def _log_probs(rng, rows, v, scale=1.0):
    return torch.log_softmax(_randn(rng, rows, v, scale=scale), dim=-1).contiguous()


def _labels(rng, rows, v, ignore_index=-100):
    lab = rng.integers(0, v, rows).astype(np.int64)
    lab[: max(1, rows // 4)] = ignore_index  # a quarter of the rows are ignored
    return _t(lab)


def _jsd_case(rows, v):
    def setup(rng):
        return dict(x=_log_probs(rng, rows, v), y=_log_probs(rng, rows, v), lab=_labels(rng, rows, v))

    def run(d):
        from liger_kernel.ops.jsd import jsd_forward

        loss, dx = jsd_forward(d["x"], d["y"], d["lab"], 0.5, -100, True)
        return {"loss": loss.reshape(1), "dx": dx}

    return Case("jsd (Liger)", f"{rows}x{v}", setup, run, _liger_jsd_kernels)


def _cross_entropy_case(rows, v):
    def setup(rng):
        return dict(x=_randn(rng, rows, v), lab=_labels(rng, rows, v))

    def run(d):
        from liger_kernel.ops.cross_entropy import cross_entropy_forward

        x = d["x"]  # the kernel writes the gradient into its input
        loss, _, _, _, grad = cross_entropy_forward(x, d["lab"], None, -100, 0.0, 0.1, "mean", None, False)
        return {"loss": loss.reshape(1), "grad": grad}

    def kernels():
        from liger_kernel.ops import cross_entropy

        return [cross_entropy.liger_cross_entropy_kernel]

    return Case("cross_entropy (Liger)", f"{rows}x{v}", setup, run, kernels)


def _fused_linear_jsd_case(bt, h, v):
    def setup(rng):
        return dict(si=_randn(rng, bt, h), sw=_randn(rng, v, h, scale=0.1), ti=_randn(rng, bt, h),
                    tw=_randn(rng, v, h, scale=0.1), lab=_labels(rng, bt, v))

    def run(d):
        from liger_kernel.ops.fused_linear_jsd import fused_linear_jsd_forward

        loss, grad_input, _ = fused_linear_jsd_forward(d["si"], d["sw"], d["ti"], d["tw"], d["lab"], 0.5, -100, True,
                                                       1.0)
        return {"loss": loss.reshape(1), "grad_input": grad_input}

    return Case("fused_linear_jsd (Liger)", f"BT {bt}, H {h}, V {v}", setup, run, _liger_jsd_kernels)


# ---- triton-viz's own benchmark suite (benchmarks/bench_sanitizer.py in its repository): its kernels
# at its sizes, each benchmark one case whose run launches all of that benchmark's configurations, as
# that script times them. Where a kernel writes in place, its input is cloned before the launch (the
# clone is not timed: only the launches are).

VIZ = "(triton-viz's sizes)"
VIZ_NESTED_SIZES = [(4, 8), (8, 4), (4, 16), (16, 4), (8, 8), (8, 16), (16, 8)]  # (OUTER, INNER)
VIZ_JSD_SHAPES = [(512, 512, 1600), (512, 256, 2048), (512, 128, 1024)]  # (B*T, H, V)
VIZ_JSD_DTYPES = [torch.bfloat16, torch.float32]  # log-probabilities from randn * 0.5
VIZ_JSD_PARAMS = [(0.5, -100), (0.1, 42)]  # (beta, ignore_index)
VIZ_LN_SHAPES = [(64, 36), (1, 40999), (64, 256)]  # (M, N): a short-row, a long-row and a one-tile kernel
VIZ_SWIGLU_COLS = [512, 1024, 2048, 4096, 8192, 768, 1536, 3072, 6144, 256, 640]  # 4 rows each
VIZ_CE_COLS = [512, 1024, 2048, 4096, 8192, 16384, 32000]  # V; 4 rows, reduction sum / mean x smoothing 0 / 0.1
VIZ_FLJSD_SHAPES = [(512, 800), (512, 1600), (512, 3200), (256, 1024), (256, 2048), (256, 4096), (128, 512),
                    (128, 1024), (128, 2048)]  # (H, V); 4 rows, beta 0.5 and 0.1
MAX_FUSED = 65536 // 2  # Liger's cap on a row tile


def _viz_indirect_case(n, block):
    def setup(rng):
        return dict(idx=torch.arange(n, dtype=torch.int32), src=_randn(rng, n), out=torch.zeros(n))

    def run(d):
        gather_kernel[(n // block,)](d["idx"], d["src"], d["out"], n, BLOCK=block)
        return {"out": d["out"]}

    return Case(f"indirect_load {VIZ}", f"{n} elements, BLOCK {block}, {n // block} programs", setup, run,
                lambda: [gather_kernel])


def _viz_nested_case(sizes):
    def setup(rng):
        return dict(out=torch.zeros(max(o * i for o, i in sizes), dtype=torch.int32))

    def run(d):
        for outer, inner in sizes:
            nested_store_kernel[(1,)](d["out"], OUTER=outer, INNER=inner)
        return {"out": d["out"]}

    label = f"{len(sizes)} (outer, inner) pairs, 1 program" if len(sizes) > 1 else f"{sizes[0][0]}x{sizes[0][1]}, 1 program"
    return Case(f"nested_loop {VIZ}", label, setup, run, lambda: [nested_store_kernel])


def _viz_block_ptr_case(n, block, progs):
    def setup(rng):
        return dict(x=_randn(rng, n))

    def run(d):
        block_ptr_scan_kernel[(progs,)](d["x"], N=n, BLOCK=block)
        return {"x": d["x"]}

    return Case(f"block_ptr_loop {VIZ}", f"{n} elements, BLOCK {block}, {progs} programs, loads only", setup, run,
                lambda: [block_ptr_scan_kernel])


def _liger_jsd_and_mul_kernels():
    from liger_kernel.ops import utils

    return _liger_jsd_kernels() + [utils.element_mul_kernel]


def _viz_jsd_setup(rng, bt, h, v, dtype, scale, beta, ignore_index):
    lab = _labels(rng, bt, v, ignore_index)
    lab[: max(1, bt // 2)] = ignore_index  # half the rows are ignored, as that benchmark has them
    return dict(x=_log_probs(rng, bt, v, scale).to(dtype), y=_log_probs(rng, bt, v, scale).to(dtype),
                loss=torch.zeros(bt, v), dx=torch.zeros(bt, v, dtype=dtype), lab=lab,
                n_non_ignore=int((lab != ignore_index).sum()), beta=beta, ignore_index=ignore_index,
                grad=_randn(rng, bt, h // 2).to(dtype), grad_out=torch.tensor(0.5, dtype=dtype))


def _viz_jsd_run(cfgs):
    """Liger's JSD kernel and its element-wise scaling kernel, launched directly (not through Liger's
    host function) as triton-viz's benchmark launches them, once per configuration."""
    from liger_kernel.ops import jsd, utils

    outs = {}
    for i, c in enumerate(cfgs):
        bt, v = c["x"].shape
        grad = c["grad"].clone()  # scaled in place
        jsd._jsd_kernel[(bt,)](X_ptr=c["x"], X_stride=c["x"].stride(0), Y_ptr=c["y"], Y_stride=c["y"].stride(0),
                               loss_ptr=c["loss"], loss_stride=c["loss"].stride(0), dX_ptr=c["dx"],
                               dX_stride=c["dx"].stride(0), label_ptr=c["lab"], beta=c["beta"],
                               n_non_ignore=c["n_non_ignore"], ignore_index=c["ignore_index"], n_cols=v,
                               BLOCK_SIZE=min(MAX_FUSED, triton.next_power_of_2(v)), HAS_LABEL=True)
        utils.element_mul_kernel[(bt,)](grad, grad.stride(0), c["grad_out"], grad.shape[1],
                                        BLOCK_SIZE=min(MAX_FUSED, triton.next_power_of_2(grad.shape[1])))
        outs.update({f"loss{i}": c["loss"], f"dx{i}": c["dx"], f"grad{i}": grad})
    return outs


def _viz_jsd_reference(d):
    """The outputs of _viz_jsd_run in float64 (Liger's formulas for 0 < beta < 1: with P = exp(Y),
    Q = exp(X), M = beta P + (1 - beta) Q, loss = (beta P (Y - log M) + (1 - beta) Q (X - log M)) / n and
    dX = (1 - beta) Q (X - log M) / n on rows whose label is not ignored; 0 in dX and the loss's initial 0
    on ignored rows), rounded to each output's dtype."""
    outs = {}
    for i, c in enumerate(d["cfgs"]):
        x, y, beta, n = c["x"].double(), c["y"].double(), c["beta"], c["n_non_ignore"]
        q, p = x.exp(), y.exp()
        log_m = (beta * p + (1 - beta) * q).log()
        keep = (c["lab"] != c["ignore_index"]).double()[:, None]
        loss = (beta * p * (y - log_m) + (1 - beta) * q * (x - log_m)) / n * keep
        dx = (1 - beta) * q * (x - log_m) / n * keep
        outs.update({f"loss{i}": loss.to(c["loss"].dtype), f"dx{i}": dx.to(c["dx"].dtype),
                     f"grad{i}": (c["grad"].double() * float(c["grad_out"])).to(c["grad"].dtype)})
    return outs


def _viz_liger_jsd_case(shapes, dtypes, params):
    def setup(rng):
        return dict(cfgs=[_viz_jsd_setup(rng, bt, h, v, dt, 0.5, beta, ign) for bt, h, v in shapes for dt in dtypes
                          for beta, ign in params])

    n = len(shapes) * len(dtypes) * len(params)
    return Case(f"liger_jsd {VIZ}", f"{n} configs: B*T {shapes[0][0]}, V {min(s[2] for s in shapes)}-"
                f"{max(s[2] for s in shapes)}, bf16 and f32", setup, lambda d: _viz_jsd_run(d["cfgs"]),
                _liger_jsd_and_mul_kernels, reference=_viz_jsd_reference)


def _viz_fused_linear_jsd_case(shapes, betas):
    def setup(rng):
        return dict(cfgs=[_viz_jsd_setup(rng, 4, h, v, torch.float32, 1.0, beta, -100) for h, v in shapes
                          for beta in betas])

    return Case(f"fused_linear_jsd {VIZ}", f"{len(shapes) * len(betas)} configs: B*T 4, V "
                f"{min(s[1] for s in shapes)}-{max(s[1] for s in shapes)}", setup, lambda d: _viz_jsd_run(d["cfgs"]),
                _liger_jsd_and_mul_kernels)


def _viz_layer_norm_case(shapes):
    def setup(rng):
        return dict(cfgs=[dict(x=_randn(rng, m, n), dy=_randn(rng, m, n), y=torch.zeros(m, n), mean=torch.zeros(m),
                               rstd=torch.zeros(m), dx=torch.zeros(m, n)) for m, n in shapes])

    def run(d):
        outs = {}
        for i, c in enumerate(d["cfgs"]):
            m, n = c["x"].shape
            args = (c["x"], c["y"], None, None, c["mean"], c["rstd"], m, n, 1e-5)
            if n <= 128:  # the kernel FlagGems picks for the row length, as that benchmark does
                tile_n = triton.next_power_of_2(n)
                tile_m = triton.cdiv(1024, tile_n)
                ln_rows_fwd_kernel[(triton.cdiv(m, tile_m),)](*args, TILE_M=tile_m, TILE_N=tile_n)
            elif n <= 4096:
                ln_row_fwd_kernel[(m,)](*args, TILE_N=triton.next_power_of_2(n))
            else:
                ln_long_row_fwd_kernel[(m,)](*args, TILE_N=1024)
            ln_bwd_dx_kernel[(triton.cdiv(m, 4),)](c["dy"], c["x"], None, c["mean"], c["rstd"], c["dx"], m, n,
                                                   ROWS=4, COLS=1024)
            outs.update({f"y{i}": c["y"], f"mean{i}": c["mean"], f"rstd{i}": c["rstd"], f"dx{i}": c["dx"]})
        return outs

    return Case(f"layer_norm, FlagGems' kernels {VIZ}", ", ".join(f"{m}x{n}" for m, n in shapes) + ", fwd + bwd",
                setup, run, lambda: [ln_rows_fwd_kernel, ln_row_fwd_kernel, ln_long_row_fwd_kernel, ln_bwd_dx_kernel])


def _viz_swiglu_case(rows, widths):
    def setup(rng):
        return dict(cfgs=[dict(a=_randn(rng, rows, n), b=_randn(rng, rows, n), c=torch.zeros(rows, n),
                               dc=_randn(rng, rows, n)) for n in widths])

    def run(d):
        outs = {}
        for i, c in enumerate(d["cfgs"]):
            n = c["a"].shape[1]
            block = triton.next_power_of_2(n)
            swiglu_row_fwd_kernel[(rows,)](c["a"], c["b"], c["c"], c["c"].stride(0), n_cols=n, BLOCK=block)
            da, db = c["a"].clone(), c["b"].clone()  # the backward writes the gradients over a and b
            swiglu_row_bwd_kernel[(rows,)](c["dc"], da, db, c["dc"].stride(0), n_cols=n, BLOCK=block)
            outs.update({f"c{i}": c["c"], f"da{i}": da, f"db{i}": db})
        return outs

    return Case(f"swiglu {VIZ}", f"{len(widths)} widths {min(widths)}-{max(widths)}, {rows} rows, fwd + bwd", setup,
                run, lambda: [swiglu_row_fwd_kernel, swiglu_row_bwd_kernel])


def _viz_cross_entropy_case(rows, widths):
    def setup(rng):
        return dict(cfgs=[dict(x=_randn(rng, rows, v), lab=_t(rng.integers(0, v, rows).astype(np.int64)))
                          for v in widths])

    def run(d):
        from liger_kernel.ops.cross_entropy import cross_entropy_forward

        outs = {}
        for i, c in enumerate(d["cfgs"]):
            for red in ("sum", "mean"):
                for ls in (0.0, 0.1):
                    x = c["x"].clone()  # the kernel writes the gradient into its input
                    loss, _, _, _, grad = cross_entropy_forward(x, c["lab"], None, -100, 0.0, ls, red, None, False)
                    outs.update({f"loss{i}{red}{ls}": loss.reshape(-1), f"grad{i}{red}{ls}": grad})
        return outs

    def kernels():
        from liger_kernel.ops import cross_entropy

        return [cross_entropy.liger_cross_entropy_kernel]

    return Case(f"cross_entropy (Liger) {VIZ}", f"{len(widths) * 4} configs: {rows} rows, V {min(widths)}-{max(widths)}",
                setup, run, kernels)


def _viz_cases(quick: bool) -> list[Case]:
    if quick:
        return [
            _viz_indirect_case(128, 64),
            _viz_nested_case([(2, 3)]),
            _viz_block_ptr_case(256, 64, 2),
            _viz_liger_jsd_case([(4, 32, 100)], VIZ_JSD_DTYPES, VIZ_JSD_PARAMS[:1]),
            _viz_layer_norm_case([(4, 36), (1, 5000), (4, 256)]),
            _viz_swiglu_case(2, [256, 640]),
            _viz_cross_entropy_case(2, [512]),
            _viz_fused_linear_jsd_case([(128, 512)], [0.5, 0.1]),
        ]
    return [
        _viz_indirect_case(1024, 64),
        _viz_nested_case(VIZ_NESTED_SIZES),
        _viz_block_ptr_case(4096, 64, 16),
        _viz_liger_jsd_case(VIZ_JSD_SHAPES, VIZ_JSD_DTYPES, VIZ_JSD_PARAMS),
        _viz_layer_norm_case(VIZ_LN_SHAPES),
        _viz_swiglu_case(4, VIZ_SWIGLU_COLS),
        _viz_cross_entropy_case(4, VIZ_CE_COLS),
        _viz_fused_linear_jsd_case(VIZ_FLJSD_SHAPES, [0.5, 0.1]),
    ]


def cases(quick: bool = False) -> list[Case]:
    """The suite: two sizes per kernel, then triton-viz's own benchmark suite at its sizes (the smoke test's
    tiny ones when quick)."""
    if quick:
        return [
            _gemm_case("gemm", "gemm_kernel", 20, 24, 40, 16, 16, 16),
            _gemm_case("gemm_oob", "gemm_oob_kernel", 20, 24, 40, 16, 16, 16, planted=True),
            _gemm_sweep_case("gemm_oob", "gemm_shift_oob_kernel", True, ((32, 32, 32, 16),), "32x32x32, 16x16x16 tiles"),
            _gather_case(200, 64),
            _nested_case(2, 2, 3, 16),
            _block_ptr_case(20, 40, 16, 16),
            _layer_norm_case(3, 50, 32),
            _swiglu_case(3, 50, 32),
            _jsd_case(4, 100),
            _cross_entropy_case(4, 100),
            _fused_linear_jsd_case(4, 16, 100),
        ] + _viz_cases(True)
    return [
        _gemm_case("gemm", "gemm_kernel", 100, 96, 80, 32, 32, 16),
        _gemm_case("gemm", "gemm_kernel", 200, 192, 256, 64, 64, 32),
        _gemm_case("gemm_oob", "gemm_oob_kernel", 100, 96, 80, 32, 32, 16, planted=True),
        _gemm_case("gemm_oob", "gemm_oob_kernel", 200, 192, 256, 64, 64, 32, planted=True),
        _gemm_sweep_case("gemm", "gemm_kernel"),
        _gemm_sweep_case("gemm_oob", "gemm_shift_oob_kernel", planted=True),
        _gather_case(4096, 256),
        _gather_case(65536, 1024),
        _nested_case(4, 8, 16, 64),
        _nested_case(16, 16, 32, 128),
        _block_ptr_case(100, 300, 32, 64),
        _block_ptr_case(1000, 1000, 64, 128),
        _layer_norm_case(16, 1000, 256),
        _layer_norm_case(128, 4096, 1024),
        _swiglu_case(16, 1000, 256),
        _swiglu_case(128, 4096, 1024),
        _jsd_case(16, 1000),
        _jsd_case(64, 8192),
        _cross_entropy_case(16, 1000),
        _cross_entropy_case(64, 8192),
        _fused_linear_jsd_case(16, 64, 1000),
        _fused_linear_jsd_case(64, 256, 8192),
    ] + _viz_cases(False)
