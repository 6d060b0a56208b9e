"""BUGGY: an NKI tiled matmul that accumulates into its PSUM tile from the very first K tile.

The bug (line 32, marked `# BUG:`): `accumulate=True` makes every nc_matmul add its product to what the
PSUM tile holds, the first one too; but the tile is fresh (nl.ndarray does not clear it), so the first
K tile is added to whatever the previous kernel left in PSUM. nc_matmul's default (`accumulate=None`)
would overwrite on the first matmul into each element and add on the later ones (nki.isa.nc_matmul,
"accumulate"); so would `accumulate=k > 0`. tilescope reports the read of never-written PSUM at the
matmul, naming the tile's allocation line.

Run: tilescope sanitize -- python examples/buggy_nki_matmul_accumulate_first.py
"""
import ml_dtypes
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_kernel(a_t, b):
    K, M = a_t.shape
    N = b.shape[1]
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for n in nl.affine_range(N // 512):
        acc = nl.ndarray((M, 512), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(K // 128):
            lhs = nl.ndarray((128, M), dtype=a_t.dtype, buffer=nl.sbuf)
            rhs = nl.ndarray((128, 512), dtype=b.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=lhs, src=a_t[k * 128:(k + 1) * 128, :])
            nisa.dma_copy(dst=rhs, src=b[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
            nisa.nc_matmul(dst=acc, stationary=lhs, moving=rhs, accumulate=True)  # BUG: expect: uninitialized-read
        res = nl.ndarray((M, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        nisa.dma_copy(dst=out[:, n * 512:(n + 1) * 512], src=res)
    return out


def main():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 256), dtype=np.float32).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((256, 1024), dtype=np.float32).astype(ml_dtypes.bfloat16)
    c = matmul_kernel(np.ascontiguousarray(a.T), b)
    ok = np.allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-4, atol=1e-3)
    print("buggy_nki_matmul_accumulate_first: ran; outputs", "match" if ok else "DO NOT match", "numpy")


if __name__ == "__main__":
    main()
