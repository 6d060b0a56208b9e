"""Element-wise addition as an NKI Beta 2 kernel on an SPMD grid, run on the CPU by tilescope.

Each program of the one-dimensional grid (`add_kernel[n](a, b)`, `nl.program_id(0)`) adds one block of
128 rows: the rows go to the 128 partitions of SBUF. Inside the block the columns go in tiles of 512
(`nl.affine_range`: the iterations are independent). The last row block and the last column tile may
be partial: NKI Beta 2 has no masks, so the tiles are allocated full size and sliced to the valid part.
The Vector engine adds in float32 and rounds to the destination's dtype (nki.isa.tensor_tensor,
"Arithmetic operations"), so the result equals numpy's float32 sum, rounded once for bfloat16.

Run: tilescope sanitize -- python examples/nki_tensor_add.py   (`import nki` is tilescope's NKI there)
"""
import ml_dtypes
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

COLS = 512  # free elements per tile


@nki.jit
def add_kernel(a, b):
    n, m = a.shape
    out = nl.ndarray((n, m), dtype=a.dtype, buffer=nl.shared_hbm)
    r0 = nl.program_id(0) * nl.tile_size.pmax  # this program's block of rows
    rows = min(nl.tile_size.pmax, n - r0)
    for j in nl.affine_range((m + COLS - 1) // COLS):
        c0 = j * COLS
        cols = min(COLS, m - c0)
        ta = nl.ndarray((nl.tile_size.pmax, COLS), dtype=a.dtype, buffer=nl.sbuf)
        tb = nl.ndarray((nl.tile_size.pmax, COLS), dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=ta[:rows, :cols], src=a[r0:r0 + rows, c0:c0 + cols])
        nisa.dma_copy(dst=tb[:rows, :cols], src=b[r0:r0 + rows, c0:c0 + cols])
        tc = nl.ndarray((nl.tile_size.pmax, COLS), dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=tc[:rows, :cols], data1=ta[:rows, :cols], data2=tb[:rows, :cols], op=nl.add)
        nisa.dma_copy(dst=out[r0:r0 + rows, c0:c0 + cols], src=tc[:rows, :cols])
    return out


def add(a, b):
    """a + b with one program per block of 128 rows."""
    return add_kernel[(a.shape[0] + 127) // 128](a, b)


def main():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((300, 1100), dtype=np.float32)  # 3 row blocks (the last of 44 rows), 3 column tiles
    b = rng.standard_normal((300, 1100), dtype=np.float32)
    ok = np.array_equal(add(a, b), a + b)  # float32: exact
    ab, bb = a.astype(ml_dtypes.bfloat16), b.astype(ml_dtypes.bfloat16)
    ref = (ab.astype(np.float32) + bb.astype(np.float32)).astype(ml_dtypes.bfloat16)  # one rounding to bf16
    ok &= np.array_equal(add(ab, bb).view(np.uint16), ref.view(np.uint16))
    print("nki_tensor_add:", "OK" if ok else "WRONG")


if __name__ == "__main__":
    main()
