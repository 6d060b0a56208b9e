"""The NKI kernels of examples/nki_*.py (README, "NKI kernels") at several sizes, partial tiles included,
against numpy: zero findings, and results within each example's documented tolerance of a float64 numpy
computation written here (not the example's own check). A few negative controls show that the bounds
are tight enough to catch a wrong result.

The examples `import nki`; here that name is tilescope.nki while an example is imported."""
from __future__ import annotations

import importlib.util
import math
import os
import sys

import ml_dtypes
import numpy as np
import pytest

import tilescope
import tilescope.nki
import tilescope.nki.isa
import tilescope.nki.language

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BF16 = ml_dtypes.bfloat16
U = 2.0 ** -24  # float32's unit roundoff
UB = 2.0 ** -8  # bfloat16's


def example(name):
    """examples/<name>.py as a module, with `import nki` giving tilescope.nki."""
    alias = {"nki": tilescope.nki, "nki.language": tilescope.nki.language, "nki.isa": tilescope.nki.isa}
    saved = {k: sys.modules.get(k) for k in alias}
    sys.modules.update(alias)
    try:
        path = os.path.join(ROOT, "examples", name + ".py")
        spec = importlib.util.spec_from_file_location(f"nki_example_{name}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


@pytest.fixture(autouse=True)
def _clear():
    tilescope.clear_findings()
    yield
    assert tilescope.findings() == [], tilescope.findings()  # correct kernels: zero findings
    tilescope.clear_findings()


def rng(seed):
    return np.random.default_rng(seed)


def bf16(a):
    return a.astype(np.float32).astype(BF16)


# ------------------------------------------------------------------------------------------------
# Element-wise add on an SPMD grid (one program per 128 rows)


@pytest.mark.parametrize("shape", [(128, 512), (300, 1100), (1, 7)])
def test_tensor_add(shape):
    m = example("nki_tensor_add")
    a, b = rng(1).standard_normal(shape, dtype=np.float32), rng(2).standard_normal(shape, dtype=np.float32)
    assert np.array_equal(m.add(a, b), a + b)  # float32 add, no other rounding
    ab, bb = bf16(a), bf16(b)
    c = m.add(ab, bb)
    assert c.dtype == BF16
    # float32 sum, rounded once to bfloat16 (to nearest even)
    ref = (ab.astype(np.float32) + bb.astype(np.float32)).astype(BF16)
    assert np.array_equal(c.view(np.uint16), ref.view(np.uint16))


# ------------------------------------------------------------------------------------------------
# Tiled bf16 matmul


def matmul_ok(c, a, b):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    exact = a64 @ b64
    bound = UB * np.abs(exact) + (1 + UB) * a.shape[1] * U * (np.abs(a64) @ np.abs(b64))
    return bool((np.abs(c.astype(np.float64) - exact) <= bound).all())


@pytest.mark.parametrize("m_k_n", [(128, 128, 512), (200, 300, 700), (5, 129, 513)])
def test_tiled_matmul(m_k_n):
    M, K, N = m_k_n
    mod = example("nki_matmul")
    a, b = bf16(rng(3).standard_normal((M, K))), bf16(rng(4).standard_normal((K, N)))
    c = mod.matmul(a, b)
    assert c.dtype == BF16 and c.shape == (M, N)
    assert matmul_ok(c, a, b)
    if K > 128:  # negative control: the product without the last K tile is outside the bound
        k_done = (K - 1) // 128 * 128
        assert not matmul_ok(bf16(a[:, :k_done].astype(np.float64) @ b[:k_done].astype(np.float64)), a, b)


# ------------------------------------------------------------------------------------------------
# Row softmax


def softmax_ok(y, x, rounding=0.0):
    """y within the float32 tolerance of the float64 softmax of x (plus `rounding`, relative: bf16 output)."""
    x64 = x.astype(np.float64)
    d = x64 - x64.max(axis=1, keepdims=True)
    ref = np.exp(d) / np.exp(d).sum(axis=1, keepdims=True)
    rtol = rounding + (1 + rounding) * (x.shape[1] + np.abs(d) + 8) * U
    return bool((np.abs(y.astype(np.float64) - ref) <= rtol * ref + 2.0 ** -140).all())


@pytest.mark.parametrize("shape, offset", [((128, 64), 0.0), ((300, 1000), 50.0), ((1, 5), -1000.0)])
def test_softmax(shape, offset):
    m = example("nki_softmax")
    x = rng(5).standard_normal(shape, dtype=np.float32) * 10 + np.float32(offset)
    y = m.softmax_kernel(x)
    assert softmax_ok(y, x)
    assert not softmax_ok(y * np.float32(1 + 2e-4), x)  # negative control: 2e-4 relative is too much
    xb = bf16(x)
    yb = m.softmax_kernel(xb)  # bfloat16 in and out: the float32 result rounded once
    assert yb.dtype == BF16 and softmax_ok(yb, xb, rounding=UB)


# ------------------------------------------------------------------------------------------------
# RoPE


def rope_tables(s, dim):
    ang = np.outer(np.arange(s), 10000.0 ** (-np.arange(0, dim, 2) / dim))
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)


