"""NKI Beta 2 kernels on tilescope (tilescope.nki; README, "NKI kernels"): results against numpy, the
findings the analyses make on NKI kernels, the compiler-style constraint errors, and unmodified
`import nki` programs under `tilescope sanitize`.

Expected values come from numpy computing the documented semantics (float32 arithmetic, rounding to the
destination dtype with ml_dtypes), never from tilescope."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest

import tilescope
import tilescope.nki as nki
import tilescope.nki.isa as nisa
import tilescope.nki.language as nl

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


@pytest.fixture(autouse=True)
def _clear():
    tilescope.clear_findings()
    yield
    tilescope.clear_findings()


def line_of(fn, text):
    """The file line of `text` inside function `fn`'s source."""
    import inspect

    lines, start = inspect.getsourcelines(fn)
    for i, l in enumerate(lines):
        if text in l:
            return start + i
    raise AssertionError(f"{text!r} not in {fn.__name__}")


# ------------------------------------------------------------------------------------------------
# Kernels of our own (Beta 2 syntax: destination first, explicit SBUF / PSUM allocation).


@nki.jit
def add_kernel(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for f in nl.affine_range(a.shape[1] // 256):
        ta = nl.ndarray((a.shape[0], 256), dtype=a.dtype, buffer=nl.sbuf)
        tb = nl.ndarray((a.shape[0], 256), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=ta, src=a[:, f * 256:(f + 1) * 256])
        nisa.dma_copy(dst=tb, src=b[:, f * 256:(f + 1) * 256])
        tc = nl.ndarray((a.shape[0], 256), dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=tc, data1=ta, data2=tb, op=nl.add)
        nisa.dma_copy(dst=out[:, f * 256:(f + 1) * 256], src=tc)
    return out


def test_tensor_add_float32_and_bfloat16():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 512), dtype=np.float32)
    b = rng.standard_normal((128, 512), dtype=np.float32)
    assert np.array_equal(add_kernel(a, b), a + b)
    assert tilescope.findings() == []
    ab, bb = a.astype(ml_dtypes.bfloat16), b.astype(ml_dtypes.bfloat16)
    c = add_kernel(ab, bb)
    assert c.dtype == ml_dtypes.bfloat16
    # The Vector engine adds in float32, then rounds to bfloat16 (to nearest even) on the write.
    expect = (ab.astype(np.float32) + bb.astype(np.float32)).astype(ml_dtypes.bfloat16)
    assert np.array_equal(c.view(np.uint16), expect.view(np.uint16))


@nki.jit
def matmul_kernel(a_t, b):
    """a_t: [K, M] (A transposed: K on partitions), b: [K, N]; out = A @ B, K in tiles of 128."""
    K, M = a_t.shape
    N = b.shape[1]
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    for k in nl.affine_range(K // 128):
        ta = nl.ndarray((128, M), dtype=a_t.dtype, buffer=nl.sbuf)
        tb = nl.ndarray((128, N), dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=ta, src=a_t[k * 128:(k + 1) * 128, :])
        nisa.dma_copy(dst=tb, src=b[k * 128:(k + 1) * 128, :])
        nisa.nc_matmul(dst=acc, stationary=ta, moving=tb)  # the first overwrites, later ones accumulate
    res = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    nisa.dma_copy(dst=out, src=res)
    return out


def test_tiled_matmul_accumulates_in_psum():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((96, 384), dtype=np.float32)
    b = rng.standard_normal((384, 512), dtype=np.float32)
    got = matmul_kernel(np.ascontiguousarray(a.T), b)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.abs(got - ref).max() < 1e-3 * np.abs(ref).max()
    # bfloat16 inputs: products of bf16 values summed in float32.
    ab, bb = a.astype(ml_dtypes.bfloat16), b.astype(ml_dtypes.bfloat16)
    got = matmul_kernel(np.ascontiguousarray(ab.T), bb)
    ref = ab.astype(np.float64) @ bb.astype(np.float64)
    assert np.abs(got - ref).max() < 1e-3 * np.abs(ref).max()
    assert tilescope.findings() == []


@nki.jit
def softmax_kernel(x):
    """Row softmax of x [P, F]: max, exp(x - max) with the row sum on the Scalar engine, 1 / sum."""
    P, F = x.shape
    out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    m = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=m, op=nl.maximum, data=t, axis=1)
    neg = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=neg, data=m, op0=nl.multiply, operand0=-1.0)
    e = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    s = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=e, op=nl.exp, data=t, bias=neg, reduce_op=nl.add, reduce_res=s,
                    reduce_cmd=nisa.reduce_cmd.reset_reduce)
    r = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.reciprocal(dst=r, data=s)
    y = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=y, data=e, op0=nl.multiply, operand0=r)
    nisa.dma_copy(dst=out, src=y)
    return out


