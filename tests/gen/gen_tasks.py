"""The generator's task suite so far: for each hand-written kernel AST in tests/gen/tasks/<name>.json, how
to launch it at several sizes (including sizes that are not multiples of its blocks) and what it must
compute, from numpy / torch (never from tilescope).

A task's `make(size, rng)` returns a Case: every runtime argument of the kernel by name (numpy arrays
for pointers, Python numbers for scalars), the grid, the expected values of the output arrays, and the
tolerance. Tolerances, per output dtype (documented in docs/gen-format.md, "Fixtures"):

- integer outputs and pure data movement (gather, histogram, argmax): exact;
- f32 elementwise math (exp, erf, division: the GPU's approximate f32 math is within a few ulp):
  rtol 1e-5, atol 1e-6 against a float64 reference;
- f32 reductions and scans (softmax, layer norm, sums, cumsum; the order of additions differs):
  rtol 1e-5, atol 1e-5 against a float64 reference;
- f16 outputs (RMSNorm): rtol 2e-3, atol 2e-3 (f16 has a 2^-11 relative rounding step) against a float64
  reference of the same f16 inputs;
- f16 x f16 -> f32 dot with a K loop: rtol 1e-4, atol 1e-4 against a float64 product of the same f16
  inputs (f32 accumulation of K products);
- a tf32 dot: the tensor core reads only the top 10 mantissa bits of each f32 input (truncation, as measured
  on an H200: ../shared/reference/ttir.md §5.3); rtol 1e-5, atol 1e-5 against a float64 product of the
  inputs truncated so by numpy;
- an f16-accumulated dot: rtol 1e-2, atol 2e-2.
A case's `tol` is one (rtol, atol) for every output, or a dict by output name; an atol may be an array
(an elementwise bound).
"""
from __future__ import annotations

import dataclasses
import math
import os
from typing import Callable

import numpy as np

TASKS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tasks")

EXACT = (0.0, 0.0)
F32_MATH = (1e-5, 1e-6)
F32_REDUCE = (1e-5, 1e-5)
F16_OUT = (2e-3, 2e-3)
DOT_F16 = (1e-4, 1e-4)
F16_ACC = (1e-2, 2e-2)


@dataclasses.dataclass
class Case:
    args: dict            # runtime argument name -> np.ndarray (pointer) or number (scalar)
    grid: tuple
    expected: dict        # output argument name -> np.ndarray
    tol: tuple | dict     # (rtol, atol), or {output name: (rtol, atol)}; atol may be an array


@dataclasses.dataclass
class Task:
    name: str
    sizes: list
    make: Callable

    @property
    def path(self) -> str:
        p = os.path.join(TASKS_DIR, f"{self.name}.json")
        return p if os.path.exists(p) else os.path.join(TASKS_DIR, "..", "..", "..", "tasks", f"{self.name}.json")


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _vector_add(s, rng):
    n = s["n"]
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    return Case({"x_ptr": x, "y_ptr": y, "out_ptr": out, "n": n}, (cdiv(n, 256),), {"out_ptr": x + y}, EXACT)


def _gelu(s, rng):
    n = s["n"]
    x = (rng.standard_normal(n) * 3).astype(np.float32)
    erf = np.vectorize(math.erf)
    ref = 0.5 * x.astype(np.float64) * (1 + erf(x.astype(np.float64) / math.sqrt(2)))
    return Case({"x_ptr": x, "y_ptr": np.zeros(n, np.float32), "n": n}, (cdiv(n, 512),), {"y_ptr": ref}, F32_MATH)


def _silu(s, rng):
    n = s["n"]
    x = (rng.standard_normal(n) * 4).astype(np.float32)
    xd = x.astype(np.float64)
    return Case({"x_ptr": x, "y_ptr": np.zeros(n, np.float32), "n": n}, (cdiv(n, 128),),
                {"y_ptr": xd / (1 + np.exp(-xd))}, F32_MATH)


def _rows(s, rng, scale=1.0, dtype=np.float32):
    m, n = s["m"], s["n"]
    stride = n + s.get("pad", 0)
    full = (rng.standard_normal((m, stride)) * scale).astype(dtype)
    return m, n, stride, full


def _softmax(s, rng):
    m, n, stride, x = _rows(s, rng, 3.0)
    xd = x[:, :n].astype(np.float64)
    e = np.exp(xd - xd.max(axis=1, keepdims=True))
    y = np.zeros_like(x)
    exp = y.copy().astype(np.float64)
    exp[:, :n] = e / e.sum(axis=1, keepdims=True)
    return Case({"x_ptr": x, "y_ptr": y, "n_cols": n, "stride": stride}, (m,), {"y_ptr": exp}, F32_REDUCE)


