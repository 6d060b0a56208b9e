"""Tiled (flash-style) attention as an NKI Beta 2 kernel, run on the CPU by tilescope.

out[h] = softmax(Q K^T / sqrt(d)) V for each head h of q [H, S, d], k [H, Sk, d], v [H, Sk, d]
(bfloat16, d <= 128), optionally causal (query i sees keys j <= i). One program per head
(`attention_kernel[H](q, k, v)`, `nl.program_id(0)`). Per tile of 128 queries, the key tiles of 128 go
through the running ("online") softmax of flash attention, so the [S, Sk] score matrix is never stored:

- scores: nc_matmul(stationary = Q^T tile [d, 128], moving = K^T tile [d, 128]) into PSUM, contracting
  over d on the partitions (nki.isa.nc_matmul). Q^T and K^T come straight from HBM through transposing
  DMAs (nki.isa.dma_transpose, 2-byte dtypes).
- causal: a key tile that crosses the diagonal is copied to SBUF and masked on the GpSimd engine by an
  affine predicate, (q0 + p) - (k0 + i) >= 0 (nki.isa.affine_select); key tiles past it are skipped.
- running max m, weights exp((s - m_new) / sqrt(d)) and their row sum in one Scalar engine instruction
  (nki.isa.activation_reduce), the correction exp((m_old - m_new) / sqrt(d)) of the earlier tiles;
- P V: the bfloat16 weights transposed on the Tensor engine (nki.isa.nc_transpose, into PSUM), then
  nc_matmul(stationary = P^T [128 keys, 128 queries], moving = V tile [128 keys, d]);
- o = o * correction + P V and l = l * correction + row sum on the Vector engine
  (nki.isa.scalar_tensor_tensor); at the end out = o / l.
The key loop carries m, l and o from one iteration to the next, so it is an nl.sequential_range (an
nl.affine_range promises independent iterations: NKI language guide, "Loops").

Tolerance (a bound): the weights are rounded to bfloat16 for the P V matmul (relative 2^-8 each) and the
output is rounded to bfloat16 (2^-8); everything else is float32. With W the exact attention weights,
|out - exact| <= 1.01 * 2^-7 (W @ |V|) elementwise (the 1% covers the float32 roundings).

Run: tilescope sanitize -- python examples/nki_attention.py   (`import nki` is tilescope's NKI there)
"""
import math

import ml_dtypes
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

MASKED = -30000.0  # a masked score: exp(MASKED / sqrt(d)) is 0 in float32 for every d <= 128


def tiles(n, size):
    """(start, length) of the tiles of `size` covering 0..n (the last may be partial)."""
    return [(s, min(size, n - s)) for s in range(0, n, size)]


