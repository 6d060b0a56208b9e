"""BUGGY: an NKI matmul whose moving tile is 1024 columns wide; the Tensor engine takes at most 512.

The bug (line 31, marked `# BUG:`): nc_matmul's moving operand has at most 512 elements per partition
(nl.tile_size.gemm_moving_fmax: one PSUM bank of float32 results per partition; nki.isa.nc_matmul) on
trn1 and trn2. Split N into tiles of 512, each with its own PSUM tile. tilescope checks the matmul's
limits when the kernel calls it and stops with an error naming the line, the op, the argument and the
limit.

Expected error:
    nki.isa.nc_matmul: 'moving' has 1024 elements per partition; at most 512 (one PSUM bank)

Run: tilescope sanitize -- python examples/error_nki_matmul_moving_too_wide.py
"""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_kernel(a_t, b):
    K, M = a_t.shape
    N = b.shape[1]
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    lhs = nl.ndarray((K, M), dtype=a_t.dtype, buffer=nl.sbuf)
    rhs = nl.ndarray((K, N), dtype=b.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=lhs, src=a_t)
    nisa.dma_copy(dst=rhs, src=b)
    acc = nl.ndarray((M, 1024), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=lhs, moving=rhs)  # BUG: N = 1024 > 512  expect-error
    res = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    nisa.dma_copy(dst=out, src=res)
    return out


if __name__ == "__main__":
    matmul_kernel(np.ones((128, 128), np.float32), np.ones((128, 1024), np.float32))
