"""Rotary position embedding (RoPE) as an NKI Beta 2 kernel, run on the CPU by tilescope.

x [S, H, D] (sequence, heads, head dim) is rotated by position: with x1 = x[..., :D/2], x2 = x[..., D/2:]
(the "rotate half" pairing of GPT-NeoX and Llama) and the tables cos, sin [S, D/2] of each position,
    y[..., :D/2] = x1 cos - x2 sin,    y[..., D/2:] = x2 cos + x1 sin.
Positions go to the partitions, 128 per tile (the last tile partial); a tile holds all heads of its
positions ([P, H, D] in SBUF). The tables are shared by the heads: a broadcast view repeats them over
the head dim without a copy (`cos_t.expand_dim(1).broadcast(1, H)`: NkiTensor.expand_dim / broadcast,
stride 0; NKI API reference, nki.language.NkiTensor). The six products and sums are Vector engine
tensor_tensor instructions on [P, H, D/2] views, in float32, rounded to x's dtype on the write.

Tolerance: each output is x1 c - x2 s (or x2 c + x1 s) computed in float32, two products and a sum each
rounded once: |y - exact| <= 3 2^-24 (|x1 c| + |x2 s|) (or (|x2 c| + |x1 s|)) for float32 inputs.

Run: tilescope sanitize -- python examples/nki_rope.py   (`import nki` is tilescope's NKI there)
"""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rope_kernel(x, cos, sin):
    s, heads, dim = x.shape
    half = dim // 2
    P = nl.tile_size.pmax
    out = nl.ndarray((s, heads, dim), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range((s + P - 1) // P):
        r0 = i * P
        rows = min(P, s - r0)
        t = nl.ndarray((P, heads, dim), dtype=x.dtype, buffer=nl.sbuf)
        c = nl.ndarray((P, half), dtype=nl.float32, buffer=nl.sbuf)
        sn = nl.ndarray((P, half), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t[:rows], src=x[r0:r0 + rows])
        nisa.dma_copy(dst=c[:rows], src=cos[r0:r0 + rows])
        nisa.dma_copy(dst=sn[:rows], src=sin[r0:r0 + rows])
        cb = c[:rows].expand_dim(1).broadcast(1, heads)  # [rows, H, D/2], the same table for every head
        sb = sn[:rows].expand_dim(1).broadcast(1, heads)
        x1, x2 = t[:rows, :, :half], t[:rows, :, half:]
        a = nl.ndarray((P, heads, half), dtype=nl.float32, buffer=nl.sbuf)
        b = nl.ndarray((P, heads, half), dtype=nl.float32, buffer=nl.sbuf)
        y = nl.ndarray((P, heads, dim), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=a[:rows], data1=x1, data2=cb, op=nl.multiply)
        nisa.tensor_tensor(dst=b[:rows], data1=x2, data2=sb, op=nl.multiply)
        nisa.tensor_tensor(dst=y[:rows, :, :half], data1=a[:rows], data2=b[:rows], op=nl.subtract)
        nisa.tensor_tensor(dst=a[:rows], data1=x2, data2=cb, op=nl.multiply)
        nisa.tensor_tensor(dst=b[:rows], data1=x1, data2=sb, op=nl.multiply)
        nisa.tensor_tensor(dst=y[:rows, :, half:], data1=a[:rows], data2=b[:rows], op=nl.add)
        nisa.dma_copy(dst=out[r0:r0 + rows], src=y[:rows])
    return out


def tables(s, dim, base=10000.0):
    """cos and sin [s, dim / 2] of the angles position * base^(-2i / dim), in float32."""
    ang = np.outer(np.arange(s), base ** (-np.arange(0, dim, 2) / dim))
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)


def close_to_rope(y, x, cos, sin):
    """Whether y is within the documented bound of the float64 rotation of float32 x."""
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h].astype(np.float64), x[..., h:].astype(np.float64)
    c, s = cos[:, None, :].astype(np.float64), sin[:, None, :].astype(np.float64)
    ref = np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)
    terms = np.concatenate([np.abs(x1 * c) + np.abs(x2 * s), np.abs(x2 * c) + np.abs(x1 * s)], axis=-1)
    bound = 3 * 2.0 ** -24 * terms
    return bool((np.abs(y - ref) <= bound).all())


def main():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((200, 4, 64), dtype=np.float32)  # 200 positions (2 tiles, the last of 72), 4 heads
    cos, sin = tables(200, 64)
    y = rope_kernel(x, cos, sin)
    print("nki_rope:", "OK" if close_to_rope(y, x, cos, sin) else "WRONG")


if __name__ == "__main__":
    main()
