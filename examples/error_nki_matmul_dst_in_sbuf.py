"""BUGGY: an NKI matmul whose result tile is in SBUF; NKI's compiler rejects it, and so does tilescope.

The bug (line 30, marked `# BUG:`): the Tensor engine writes its results only to PSUM, so the `dst` of
`nisa.nc_matmul` must be a PSUM tile. tilescope checks every documented constraint when the kernel calls
the op and stops with an error naming the line, the op, the argument and the rule, before anything
runs, as the NKI compiler does.

Expected error:
    nki.isa.nc_matmul: argument 'dst' is in sbuf, but this op takes it only from psum

Run: tilescope sanitize -- python examples/error_nki_matmul_dst_in_sbuf.py
"""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_kernel(a_t, b):
    k, m = a_t.shape
    n = b.shape[1]
    out = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.shared_hbm)
    ta = nl.ndarray((k, m), dtype=a_t.dtype, buffer=nl.sbuf)
    tb = nl.ndarray((k, n), dtype=b.dtype, buffer=nl.sbuf)
    acc = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=ta, src=a_t)
    nisa.dma_copy(dst=tb, src=b)
    nisa.nc_matmul(dst=acc, stationary=ta, moving=tb)  # BUG: dst must be in nl.psum  expect-error
    nisa.dma_copy(dst=out, src=acc)
    return out


if __name__ == "__main__":
    matmul_kernel(np.ones((128, 64), np.float32), np.ones((128, 256), np.float32))