@pytest.mark.parametrize("shape", [(128, 1, 64), (200, 4, 64), (37, 8, 128)])
def test_rope(shape):
    m = example("nki_rope")
    s, heads, dim = shape
    x = rng(6).standard_normal(shape, dtype=np.float32)
    cos, sin = rope_tables(s, dim)
    y = m.rope_kernel(x, cos, sin)
    h = dim // 2
    x1, x2 = x[..., :h].astype(np.float64), x[..., h:].astype(np.float64)
    c, sn = cos[:, None, :].astype(np.float64), sin[:, None, :].astype(np.float64)
    ref = np.concatenate([x1 * c - x2 * sn, x2 * c + x1 * sn], axis=-1)
    bound = 3 * U * np.concatenate([np.abs(x1 * c) + np.abs(x2 * sn), np.abs(x2 * c) + np.abs(x1 * sn)], axis=-1)
    assert (np.abs(y - ref) <= bound).all()


# ------------------------------------------------------------------------------------------------
# Flash attention


def attention_ok(out, q, k, v, causal):
    q64, k64, v64 = (t.astype(np.float64) for t in (q, k, v))
    z = q64 @ k64.transpose(0, 2, 1) / math.sqrt(q.shape[-1])
    if causal:
        z = np.where(np.arange(z.shape[2])[None, :] <= np.arange(z.shape[1])[:, None], z, -np.inf)
    w = np.exp(z - z.max(axis=-1, keepdims=True))
    w /= w.sum(axis=-1, keepdims=True)
    return bool((np.abs(out.astype(np.float64) - w @ v64) <= 1.01 * 2 * UB * (w @ np.abs(v64))).all())


@pytest.mark.parametrize("heads, s, sk, d, causal", [
    (2, 300, 300, 64, False), (2, 300, 300, 64, True),  # 3 key tiles, the last of 44
    (1, 256, 256, 128, True),                            # whole tiles, d = 128
    (1, 100, 400, 32, False),                            # one query tile, 4 key tiles (cross attention)
])
def test_flash_attention(heads, s, sk, d, causal):
    m = example("nki_attention")
    r = rng(7)
    q = bf16(r.standard_normal((heads, s, d)))
    k, v = bf16(r.standard_normal((heads, sk, d))), bf16(r.standard_normal((heads, sk, d)))
    out = m.attention(q, k, v, causal)
    assert out.dtype == BF16 and out.shape == (heads, s, d)
    assert attention_ok(out, q, k, v, causal)
    # negative control: the other masking is far outside the bound
    if s == sk:
        assert not attention_ok(out, q, k, v, not causal)


# ------------------------------------------------------------------------------------------------
# MLP


def mlp_exact(x, w1, w2):
    x64, w164, w264 = (t.astype(np.float64) for t in (x, w1, w2))
    pre = x64 @ w164
    h = pre / (1 + np.exp(-pre))  # SiLU
    return h @ w264, h, x64, w164, w264


def mlp_ok(y, x, w1, w2):
    exact, h, x64, w164, w264 = mlp_exact(x, w1, w2)
    d, f = w1.shape
    bound = (UB * np.abs(exact) + (1.01 * 2 * UB + f * U) * (np.abs(h) @ np.abs(w264))
             + 1.12 * (d * U * (np.abs(x64) @ np.abs(w164))) @ np.abs(w264))
    return bool((np.abs(y.astype(np.float64) - exact) <= bound).all())


@pytest.mark.parametrize("n, d, f, e", [(128, 128, 128, 512), (200, 192, 320, 600), (3, 5, 7, 9)])
def test_mlp(n, d, f, e):
    m = example("nki_mlp")
    r = rng(8)
    x = bf16(r.standard_normal((n, d)))
    w1, w2 = bf16(r.standard_normal((d, f)) / math.sqrt(d)), bf16(r.standard_normal((f, e)) / math.sqrt(f))
    y = m.mlp_kernel(x, w1, w2)
    assert y.dtype == BF16 and y.shape == (n, e)
    assert mlp_ok(y, x, w1, w2)
    # negative control: GELU instead of SiLU is outside the bound
    pre = x.astype(np.float64) @ w1.astype(np.float64)
    gelu = 0.5 * pre * (1 + np.tanh(math.sqrt(2 / math.pi) * (pre + 0.044715 * pre ** 3)))
    assert not mlp_ok(gelu @ w2.astype(np.float64), x, w1, w2)
