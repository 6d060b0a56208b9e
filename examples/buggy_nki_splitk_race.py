"""BUGGY: a split-K NKI matmul whose SPMD programs add their partial products into one HBM output.

Program p of the grid multiplies the p-th block of 128 rows of K and adds its partial [M, N] product
into `out` with an accumulating DMA (nki.isa.dma_copy, dst_rmw_op=nl.add: read out, add, write out).
The bug (line 34, marked `# BUG:`): the programs run concurrently on the NeuronCores and nothing orders
their read-modify-writes of the same bytes, so one program's sum can overwrite another's (a lost
update). Here the programs happen to run one after the other and the sum is right; on the device it
depends on the timing. tilescope's race detector reports the accesses of different programs to the
same HBM bytes. (A fix: each program writes its own slice of a [programs, M, N] output and a second
kernel, or the host, adds the slices.)

Run: tilescope sanitize -- python examples/buggy_nki_splitk_race.py
"""
import ml_dtypes
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def splitk_kernel(a_t, b, out):
    M, N = out.shape
    k0 = nl.program_id(0) * 128
    lhs = nl.ndarray((128, M), dtype=a_t.dtype, buffer=nl.sbuf)
    rhs = nl.ndarray((128, N), dtype=b.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=lhs, src=a_t[k0:k0 + 128, :])
    nisa.dma_copy(dst=rhs, src=b[k0:k0 + 128, :])
    part_ps = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=part_ps, stationary=lhs, moving=rhs)
    part = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=part, src=part_ps)
    nisa.dma_copy(dst=out, src=part, dst_rmw_op=nl.add)  # BUG: unordered across programs  expect: data-race


def main():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 512), dtype=np.float32).astype(ml_dtypes.bfloat16)  # K = 512: 4 programs
    b = rng.standard_normal((512, 256), dtype=np.float32).astype(ml_dtypes.bfloat16)
    out = np.zeros((128, 256), dtype=np.float32)
    splitk_kernel[4](np.ascontiguousarray(a.T), b, out)
    ok = np.allclose(out, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-3)
    print("buggy_nki_splitk_race: ran; outputs", "match" if ok else "DO NOT match", "numpy")


if __name__ == "__main__":
    main()
