"""NKI programs shared by the tests (each run as a whole program under tilescope)."""

# An SPMD kernel of 3 programs over a 300 x 64 float32 array: program p copies rows 128p.. (the last 44
# rows) into SBUF, scales them by 3 on the Vector engine, and copies them to the HBM output; checked
# against numpy.
SCALE_ROWS = """
import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def scale_rows(x):
    n, d = x.shape
    out = nl.ndarray((n, d), dtype=x.dtype, buffer=nl.shared_hbm)
    p = nl.program_id(0)
    rows = min(128, n - p * 128)
    t = nl.ndarray((128, d), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t[:rows], src=x[p * 128:p * 128 + rows])
    y = nl.ndarray((128, d), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=y[:rows], data=t[:rows], op0=nl.multiply, operand0=3.0)
    nisa.dma_copy(dst=out[p * 128:p * 128 + rows], src=y[:rows])
    return out


x = np.arange(300 * 64, dtype=np.float32).reshape(300, 64)
y = scale_rows[3](x)
assert np.array_equal(y, x * 3), "wrong values"
print("ok")
"""