@nki.jit
def attention_kernel(q, k, v, causal=False):
    heads, s, d = q.shape
    sk = k.shape[1]
    P = nl.tile_size.pmax
    f32 = nl.float32
    scale = 1.0 / math.sqrt(d)
    h = nl.program_id(0)
    out = nl.ndarray((heads, s, d), dtype=q.dtype, buffer=nl.shared_hbm)
    key_tiles = tiles(sk, P)
    # This head's K^T [d, Sk] (d on the partitions: the contraction of Q K^T) and V [128, key tile, d].
    kt = nl.ndarray((d, sk), dtype=k.dtype, buffer=nl.sbuf)
    vt = nl.ndarray((P, len(key_tiles), d), dtype=v.dtype, buffer=nl.sbuf)
    for j, (k0, ks) in enumerate(key_tiles):
        nisa.dma_transpose(dst=kt[:, k0:k0 + ks], src=k[h, k0:k0 + ks, :])
        nisa.dma_copy(dst=vt[:ks, j, :], src=v[h, k0:k0 + ks, :])
    for q0, qs in tiles(s, P):
        qt = nl.ndarray((d, P), dtype=q.dtype, buffer=nl.sbuf)
        nisa.dma_transpose(dst=qt[:, :qs], src=q[h, q0:q0 + qs, :])
        m = l = None  # the running max of the raw scores and the running sum, [qs, 1]
        o = nl.ndarray((P, d), dtype=f32, buffer=nl.sbuf)  # the running output
        for j in nl.sequential_range(len(key_tiles)):
            k0, ks = key_tiles[j]
            if causal and k0 > q0 + qs - 1:
                break  # this key tile and the next ones are after every query of the tile
            s_ps = nl.ndarray((P, P), dtype=f32, buffer=nl.psum)
            nisa.nc_matmul(dst=s_ps[:qs, :ks], stationary=qt[:, :qs], moving=kt[:, k0:k0 + ks])
            scores = s_ps
            if causal and k0 + ks - 1 > q0:  # the tile crosses the diagonal: mask key k0 + i > query q0 + p
                scores = nl.ndarray((P, P), dtype=f32, buffer=nl.sbuf)
                nisa.tensor_copy(dst=scores[:qs, :ks], src=s_ps[:qs, :ks])
                nisa.affine_select(dst=scores[:qs, :ks], pattern=[[-1, ks]], offset=q0 - k0, channel_multiplier=1,
                                   on_true_tile=scores[:qs, :ks], on_false_value=MASKED, cmp_op=nl.greater_equal)
            m_new = nl.ndarray((P, 1), dtype=f32, buffer=nl.sbuf)
            nisa.tensor_reduce(dst=m_new[:qs], op=nl.maximum, data=scores[:qs, :ks], axis=1)
            if m is not None:
                nisa.tensor_tensor(dst=m_new[:qs], data1=m_new[:qs], data2=m[:qs], op=nl.maximum)
                corr = nl.ndarray((P, 1), dtype=f32, buffer=nl.sbuf)  # exp((m_old - m_new) * scale)
                nisa.tensor_tensor(dst=corr[:qs], data1=m[:qs], data2=m_new[:qs], op=nl.subtract)
                nisa.activation(dst=corr[:qs], op=nl.exp, data=corr[:qs], scale=scale)
            bias = nl.ndarray((P, 1), dtype=f32, buffer=nl.sbuf)
            nisa.tensor_scalar(dst=bias[:qs], data=m_new[:qs], op0=nl.multiply, operand0=-scale)
            p = nl.ndarray((P, P), dtype=q.dtype, buffer=nl.sbuf)  # the weights, rounded to bfloat16
            rowsum = nl.ndarray((P, 1), dtype=f32, buffer=nl.sbuf)
            nisa.activation_reduce(dst=p[:qs, :ks], op=nl.exp, data=scores[:qs, :ks], reduce_op=nl.add,
                                   reduce_res=rowsum[:qs], bias=bias[:qs], scale=scale)
            pt_ps = nl.ndarray((P, P), dtype=f32, buffer=nl.psum)
            nisa.nc_transpose(dst=pt_ps[:ks, :qs], data=p[:qs, :ks])
            pt = nl.ndarray((P, P), dtype=q.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=pt[:ks, :qs], src=pt_ps[:ks, :qs])
            pv = nl.ndarray((P, d), dtype=f32, buffer=nl.psum)
            nisa.nc_matmul(dst=pv[:qs], stationary=pt[:ks, :qs], moving=vt[:ks, j, :])
            if m is None:
                l = nl.ndarray((P, 1), dtype=f32, buffer=nl.sbuf)
                nisa.tensor_copy(dst=l[:qs], src=rowsum[:qs])
                nisa.tensor_copy(dst=o[:qs], src=pv[:qs])
            else:
                nisa.scalar_tensor_tensor(dst=l[:qs], data=l[:qs], op0=nl.multiply, operand0=corr[:qs], op1=nl.add,
                                          operand1=rowsum[:qs])
                nisa.scalar_tensor_tensor(dst=o[:qs], data=o[:qs], op0=nl.multiply, operand0=corr[:qs], op1=nl.add,
                                          operand1=pv[:qs])
            m = m_new
        inv = nl.ndarray((P, 1), dtype=f32, buffer=nl.sbuf)
        nisa.reciprocal(dst=inv[:qs], data=l[:qs])
        res = nl.ndarray((P, d), dtype=q.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=res[:qs], data=o[:qs], op0=nl.multiply, operand0=inv[:qs])
        nisa.dma_copy(dst=out[h, q0:q0 + qs, :], src=res[:qs])
    return out


def attention(q, k, v, causal=False):
    return attention_kernel[q.shape[0]](q, k, v, causal)


def within_bound(out, q, k, v, causal=False):
    """Whether out is within the documented bound of the float64 attention of q, k, v."""
    q64, k64, v64 = (t.astype(np.float64) for t in (q, k, v))
    z = q64 @ k64.transpose(0, 2, 1) / math.sqrt(q.shape[-1])
    if causal:
        z = np.where(np.tril(np.ones(z.shape[1:], dtype=bool)), z, -np.inf)
    w = np.exp(z - z.max(axis=-1, keepdims=True))
    w /= w.sum(axis=-1, keepdims=True)
    bound = 1.01 * 2.0 ** -7 * (w @ np.abs(v64))
    return bool((np.abs(out.astype(np.float64) - w @ v64) <= bound).all())


def main():
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 300, 64), dtype=np.float32).astype(ml_dtypes.bfloat16) for _ in range(3))
    ok = within_bound(attention(q, k, v), q, k, v)  # 2 heads, 3 key tiles (the last of 44 keys)
    ok &= within_bound(attention(q, k, v, causal=True), q, k, v, causal=True)
    print("nki_attention:", "OK" if ok else "WRONG")


if __name__ == "__main__":
    main()