def _layer_norm(s, rng):
    m, n, stride, x = _rows(s, rng, 2.0)
    w = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    eps = 1e-5
    xd = x[:, :n].astype(np.float64)
    mean = xd.mean(axis=1, keepdims=True)
    var = ((xd - mean) ** 2).mean(axis=1, keepdims=True)
    exp = np.zeros(x.shape, np.float64)
    exp[:, :n] = (xd - mean) / np.sqrt(var + np.float32(eps)) * w + b
    y = np.zeros_like(x)
    return Case({"x_ptr": x, "w_ptr": w, "b_ptr": b, "y_ptr": y, "n_cols": n, "stride": stride, "eps": eps}, (m,),
                {"y_ptr": exp}, F32_REDUCE)


def _rms_norm(s, rng):
    m, n, stride, x = _rows(s, rng, 1.0, np.float16)
    w = rng.standard_normal(n).astype(np.float16)
    eps = 1e-6
    xd = x[:, :n].astype(np.float64)
    r = 1 / np.sqrt((xd ** 2).mean(axis=1, keepdims=True) + np.float32(eps))
    exp = np.zeros(x.shape, np.float64)
    exp[:, :n] = (xd * r * w.astype(np.float64)).astype(np.float16)
    y = np.zeros_like(x)
    return Case({"x_ptr": x, "w_ptr": w, "y_ptr": y, "n_cols": n, "stride": stride, "eps": eps}, (m,),
                {"y_ptr": exp}, F16_OUT)


def _row_sum(s, rng):
    m, n, stride, x = _rows(s, rng)
    out = np.zeros(m, np.float32)
    return Case({"x_ptr": x, "out_ptr": out, "M": m, "N": n, "stride": stride}, (cdiv(m, 16),),
                {"out_ptr": x[:, :n].astype(np.float64).sum(axis=1)}, F32_REDUCE)


def _cumsum(s, rng):
    m, n, stride, x = _rows(s, rng)
    y = np.zeros_like(x)
    exp = np.zeros(x.shape, np.float64)
    exp[:, :n] = np.cumsum(x[:, :n].astype(np.float64), axis=1)
    return Case({"x_ptr": x, "y_ptr": y, "M": m, "N": n, "stride": stride}, (cdiv(m, 8),), {"y_ptr": exp},
                F32_REDUCE)


def _argmax(s, rng):
    m, n, stride, x = _rows(s, rng)
    if s.get("ties"):  # repeated maxima: the first index wins, as numpy's argmax
        x = np.round(x).astype(np.float32)
    out = np.full(m, -1, np.int32)
    return Case({"x_ptr": x, "out_ptr": out, "M": m, "N": n, "stride": stride}, (cdiv(m, 4),),
                {"out_ptr": np.argmax(x[:, :n], axis=1).astype(np.int32)}, EXACT)


def _embedding(s, rng):
    v, d, t = s["vocab"], s["d"], s["t"]
    table = rng.standard_normal((v, d)).astype(np.float32)
    ids = rng.integers(0, v, t).astype(np.int32)
    out = np.zeros((t, d), np.float32)
    return Case({"table_ptr": table, "ids_ptr": ids, "out_ptr": out, "T": t, "D": d}, (cdiv(t, 16),),
                {"out_ptr": table[ids]}, EXACT)


def _take(s, rng):
    m, n, k = s["m"], s["n"], s["k"]
    x = rng.standard_normal((m, n)).astype(np.float32)
    idx = rng.integers(0, n, (m, k)).astype(np.int32)
    out = np.zeros((m, k), np.float32)
    return Case({"x_ptr": x, "idx_ptr": idx, "out_ptr": out, "M": m, "N": n, "K": k, "stride": n}, (cdiv(m, 8),),
                {"out_ptr": np.take_along_axis(x, idx, axis=1)}, EXACT)


def _histogram(s, rng):
    n, bins = s["n"], s["bins"]
    x = rng.integers(0, bins, n).astype(np.int32)
    counts = np.zeros(bins, np.int32)
    return Case({"x_ptr": x, "counts_ptr": counts, "n": n}, (cdiv(n, 128),),
                {"counts_ptr": np.bincount(x, minlength=bins).astype(np.int32)}, EXACT)


def _scale_or_negate(s, rng):
    n, flag = s["n"], s["flag"]
    x = rng.standard_normal(n).astype(np.float32)
    scale = 2.5
    exp = x * np.float32(scale) if flag else 0 - x
    return Case({"x_ptr": x, "y_ptr": np.zeros(n, np.float32), "n": n, "flag": flag, "scale": scale},
                (cdiv(n, 64),), {"y_ptr": exp}, EXACT)