def test_softmax_matches_numpy():
    x = np.random.default_rng(2).standard_normal((64, 300), dtype=np.float32) * 4
    got = softmax_kernel(x)
    z = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    ref = z / z.sum(axis=1, keepdims=True)
    # float32 arithmetic (exp, a 300-term sum, a reciprocal, a product): a few ulps of float32.
    assert np.allclose(got, ref, rtol=2e-5, atol=1e-9)
    assert tilescope.findings() == []


@nki.jit
def rmsnorm_kernel(x, w, eps):
    """y = x / sqrt(mean(x^2) + eps) * w per row; x [N, D] (rows on partitions, 128 per tile), w [1, D]."""
    N, D = x.shape
    out = nl.ndarray((N, D), dtype=x.dtype, buffer=nl.shared_hbm)
    wt = nl.ndarray((128, D), dtype=nl.float32, buffer=nl.sbuf)
    for p in nl.static_range(128):  # w on every partition
        nisa.dma_copy(dst=wt[p:p + 1, :], src=w)
    for i in nl.affine_range((N + 127) // 128):
        rows = min(128, N - i * 128)
        t = nl.ndarray((128, D), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t[:rows], src=x[i * 128:i * 128 + rows])
        sq = nl.ndarray((128, D), dtype=nl.float32, buffer=nl.sbuf)
        ss = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(dst=sq[:rows], op=nl.square, data=t[:rows], reduce_op=nl.add, reduce_res=ss[:rows])
        inv = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=inv[:rows], data=ss[:rows], op0=nl.multiply, operand0=1.0 / D, op1=nl.add,
                           operand1=eps)
        nisa.activation(dst=inv[:rows], op=nl.rsqrt, data=inv[:rows])
        y = nl.ndarray((128, D), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y[:rows], data=t[:rows], op0=nl.multiply, operand0=inv[:rows])
        nisa.tensor_tensor(dst=y[:rows], data1=y[:rows], data2=wt[:rows], op=nl.multiply)
        nisa.dma_copy(dst=out[i * 128:i * 128 + rows], src=y[:rows])
    return out


def test_rmsnorm_with_a_partial_last_tile():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((200, 64), dtype=np.float32)
    w = rng.standard_normal((1, 64), dtype=np.float32)
    got = rmsnorm_kernel(x, w, 1e-6)
    xd = x.astype(np.float64)
    ref = xd / np.sqrt((xd ** 2).mean(axis=1, keepdims=True) + 1e-6) * w
    assert np.abs(got - ref).max() < 1e-5
    assert tilescope.findings() == []


@nki.jit
def attention_kernel(q_t, k_t, v):
    """softmax(Q K^T / sqrt(d)) V for one head: q_t, k_t [d, S] (transposed: d on partitions), v [S, d].
    Per block of 128 queries: the scores by nc_matmul into PSUM, a row softmax (max, exp with the row sum
    on the Scalar engine), then P V over blocks of 128 keys (P's blocks transposed on the Tensor engine),
    accumulated in PSUM, scaled by 1 / sum."""
    d, s = q_t.shape
    scale = 1.0 / float(np.sqrt(d))
    out = nl.ndarray((s, d), dtype=v.dtype, buffer=nl.shared_hbm)
    kt = nl.ndarray((d, s), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=kt, src=k_t)
    for qi in nl.affine_range(s // 128):
        qt = nl.ndarray((d, 128), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=qt, src=q_t[:, qi * 128:(qi + 1) * 128])
        sc_ps = nl.ndarray((128, s), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=sc_ps, stationary=qt, moving=kt)
        sc = nl.ndarray((128, s), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=sc, src=sc_ps)
        m = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=m, op=nl.maximum, data=sc, axis=1)
        bias = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=bias, data=m, op0=nl.multiply, operand0=-scale)
        p = nl.ndarray((128, s), dtype=nl.float32, buffer=nl.sbuf)
        total = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(dst=p, op=nl.exp, data=sc, bias=bias, scale=scale, reduce_op=nl.add,
                               reduce_res=total)
        o_ps = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.psum)
        for kc in nl.affine_range(s // 128):
            pt_ps = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_transpose(dst=pt_ps, data=p[:, kc * 128:(kc + 1) * 128])
            pt = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=pt, src=pt_ps)
            vt = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=vt, src=v[kc * 128:(kc + 1) * 128, :])
            nisa.nc_matmul(dst=o_ps, stationary=pt, moving=vt)  # accumulates over the key blocks
        inv = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(dst=inv, data=total)
        o = nl.ndarray((128, d), dtype=v.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=o, data=o_ps, op0=nl.multiply, operand0=inv)
        nisa.dma_copy(dst=out[qi * 128:(qi + 1) * 128, :], src=o)
    return out


