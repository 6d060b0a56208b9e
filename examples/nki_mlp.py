"""A two-layer MLP, y = silu(x @ W1) @ W2, as an NKI Beta 2 kernel, run on the CPU by tilescope.

x [N, D], W1 [D, F], W2 [F, E], all bfloat16. The rows of x go in tiles of 128. The hidden layer is
computed transposed, h^T [F, rows] = W1^T x^T, so that it is already the stationary operand of the second
matmul and no transpose of h is needed: nc_matmul(stationary = W1 [D tile, F tile], moving = x^T [D tile,
rows]) accumulates over the D tiles in PSUM (nki.isa.nc_matmul); the Scalar engine applies SiLU on the
way out of PSUM and rounds h to bfloat16 (nki.isa.activation, op=nl.silu); then y [rows, E tile] =
h @ W2 = nc_matmul(stationary = h^T [F tile, rows], moving = W2 [F tile, E tile]) accumulated over the F
tiles. x^T comes from x tiles transposed on the Tensor engine (nki.isa.nc_transpose, SBUF -> PSUM).
The weights are loaded once, with their row tile on a free dimension ([128, tiles, cols]). Partial
tiles in every dimension are sliced.

Tolerance (a bound): products of bfloat16 are exact and K of them sum in float32 within K 2^-24 of the
sum of their magnitudes; h and y are rounded to bfloat16 (relative 2^-8 each); SiLU's slope is at most
1.1. With h the exact hidden layer, elementwise:
    |y - exact| <= 2^-8 |exact| + (1.01 * 2^-7 + F 2^-24) (|h| @ |W2|) + 1.12 D 2^-24 (|x| @ |W1|) @ |W2|.

Run: tilescope sanitize -- python examples/nki_mlp.py   (`import nki` is tilescope's NKI there)
"""
import ml_dtypes
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


def tiles(n, size):
    """(start, length) of the tiles of `size` covering 0..n (the last may be partial)."""
    return [(s, min(size, n - s)) for s in range(0, n, size)]


@nki.jit
def mlp_kernel(x, w1, w2):
    n, d = x.shape
    f, e = w2.shape
    P, TE = nl.tile_size.pmax, nl.tile_size.gemm_moving_fmax
    d_tiles, f_tiles, e_tiles = tiles(d, P), tiles(f, P), tiles(e, TE)
    out = nl.ndarray((n, e), dtype=x.dtype, buffer=nl.shared_hbm)
    w1_sb = nl.ndarray((P, len(d_tiles), f), dtype=w1.dtype, buffer=nl.sbuf)
    for i, (d0, ds_) in enumerate(d_tiles):
        nisa.dma_copy(dst=w1_sb[:ds_, i, :], src=w1[d0:d0 + ds_, :])
    w2_sb = nl.ndarray((P, len(f_tiles), e), dtype=w2.dtype, buffer=nl.sbuf)
    for i, (f0, fs) in enumerate(f_tiles):
        nisa.dma_copy(dst=w2_sb[:fs, i, :], src=w2[f0:f0 + fs, :])
    for r0, rows in tiles(n, P):
        xs = nl.ndarray((P, d), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xs[:rows], src=x[r0:r0 + rows])
        xt = nl.ndarray((P, len(d_tiles), P), dtype=x.dtype, buffer=nl.sbuf)  # x^T, D tile on a free dim
        for i, (d0, ds_) in enumerate(d_tiles):
            xt_ps = nl.ndarray((P, P), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_transpose(dst=xt_ps[:ds_, :rows], data=xs[:rows, d0:d0 + ds_])
            nisa.tensor_copy(dst=xt[:ds_, i, :rows], src=xt_ps[:ds_, :rows])
        ht = nl.ndarray((P, len(f_tiles), P), dtype=x.dtype, buffer=nl.sbuf)  # silu(x W1)^T
        for c, (f0, fs) in enumerate(f_tiles):
            h_ps = nl.ndarray((P, P), dtype=nl.float32, buffer=nl.psum)
            for i, (d0, ds_) in enumerate(d_tiles):
                nisa.nc_matmul(dst=h_ps[:fs, :rows], stationary=w1_sb[:ds_, i, f0:f0 + fs], moving=xt[:ds_, i, :rows])
            nisa.activation(dst=ht[:fs, c, :rows], op=nl.silu, data=h_ps[:fs, :rows])
        for e0, es in e_tiles:
            y_ps = nl.ndarray((P, TE), dtype=nl.float32, buffer=nl.psum)
            for c, (f0, fs) in enumerate(f_tiles):
                nisa.nc_matmul(dst=y_ps[:rows, :es], stationary=ht[:fs, c, :rows], moving=w2_sb[:fs, c, e0:e0 + es])
            y = nl.ndarray((P, TE), dtype=x.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=y[:rows, :es], src=y_ps[:rows, :es])
            nisa.dma_copy(dst=out[r0:r0 + rows, e0:e0 + es], src=y[:rows, :es])
    return out


def within_bound(y, x, w1, w2):
    """Whether y is within the documented bound of the float64 MLP of x, w1, w2."""
    x64, w164, w264 = (t.astype(np.float64) for t in (x, w1, w2))
    pre = x64 @ w164
    h = pre / (1 + np.exp(-pre))
    exact = h @ w264
    d, f = w1.shape
    pre_err = d * 2.0 ** -24 * (np.abs(x64) @ np.abs(w164))  # the float32 sums of x @ W1
    bound = (2.0 ** -8 * np.abs(exact) + (1.01 * 2.0 ** -7 + f * 2.0 ** -24) * (np.abs(h) @ np.abs(w264))
             + 1.12 * pre_err @ np.abs(w264))
    return bool((np.abs(y.astype(np.float64) - exact) <= bound).all())


def main():
    rng = np.random.default_rng(0)
    bf16 = ml_dtypes.bfloat16
    x = rng.standard_normal((200, 192), dtype=np.float32).astype(bf16)   # N = 200, D = 192
    w1 = (rng.standard_normal((192, 320), dtype=np.float32) / 14).astype(bf16)  # F = 320
    w2 = (rng.standard_normal((320, 600), dtype=np.float32) / 18).astype(bf16)  # E = 600
    print("nki_mlp:", "OK" if within_bound(mlp_kernel(x, w1, w2), x, w1, w2) else "WRONG")


if __name__ == "__main__":
    main()