def _matmul(s, rng):
    m, n, k = s["m"], s["n"], s["k"]
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    bias = rng.standard_normal(n).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    exp = np.maximum(a.astype(np.float64) @ b.astype(np.float64) + bias, 0)
    args = {"a_ptr": a, "b_ptr": b, "bias_ptr": bias, "c_ptr": c, "M": m, "N": n, "K": k,
            "stride_am": k, "stride_ak": 1, "stride_bk": n, "stride_bn": 1, "stride_cm": n, "stride_cn": 1}
    return Case(args, (cdiv(m, 32), cdiv(n, 32)), {"c_ptr": exp}, DOT_F16)


def _float_math(s, rng):
    n = s["n"]
    x = rng.uniform(0.1, 4.0, n).astype(np.float32)
    x3 = x * np.float32(3.3)  # in f32, as the kernel computes it
    xm2 = x - np.float32(2)
    d = lambda v: v.astype(np.float64)  # noqa: E731
    rows = [np.exp2(d(x)), np.log(d(x)), np.log2(d(x)), np.sqrt(d(x)), np.sin(d(x3)), np.cos(d(x3)), np.floor(x3),
            np.ceil(x3), np.tanh(d(xm2)), np.abs(xm2), np.minimum(x, np.float32(1.5)), np.fmod(x, np.float32(0.7))]
    y = np.zeros((12, n), np.float32)
    return Case({"x_ptr": x, "y_ptr": y, "n": n}, (cdiv(n, 128),), {"y_ptr": np.stack(rows).astype(np.float64)},
                F32_MATH)


