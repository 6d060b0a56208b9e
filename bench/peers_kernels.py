"""Kernels and cases of `make bench-peers` (bench/peers.py): the kinds of kernels triton-viz benchmarks
its sanitizer with, at several sizes.

Written here (for this benchmark): gemm, gemm with a planted out-of-bounds read (two kinds: a row mask
off by one, and triton-viz's own A offset one element too far, for its seven gemm sizes), an indirect load
(gather), nested loops, a block-pointer loop with tl.advance, a layer norm and SwiGLU. Taken unmodified
from the installed Liger-Kernel package (`liger-kernel` on PyPI) and called through its own host
functions: the JSD loss, cross-entropy and the fused linear JSD (torch matmuls around Liger's JSD
kernel). Liger's own layer-norm and SwiGLU kernels are not used: they call `.to()` on a float scalar
argument, which neither Triton's interpreter nor triton-viz (built on it) can run.

triton-viz's own benchmark (`benchmarks/bench_sanitizer.py` in its repository) runs these kinds of
kernels at its own sizes; gemm and gemm_oob also run here at its seven sizes (one case each, as that
script runs them); the other kernels only at the two sizes below.

Every case is `Case(name, size, setup, run, kernels)`:
  setup(rng) -> dict of torch CPU tensors and ints (deterministic from the numpy generator, so every
               tool gets the same inputs),
  run(data)  -> dict name -> tensor of the outputs (the launch or launches that are timed),
  kernels()  -> the @triton.jit objects the case launches (the sanitizers wrap or mark them),
  planted    -> the case contains a planted out-of-bounds access.

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


def cases(quick: bool = False) -> list[Case]:
    """The suite: two sizes per kernel and triton-viz's seven gemm sizes (the smoke test's tiny ones when quick)."""
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
        ]
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
    ]
