"""BUGGY: an NKI matmul that keeps one PSUM accumulator per output column tile, all live at once.

The bug (line 35, marked `# BUG:`): PSUM holds 16 KiB per partition (8 banks of 2 KiB; NKI
architecture guide, "PSUM"), and each [128, 512] float32 accumulator takes a whole bank. The kernel
fills nine accumulators before it copies any out, so at the ninth matmul nine banks would be needed.
Copy each accumulator out as soon as its matmuls are done (then it dies and its bank is free), or
accumulate fewer column tiles at a time. tilescope counts the bytes of the tiles live at each
instruction and stops at the first one that does not fit, listing the tiles and their allocations.

Expected error:
    nki.isa.nc_matmul: program 0: 9 tensors live here need 18432 bytes per partition of psum, which holds
    16384 on trn2: 9 x acc (2048 bytes each, examples/error_nki_psum_overflow.py:34:14)

Run: tilescope sanitize -- python examples/error_nki_psum_overflow.py
"""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def wide_matmul_kernel(a_t, b):
    K, M = a_t.shape
    N = b.shape[1]
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    lhs = nl.ndarray((K, M), dtype=a_t.dtype, buffer=nl.sbuf)
    rhs = nl.ndarray((K, N), dtype=b.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=lhs, src=a_t)
    nisa.dma_copy(dst=rhs, src=b)
    accs = []
    for n in nl.affine_range(N // 512):
        acc = nl.ndarray((M, 512), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=acc, stationary=lhs, moving=rhs[:, n * 512:(n + 1) * 512])  # BUG: all live  expect-error
        accs.append(acc)
    for n, acc in enumerate(accs):
        res = nl.ndarray((M, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        nisa.dma_copy(dst=out[:, n * 512:(n + 1) * 512], src=res)
    return out


if __name__ == "__main__":
    wide_matmul_kernel(np.ones((128, 128), np.float32), np.ones((128, 9 * 512), np.float32))