def _int_ops(s, rng):
    n = s["n"]
    x = rng.integers(-1000, 1001, n).astype(np.int64)
    z = rng.integers(1, 51, n) * rng.choice([-1, 1], n)
    grid = cdiv(n, 64)
    trunc_div = np.sign(x) * np.sign(z) * (np.abs(x) // np.abs(z))
    rows = [trunc_div, np.fmod(x, z), np.minimum(x, z), np.maximum(x, z), x & z, x | z, x ^ z, x << 3, x >> 2,
            np.abs(x), -x, x == z, x != z, x <= z, x > z, x >= z, x, np.trunc(x * 0.5), (x + 128) % 256 - 128,
            x + grid]
    y = np.zeros((20, n), np.int32)
    return Case({"x_ptr": x.astype(np.int32), "z_ptr": z.astype(np.int32), "y_ptr": y, "n": n}, (grid,),
                {"y_ptr": np.stack(rows).astype(np.int64)}, EXACT)


def _tile_ops(s, rng):
    m, n = s["m"], s["n"]
    x = (1 + 0.1 * rng.standard_normal((m, n))).astype(np.float32)
    xd = x.astype(np.float64)
    out = {"t_ptr": np.zeros((n, m), np.float32), "cmin_ptr": np.zeros(n, np.float32),
           "amin_ptr": np.zeros(m, np.int32), "cmax_ptr": np.zeros((m, n), np.float32),
           "rprod_ptr": np.zeros((m, n), np.float32), "rmin_ptr": np.zeros((m, n), np.float32),
           "prod_ptr": np.zeros(1, np.float32)}
    exp = {"t_ptr": x.T.copy(), "cmin_ptr": x.min(axis=0), "amin_ptr": np.argmin(x, axis=1).astype(np.int32),
           "cmax_ptr": np.maximum.accumulate(x, axis=0),
           "rprod_ptr": np.flip(np.cumprod(np.flip(xd, 1), axis=1), 1), "rmin_ptr": np.minimum.accumulate(x, axis=1),
           "prod_ptr": np.array([np.prod(xd)])}
    tol = {k: EXACT for k in exp}
    tol["rprod_ptr"] = tol["prod_ptr"] = F32_REDUCE
    return Case({"x_ptr": x, **out, "M": m, "N": n}, (1,), exp, tol)


def _tf32(v):
    """float32 values with their low 13 mantissa bits cleared (what a tensor core reads of an f32 operand)."""
    return (v.astype(np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


def _dot_variants(s, rng):
    m, n, k = s["m"], s["n"], s["k"]
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    a8, b8 = rng.integers(-8, 9, (m, k)).astype(np.int8), rng.integers(-8, 9, (k, n)).astype(np.int8)
    ah = (0.5 * rng.standard_normal((m, k))).astype(np.float16)
    bh = (0.5 * rng.standard_normal((k, n))).astype(np.float16)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    args = {"a_ptr": a, "b_ptr": b, "a8_ptr": a8, "b8_ptr": b8, "ah_ptr": ah, "bh_ptr": bh,
            "ieee_ptr": np.zeros((m, n), np.float32), "tf32_ptr": np.zeros((m, n), np.float32),
            "i8_ptr": np.zeros((m, n), np.int32), "h_ptr": np.zeros((m, n), np.float16), "M": m, "N": n, "K": k}
    exp = {"ieee_ptr": exact, "tf32_ptr": _tf32(a).astype(np.float64) @ _tf32(b).astype(np.float64),
           "i8_ptr": a8.astype(np.int64) @ b8.astype(np.int64), "h_ptr": ah.astype(np.float64) @ bh.astype(np.float64)}
    tol = {"ieee_ptr": F32_REDUCE, "tf32_ptr": F32_REDUCE, "i8_ptr": EXACT, "h_ptr": F16_ACC}
    return Case(args, (1,), exp, tol)


def _atomics(s, rng):
    n = s["n"]
    grid = cdiv(n, 64)
    x = rng.integers(-10 ** 6, 10 ** 6, n).astype(np.int32)
    buf = rng.integers(-5, 5, n).astype(np.int32)
    args = {"x_ptr": x, "max_ptr": np.full(1, np.iinfo(np.int32).min, np.int32), "sum_ptr": np.zeros(1, np.float32),
            "slot_ptr": np.zeros(grid, np.int32), "old1_ptr": np.full(grid, 7, np.int32),
            "old2_ptr": np.full(grid, 7, np.int32), "buf_ptr": buf.copy(), "prev_ptr": np.zeros(n, np.int32), "n": n}
    tags = np.arange(1, grid + 1)
    exp = {"max_ptr": np.array([x.max()]), "sum_ptr": np.array([x.astype(np.float64).sum()]), "slot_ptr": tags,
           "old1_ptr": np.zeros(grid), "old2_ptr": tags, "buf_ptr": x, "prev_ptr": buf}
    tol = {k: EXACT for k in exp}
    tol["sum_ptr"] = F32_REDUCE
    return Case(args, (grid,), exp, tol)


TASKS = [
    Task("vector_add", [{"n": 1}, {"n": 256}, {"n": 1000}, {"n": 4097}], _vector_add),
    Task("gelu", [{"n": 7}, {"n": 512}, {"n": 3001}], _gelu),
    Task("silu", [{"n": 100}, {"n": 129}, {"n": 2048}], _silu),
    Task("row_softmax", [{"m": 1, "n": 1}, {"m": 5, "n": 100}, {"m": 3, "n": 1024}, {"m": 4, "n": 781, "pad": 3}],
         _softmax),
    Task("layer_norm", [{"m": 3, "n": 17}, {"m": 8, "n": 256}, {"m": 2, "n": 200, "pad": 5}], _layer_norm),
    Task("rms_norm", [{"m": 2, "n": 31}, {"m": 6, "n": 512}, {"m": 3, "n": 300, "pad": 1}], _rms_norm),
    Task("row_sum", [{"m": 1, "n": 1}, {"m": 16, "n": 64}, {"m": 37, "n": 150}, {"m": 5, "n": 300, "pad": 2}],
         _row_sum),
    Task("cumsum_rows", [{"m": 1, "n": 5}, {"m": 8, "n": 128}, {"m": 13, "n": 100, "pad": 4}], _cumsum),
    Task("row_argmax", [{"m": 3, "n": 10}, {"m": 9, "n": 256}, {"m": 6, "n": 200, "ties": True}], _argmax),
    Task("embedding_gather", [{"vocab": 10, "d": 8, "t": 5}, {"vocab": 50, "d": 64, "t": 16},
                              {"vocab": 100, "d": 40, "t": 37}], _embedding),
    Task("take_along_rows", [{"m": 3, "n": 10, "k": 4}, {"m": 8, "n": 64, "k": 32}, {"m": 19, "n": 50, "k": 7}],
         _take),
    Task("histogram", [{"n": 1, "bins": 4}, {"n": 1000, "bins": 16}, {"n": 4099, "bins": 100}], _histogram),
    Task("scale_or_negate", [{"n": 100, "flag": 1}, {"n": 100, "flag": 0}, {"n": 64, "flag": 7}], _scale_or_negate),
    Task("matmul_bias_relu", [{"m": 32, "n": 32, "k": 32}, {"m": 50, "n": 70, "k": 45}, {"m": 17, "n": 33, "k": 100},
                              {"m": 64, "n": 16, "k": 7}], _matmul),
    # Op coverage: every op kind of the format, and every form of the ones with several (casts, dot inputs,
    # atomics, reduce and scan combines), with numpy references.
    Task("float_math", [{"n": 5}, {"n": 128}, {"n": 1000}], _float_math),
    Task("int_ops", [{"n": 3}, {"n": 64}, {"n": 700}], _int_ops),
    Task("tile_ops", [{"m": 16, "n": 16}, {"m": 13, "n": 9}, {"m": 1, "n": 16}], _tile_ops),
    Task("dot_variants", [{"m": 32, "n": 32, "k": 32}, {"m": 20, "n": 17, "k": 30}, {"m": 5, "n": 32, "k": 3}],
         _dot_variants),
    Task("atomics", [{"n": 1}, {"n": 64}, {"n": 1000}], _atomics),
]