def test_tiled_attention_matches_numpy():
    rng = np.random.default_rng(4)
    s, d = 384, 64
    q, k, v = (rng.standard_normal((s, d), dtype=np.float32) for _ in range(3))
    got = attention_kernel(np.ascontiguousarray(q.T), np.ascontiguousarray(k.T), v)
    z = (q.astype(np.float64) @ k.T.astype(np.float64)) / np.sqrt(d)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    ref = (e / e.sum(axis=1, keepdims=True)) @ v.astype(np.float64)
    assert np.abs(got - ref).max() < 1e-5 * max(1.0, np.abs(ref).max()), np.abs(got - ref).max()
    assert tilescope.findings() == []


@nki.jit
def rope_kernel(x, cos, sin):
    """Rotary embedding of x [S, D] (S <= 128 rows on partitions), pairs (x[:, :D/2], x[:, D/2:]):
    y1 = x1 cos - x2 sin, y2 = x2 cos + x1 sin, with cos and sin [S, D/2]."""
    s, dim = x.shape
    h = dim // 2
    out = nl.ndarray((s, dim), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    c = nl.load(cos)
    sn = nl.load(sin)
    y = nl.ndarray((s, dim), dtype=x.dtype, buffer=nl.sbuf)
    a = nl.ndarray((s, h), dtype=nl.float32, buffer=nl.sbuf)
    b = nl.ndarray((s, h), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=a, data1=t[:, :h], data2=c, op=nl.multiply)
    nisa.tensor_tensor(dst=b, data1=t[:, h:], data2=sn, op=nl.multiply)
    nisa.tensor_tensor(dst=y[:, :h], data1=a, data2=b, op=nl.subtract)
    nisa.tensor_tensor(dst=a, data1=t[:, h:], data2=c, op=nl.multiply)
    nisa.tensor_tensor(dst=b, data1=t[:, :h], data2=sn, op=nl.multiply)
    nisa.tensor_tensor(dst=y[:, h:], data1=a, data2=b, op=nl.add)
    nl.store(out, value=y)
    return out


def test_rope_matches_numpy():
    rng = np.random.default_rng(5)
    s, dim = 96, 64
    x = rng.standard_normal((s, dim), dtype=np.float32)
    ang = np.outer(np.arange(s), 1.0 / 10000 ** (np.arange(dim // 2) / (dim // 2))).astype(np.float32)
    cos, sin = np.cos(ang), np.sin(ang)
    got = rope_kernel(x, cos, sin)
    x1, x2 = x[:, :dim // 2].astype(np.float64), x[:, dim // 2:].astype(np.float64)
    ref = np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=1)
    assert np.abs(got - ref).max() < 1e-5
    assert tilescope.findings() == []


@nki.jit
def mlp_kernel(x_t, w1, w2):
    """y = gelu(x W1) W2 for 128 rows: x_t [D, 128] (transposed), w1 [D, H], w2 [H, E]; H in blocks of 128."""
    d, n = x_t.shape
    hid, e = w2.shape
    out = nl.ndarray((n, e), dtype=nl.float32, buffer=nl.shared_hbm)
    xt = nl.load(x_t)
    wt1 = nl.load(w1)
    h_ps = nl.ndarray((n, hid), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=h_ps, stationary=xt, moving=wt1)
    h = nl.ndarray((n, hid), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=h, op=nl.gelu, data=h_ps)
    y_ps = nl.ndarray((n, e), dtype=nl.float32, buffer=nl.psum)
    for c in nl.affine_range(hid // 128):
        ht_ps = nl.ndarray((128, n), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_transpose(dst=ht_ps, data=h[:, c * 128:(c + 1) * 128])
        ht = nl.ndarray((128, n), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=ht, src=ht_ps)
        wt2 = nl.load(w2[c * 128:(c + 1) * 128, :])
        nisa.nc_matmul(dst=y_ps, stationary=ht, moving=wt2)
    y = nl.ndarray((n, e), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=y, src=y_ps)
    nl.store(out, value=y)
    return out


def test_mlp_matches_numpy():
    from math import erf

    rng = np.random.default_rng(6)
    x = rng.standard_normal((128, 96), dtype=np.float32)
    w1 = rng.standard_normal((96, 256), dtype=np.float32) / 10
    w2 = rng.standard_normal((256, 64), dtype=np.float32) / 10
    got = mlp_kernel(np.ascontiguousarray(x.T), w1, w2)
    hx = x.astype(np.float64) @ w1
    gelu = 0.5 * hx * (1 + np.vectorize(erf)(hx / np.sqrt(2)))  # the exact GELU (nl.gelu)
    ref = gelu @ w2
    assert np.abs(got - ref).max() < 1e-4, np.abs(got - ref).max()
    assert tilescope.findings() == []


def test_integer_indexing_keeps_on_chip_tiles_two_dimensional():
    shapes = {}

    @nki.jit
    def k(a):
        t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        u = nl.ndarray((128, 4, 8), dtype=nl.float32, buffer=nl.sbuf)
        shapes.update(row=t[3, :].shape, col=t[:, 5].shape, mid=u[:, 1, :].shape, both=u[:, 1, 2].shape,
                      hbm=a[3].shape, hbm2=a[3, 4:6].shape)

    k(np.zeros((8, 16), np.float32))
    # NKI language guide, "Indexing": the partition dim stays (size 1); at least two dims on chip; HBM drops.
    assert shapes == {"row": (1, 64), "col": (128, 1), "mid": (128, 8), "both": (128, 1), "hbm": (16,),
                      "hbm2": (2,)}


@nki.jit
def avgpool_kernel(x, pool):
    """2-D average pooling of x [C, H, W] (C <= 128) with a pool x pool window, through a 5-D access
    pattern of the SBUF tile (.ap) and one tensor_reduce over the window's two dims."""
    c, h, w = x.shape
    out = nl.ndarray((c, h // pool, w // pool), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((c, h, w), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    windows = t.ap([[h * w, c], [pool * w, h // pool], [pool, w // pool], [w, pool], [1, pool]])
    s = nl.ndarray((c, h // pool, w // pool), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=s, op=nl.add, data=windows, axis=(3, 4))
    y = nl.ndarray((c, h // pool, w // pool), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=y, data=s, op0=nl.multiply, operand0=1.0 / (pool * pool))
    nisa.dma_copy(dst=out, src=y)
    return out


def test_access_patterns_average_pool():
    x = np.random.default_rng(7).standard_normal((16, 12, 18), dtype=np.float32)
    got = avgpool_kernel(x, 3)
    ref = x.astype(np.float64).reshape(16, 4, 3, 6, 3).mean(axis=(2, 4))
    assert np.abs(got - ref).max() < 1e-6
    assert tilescope.findings() == []
    with pytest.raises(nki.NkiError, match=r"test_nki\.py:\d+:\d+: ap\(\): every count"):
        @nki.jit
        def bad(a):
            t = nl.ndarray((4, 4), dtype=nl.float32, buffer=nl.sbuf)
            t.ap([[4, 4], [1, 0]])
        bad(np.zeros((1, 1), np.float32))


@nki.jit
def reductions_kernel(x):
    """nl.sum / nl.max over the last free dims (NKI 0.3.0's nki.language reductions)."""
    t = nl.load(x)
    s = nl.sum(t, axis=[2])
    m = nl.max(t, axis=(1, 2))
    out_s = nl.ndarray(s.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    out_m = nl.ndarray(m.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out_s, value=s)
    nl.store(out_m, value=m)
    return out_s, out_m


def test_language_reductions():
    x = np.random.default_rng(8).standard_normal((32, 4, 10), dtype=np.float32)
    s, m = reductions_kernel(x)
    assert s.shape == (32, 4) and m.shape == (32, 1)
    assert np.allclose(s, x.sum(axis=2), rtol=1e-6, atol=1e-6)
    assert np.array_equal(m[:, 0], x.max(axis=(1, 2)))


@nki.jit
def scale_rows_by_vector_kernel(x, v):
    """x [P, F] times v [1, F] on every partition, through nl.broadcast_to (the partition dim broadcast)."""
    t = nl.load(x)
    w = nl.load(v)
    wb = nl.broadcast_to(w, t.shape)
    y = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=y, data1=t, data2=wb, op=nl.multiply)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=y)
    return out


def test_broadcast_to_repeats_size_one_dims():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((64, 40), dtype=np.float32)
    v = rng.standard_normal((1, 40), dtype=np.float32)
    assert np.array_equal(scale_rows_by_vector_kernel(x, v), x * v)
    assert tilescope.findings() == []


@nki.jit
def views_kernel(x, v):
    """NKI 0.5.0's view methods on SBUF tiles, each result copied out whole (tensor_copy / dma_copy)."""
    p, a, b = x.shape
    t = nl.load(x)                                     # [p, a, b]
    w = nl.load(v)                                     # [p, b]
    outs = []
    for view in (t.permute((0, 2, 1)),                 # [p, b, a]
                 w.expand_dim(1).broadcast(1, a),      # [p, a, b]: w repeated over a (stride 0)
                 t.flatten_dims(1, 2).reshape_dim(1, (b, a)),  # [p, b, a] of the same memory order
                 t.slice(2, 1, b, 2),                  # [p, a, 2]: columns 1 and 3
                 t.select(1, a - 1),                   # [p, b]
                 t.expand_dim(2).squeeze_dim(2)):      # [p, a, b] again
        y = nl.ndarray(view.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=y, src=view)
        o = nl.ndarray(view.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o, src=y)
        outs.append(o)
    return tuple(outs)


def test_view_methods_match_numpy():
    rng = np.random.default_rng(10)
    x = rng.standard_normal((16, 3, 5), dtype=np.float32)
    v = rng.standard_normal((16, 5), dtype=np.float32)
    perm, bc, resh, sl, sel, same = views_kernel(x, v)
    assert np.array_equal(perm, x.transpose(0, 2, 1))
    assert np.array_equal(bc, np.broadcast_to(v[:, None, :], (16, 3, 5)))
    assert np.array_equal(resh, x.reshape(16, 5, 3))
    assert np.array_equal(sl, x[:, :, 1:5:2])
    assert np.array_equal(sel, x[:, 2, :])
    assert np.array_equal(same, x)
    assert tilescope.findings() == []


def test_view_method_attributes_and_errors():
    seen = {}

    @nki.jit
    def k(a):
        t = nl.ndarray((128, 4, 6), dtype=nl.float32, buffer=nl.sbuf)
        seen.update(strides=t.strides, offset=t[:, 1, :].offset, size=t.size, contiguous=t.is_contiguous(),
                    perm_contiguous=t.permute((0, 2, 1)).is_contiguous(), part=t[0:64].is_contiguous(),
                    pattern=t[:, :, 2:4].get_pattern(), indirect=t.is_indirect(),
                    bshape=t[:, 0:1, :].broadcast(1, 9).shape, bstrides=t[:, 0:1, :].broadcast(1, 9).strides)
        idx = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        g = a.ap([[2, 1], [1, 2]], scalar_offset=idx, indirect_dim=0)  # a runtime offset: an indirect view
        seen.update(dyn_indirect=g.is_indirect())
        for bad in (lambda: t.permute((1, 0, 2)), lambda: t.broadcast(1, 3), lambda: t.broadcast(0, 3),
                    lambda: t.squeeze_dim(1), lambda: t.reshape_dim(1, (3, 3)), lambda: t.slice(2, 4, 2),
                    lambda: t.select(1, 4), lambda: t.permute((0, 2, 1)).flatten_dims(1, 2),
                    lambda: g.expand_dim(1)):
            try:
                bad()
            except nki.NkiError as e:
                seen.setdefault("errors", []).append(str(e))

    k(np.zeros((4, 2), np.float32))
    # NKI language guide, "Anatomy of a tensor": strides in elements, offset of the view, size = elements.
    assert seen["strides"] == (24, 6, 1) and seen["offset"] == 6 and seen["size"] == 128 * 24
    assert seen["contiguous"] and not seen["perm_contiguous"] and seen["part"] and not seen["indirect"]
    assert seen["pattern"] == [[24, 128], [6, 4], [1, 2]]
    assert seen["bshape"] == (128, 9, 6) and seen["bstrides"] == (24, 0, 1)
    errors = seen["errors"]
    assert seen["dyn_indirect"]
    assert len(errors) == 9 and all(e.startswith(f"{__file__}:") for e in errors), errors
    for text in ("permute(): dims[0] must be 0", "broadcast(): dimension 1 of", "broadcast(): dim 0 is the partition",
                 "squeeze_dim(): dimension 1", "reshape_dim(): (3, 3) has 9 elements", "slice(): [4:2:1]",
                 "select(): index 4 is outside 0..3", "flatten_dims(): dimensions 1..2",
                 "before .ap() with dynamic offsets, not after"):
        assert any(text in e for e in errors), (text, errors)


def test_numpy_scalars_are_numbers():
    @nki.jit
    def k(x):
        t = nl.load(x)
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=np.float32(0.5), op1=nl.add,
                           operand1=np.int64(3))
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=t)
        return out

    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    assert np.array_equal(k(x), x * 0.5 + 3)


def test_torch_tensors_in_and_out():
    torch = pytest.importorskip("torch")
    a = torch.randn(128, 256)
    b = torch.randn(128, 256)
    c = add_kernel(a, b)
    assert isinstance(c, torch.Tensor) and torch.equal(c, a + b)


# ------------------------------------------------------------------------------------------------
# Findings


@nki.jit
def uninit_kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    u = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t[:, :100], src=a[:, :100])  # BUG: the columns from 100 on are never loaded
    nisa.tensor_tensor(dst=u, data1=t, data2=t, op=nl.multiply)
    nisa.dma_copy(dst=out, src=u)
    return out


def test_reading_sbuf_never_written_is_a_finding_at_the_kernel_line():
    a = np.ones((32, 128), dtype=np.float32)
    uninit_kernel(a)
    found = tilescope.findings()
    assert [f["kind"] for f in found] == ["uninitialized-read"], found
    f = found[0]
    assert f["file"] == __file__ and f["line"] == line_of(uninit_kernel.fn, "nisa.tensor_tensor(dst=u")
    assert f["op"] == "nki.isa.tensor_tensor"
    assert f["allocation"]["line"] == line_of(uninit_kernel.fn, "t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)")
    # Columns 100..127 of each of the 32 partitions were never written: 32 x 28 elements read (twice,
    # as data1 and data2: the finding counts the lanes of the access).
    assert f["offsets"]["min"] == 100 and f["offsets"]["max"] == 31 * 128 + 127
    assert "nl.zeros" in f["hint"] and "torch" not in f["hint"]
    text = tilescope.report_text(color=False)
    assert "TTIR" not in text and "uninit_kernel" in text, text


@nki.jit
def loop_tiles_kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(3):
        t = nl.ndarray((4, 8), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t[:, :6], src=a[:, i * 8:i * 8 + 6])  # BUG: columns 6 and 7 never written
        nisa.dma_copy(dst=out[:, i * 8:(i + 1) * 8], src=t)
    return out


def test_tiles_of_one_line_in_a_loop_are_one_finding_of_one_launch():
    loop_tiles_kernel(np.ones((4, 24), dtype=np.float32))
    found = tilescope.findings()
    assert len(found) == 1, found
    f = found[0]
    # Three tiles (one per iteration) from one nl.ndarray line, read by one program of one launch.
    assert f["programs"]["count"] == 1 and f["launches"]["count"] == 1 and f["occurrences"] == 3
    assert f["lanes"]["count"] == 3 * 4 * 2 and (f["offsets"]["min"], f["offsets"]["max"]) == (6, 31)
    assert "in 1 program" in f["summary"] and "launches" not in tilescope.report_text(color=False)


@nki.jit
def hbm_out_read_kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=out)  # BUG: reads the output before anything wrote it
    nisa.dma_copy(dst=out, src=t)
    return out


def test_reading_a_fresh_hbm_output_is_a_finding():
    hbm_out_read_kernel(np.ones((4, 8), dtype=np.float32))
    found = tilescope.findings()
    assert [(f["kind"], f["line"]) for f in found] == [
        ("uninitialized-read", line_of(hbm_out_read_kernel.fn, "nisa.dma_copy(dst=t, src=out)"))], found
    assert found[0]["allocation"]["call"] == "nl.ndarray(buffer=nl.shared_hbm)"


@nki.jit
def rows_kernel(a, out, overlap):
    """Program p copies rows [p * 16, p * 16 + 16 + overlap) of a into out."""
    p = nl.program_id(0)
    n = 16 + overlap
    t = nl.ndarray((n, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a[p * 16:p * 16 + n])
    nisa.dma_copy(dst=out[p * 16:p * 16 + n], src=t)


def test_spmd_programs_race_on_hbm_only_when_they_overlap():
    a = np.arange(64 * 8, dtype=np.float32).reshape(64, 8)
    out = np.zeros_like(a)
    rows_kernel[4](a, out, 0)  # disjoint rows: no race
    assert np.array_equal(out, a) and tilescope.findings() == []
    out2 = np.zeros((80, 8), dtype=np.float32)
    a2 = np.arange(80 * 8, dtype=np.float32).reshape(80, 8)
    rows_kernel[4](a2, out2, 4)  # program p writes rows p*16 .. p*16+19: 4 rows shared with p + 1
    races = [f for f in tilescope.findings() if f["kind"] == "data-race"]
    assert races and {f["kind"] for f in tilescope.findings()} == {"data-race"}, tilescope.findings()
    f = races[0]
    assert f["line"] == line_of(rows_kernel.fn, "nisa.dma_copy(dst=out")
    # Rows 16..19, 32..35 and 48..51 are written by two programs each.
    assert f["offsets"]["min"] == 16 * 8 and f["offsets"]["max"] == 51 * 8 + 7
    assert "nl.program_id(0)" in f["hint"] and "tl." not in f["hint"]


# ------------------------------------------------------------------------------------------------
# Constraint errors, as the compiler reports them: the op, the argument, the rule, the line.


def run_bad(body: str, *arrays, programs=1):
    ns = {"nki": nki, "nl": nl, "nisa": nisa, "np": np}
    src = "def bad(a):\n" + textwrap.indent(textwrap.dedent(body), "    ")
    path = os.path.join(HERE, "_nki_bad_kernel.py")  # a real file: the error names its lines
    with open(path, "w") as f:
        f.write(src)
    code = compile(src, path, "exec")
    exec(code, ns)
    k = nki.jit(ns["bad"])
    try:
        with pytest.raises(nki.NkiError) as e:
            (k[programs] if programs > 1 else k)(*arrays)
    finally:
        os.remove(path)
    return str(e.value), path


@pytest.mark.parametrize("body, says, line", [
    ("t = nl.ndarray((128, 8), dtype=np.float64, buffer=nl.sbuf)\n", "unsupported NKI dtype", 2),
    ("t = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)\n"
     "nisa.memset(dst=t, value=0, mask=t)\n", "the mask parameter is not supported", 3),
    ("t = nl.ndarray((129, 4), dtype=nl.float32, buffer=nl.sbuf)\n",
     "nki.language.ndarray(buffer=nl.sbuf): shape (129, 4): the partition dimension (dim 0) is 129, more than "
     "the 128 partitions", 2),
    ("t = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)\n"
     "nisa.dma_copy(dst=t, src=a[:, 0:8])\n",
     "nki.isa.dma_copy: 'dst' (128x4, 512 elements) and 'src' (128x8, 1024 elements) must have the same number "
     "of elements", 3),
    ("s = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)\n"
     "m = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)\n"
     "d = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)\n"
     "nisa.nc_matmul(dst=d, stationary=s, moving=m)\n",
     "nki.isa.nc_matmul: argument 'dst' is in sbuf, but this op takes it only from psum", 5),
    ("d = nl.ndarray((128, 8192), dtype=nl.float32, buffer=nl.psum)\n",
     "shape (128, 8192) of float32 takes 32768 bytes per partition; psum holds 16384 bytes per partition", 2),
    ("x = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)\n"
     "y = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)\n"
     "z = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)\n"
     "nisa.tensor_tensor(dst=z, data1=x, data2=y, op=nl.add)\n",
     "nki.isa.tensor_tensor: 'data1' and 'data2' cannot both be in PSUM", 5),
    ("t = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)\n"
     "nisa.activation(dst=t, op=nl.add, data=t)\n",
     "nki.isa.activation: 'op' nl.add is not an activation function (nl.add is an ALU operator: "
     "nisa.tensor_tensor and nisa.tensor_scalar take it)", 3),
    ("t = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)\n"
     "nisa.dma_copy(dst=t, src=a[:, 8:16])\n",
     "outside 0..7", 3),
    ("t = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)\n"
     "nisa.activation(dst=t, op=np.exp, data=t)\n",
     "nki.isa.activation: argument 'op' is numpy's np.exp; NKI ops take the operators of nki.language (such as "
     "nl.exp)", 3),
    ("t = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)\n"
     "u = t.reshape((64, 16))\n",
     "cannot reshape the on-chip tensor <nki tensor t float32[128, 8] in sbuf> to (64, 16): the partition "
     "dimension (dim 0, 128) must stay as it is", 3),
    ("t = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)\n"
     "nisa.tensor_scalar(dst=t, data=t, op0=nl.exp, operand0=0.0)\n",
     "nki.isa.tensor_scalar: 'op0' nl.exp is not an ALU operator (nl.exp is an activation function: "
     "nisa.activation computes it on the Scalar engine)", 3),
    ("t = nl.load(a.reshape((256, 4)))\n",
     "nki.language.load: 'src' (256x4) has 256 rows, but the new SBUF tile puts dim 0 on the partitions: at most 128",
     2),
])
def test_constraint_errors_name_the_op_the_argument_and_the_line(body, says, line):
    a = np.zeros((128, 8), dtype=np.float32)
    msg, path = run_bad(body, a)
    assert says in msg, msg
    if line is not None:
        assert msg.startswith(f"{path}:{line}:"), msg


def test_moving_free_size_over_one_psum_bank_is_an_error():
    a = np.zeros((128, 8), dtype=np.float32)
    msg, path = run_bad(
        "s = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf)\n"
        "m = nl.ndarray((128, 1024), dtype=nl.bfloat16, buffer=nl.sbuf)\n"
        "d = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)\n"
        "nisa.nc_matmul(dst=d, stationary=s, moving=m[:, :1024])\n", a)
    assert "'moving' has 1024 elements per partition; at most 512 (one PSUM bank)" in msg, msg
    assert msg.startswith(f"{path}:5:"), msg


def test_sbuf_capacity_counts_the_tiles_live_at_once():
    a = np.ones((128, 20000), dtype=np.float32)
    # Three tiles of 80000 bytes per partition live at the tensor_tensor: 240000 > 212984 (trn2).
    msg, path = run_bad(
        "t1 = nl.ndarray((128, 20000), dtype=nl.float32, buffer=nl.sbuf)\n"
        "t2 = nl.ndarray((128, 20000), dtype=nl.float32, buffer=nl.sbuf)\n"
        "t3 = nl.ndarray((128, 20000), dtype=nl.float32, buffer=nl.sbuf)\n"
        "nisa.dma_copy(dst=t1, src=a)\n"
        "nisa.dma_copy(dst=t2, src=a)\n"
        "nisa.tensor_tensor(dst=t3, data1=t1, data2=t2, op=nl.add)\n", a)
    assert msg.startswith(f"{path}:7:"), msg
    assert "3 tensors live here need 240000 bytes per partition of sbuf, which holds 212984 on trn2" in msg, msg
    assert f"{path}:2:" in msg and f"{path}:4:" in msg  # the allocations, with their lines


@nki.jit
def many_tiles_kernel(a):
    """A fresh 16 KiB-per-partition tile in each of 40 iterations (640 KiB in all): each dies in its iteration."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(40):
        t = nl.ndarray((128, 4096), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a[:, i * 4096:(i + 1) * 4096])
        nisa.dma_copy(dst=out[:, i * 4096:(i + 1) * 4096], src=t)
    return out


def test_tiles_that_die_in_their_iteration_fit():
    a = np.arange(128 * 40 * 4096, dtype=np.float32).reshape(128, -1)
    assert np.array_equal(many_tiles_kernel(a), a)


def test_grids_are_one_dimensional():
    with pytest.raises(nki.NkiError, match="one-dimensional") as e:
        add_kernel[2, 2]  # @grid
    assert str(e.value).startswith(f"{__file__}:{line_of(test_grids_are_one_dimensional, '@grid')}:"), e.value
    with pytest.raises(nki.NkiError, match="invalid program axis 1"):
        @nki.jit
        def k(a):
            nl.program_id(1)
        k(np.zeros((4, 4), np.float32))


# ------------------------------------------------------------------------------------------------
# Unmodified programs: `import nki` under `tilescope sanitize`


PROGRAM = '''
import numpy as np
import nki
import nki.language as nl
import nki.isa as nisa
from nki.typing import tensor


@nki.jit
def scale_kernel(x: tensor):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=y, data=t, op0=nl.multiply, operand0=2.0, op1=nl.add, operand1=1.0)
    nisa.dma_copy(dst=out, src=y)
    return out


x = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)
y = scale_kernel(x)
assert np.array_equal(y, x * 2 + 1), "wrong values"
print("ok", nki.__name__)
'''


def test_unmodified_import_nki_runs_under_sanitize(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    p = subprocess.run([sys.executable, "-m", "tilescope", "sanitize", "--", sys.executable, str(prog)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "ok tilescope.nki" in p.stdout
    assert "no findings (1 launch(es) in 1 process(es))" in p.stderr, p.stderr
    # Without tilescope sanitize, `import nki` is AWS's package or nothing: here, nothing.
    q = subprocess.run([sys.executable, str(prog)], capture_output=True, text=True, timeout=60,
                       env={k: v for k, v in os.environ.items() if k != "TILESCOPE_SANITIZE"})
    assert q.returncode != 0 and "No module named 'nki'" in q.stderr
