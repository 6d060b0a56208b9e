"""A tiled bfloat16 matrix multiplication as an NKI Beta 2 kernel, run on the CPU by tilescope.

out[M, N] = A @ B with the kernel given A transposed, `a_t` [K, M], and B [K, N]: nki.isa.nc_matmul
contracts over the partition dimension, computing dst[M, N] = stationary[K, M].T @ moving[K, N], so the
stationary operand is the left matrix transposed (nki.isa.nc_matmul; NKI tutorial "Matrix
multiplication"). The tiles are the Tensor engine's limits (nl.tile_size): K in tiles of 128 (the
partitions), M in tiles of 128 (gemm_stationary_fmax), N in tiles of 512 (gemm_moving_fmax: one PSUM bank
of float32). For each [128, 512] output tile the K tiles accumulate in one PSUM tile: without
`accumulate=`, the first matmul into a PSUM element overwrites it and the later ones add (nc_matmul,
"accumulate"). The stationary tiles of a row block are loaded once, into one SBUF tile with the K tile
on a free dimension (`lhs[:, k, :]` keeps the partition and the last dim, as the NKI language guide's
indexing rules say). The Tensor engine multiplies bfloat16 exactly and accumulates in float32; the
PSUM -> SBUF copy rounds the result to bfloat16. Partial tiles in M, N and K are sliced.

Tolerance (a bound, not a guess): each output is the float32 sum of K exact products, rounded to
bfloat16: |out - exact| <= 2^-8 |exact| + (1 + 2^-8) K 2^-24 (|A| @ |B|).

Run: tilescope sanitize -- python examples/nki_matmul.py   (`import nki` is tilescope's NKI there)
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
def matmul_kernel(a_t, b):
    K, M = a_t.shape
    _, N = b.shape
    TK, TM, TN = nl.tile_size.pmax, nl.tile_size.gemm_stationary_fmax, nl.tile_size.gemm_moving_fmax
    k_tiles = tiles(K, TK)
    out = nl.ndarray((M, N), dtype=a_t.dtype, buffer=nl.shared_hbm)
    for m0, ms in tiles(M, TM):
        lhs = nl.ndarray((TK, len(k_tiles), TM), dtype=a_t.dtype, buffer=nl.sbuf)
        for k, (k0, ks) in enumerate(k_tiles):
            nisa.dma_copy(dst=lhs[:ks, k, :ms], src=a_t[k0:k0 + ks, m0:m0 + ms])
        for n0, ns in tiles(N, TN):
            acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
            for k, (k0, ks) in enumerate(k_tiles):
                rhs = nl.ndarray((TK, TN), dtype=b.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=rhs[:ks, :ns], src=b[k0:k0 + ks, n0:n0 + ns])
                nisa.nc_matmul(dst=acc[:ms, :ns], stationary=lhs[:ks, k, :ms], moving=rhs[:ks, :ns])
            res = nl.ndarray((TM, TN), dtype=a_t.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res[:ms, :ns], src=acc[:ms, :ns])  # PSUM -> SBUF, rounded to bfloat16
            nisa.dma_copy(dst=out[m0:m0 + ms, n0:n0 + ns], src=res[:ms, :ns])
    return out


def matmul(a, b):
    """a @ b for bfloat16 a [M, K] and b [K, N] (A is handed over transposed)."""
    return matmul_kernel(np.ascontiguousarray(a.T), b)


def within_bound(c, a, b):
    """Whether c is within the documented bound of the exact product of a and b."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    exact = a64 @ b64
    bound = 2.0 ** -8 * np.abs(exact) + (1 + 2.0 ** -8) * a.shape[1] * 2.0 ** -24 * (np.abs(a64) @ np.abs(b64))
    return bool((np.abs(c.astype(np.float64) - exact) <= bound).all())


def main():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((200, 300), dtype=np.float32).astype(ml_dtypes.bfloat16)  # M = 200, K = 300
    b = rng.standard_normal((300, 700), dtype=np.float32).astype(ml_dtypes.bfloat16)  # N = 700
    c = matmul(a, b)
    print("nki_matmul:", "OK" if c.dtype == ml_dtypes.bfloat16 and within_bound(c, a, b) else "WRONG")


if __name__ == "__main__":
    main()
