"""BUGGY: an NKI kernel launched on a two-dimensional grid; Beta 2 grids are one-dimensional.

The bug (line 31, marked `# BUG:`): NKI Beta 2 launches a kernel on a 1-D SPMD grid (`kernel[n]`;
nl.program_id(axis=0) only; NKI language guide, "SPMD"): Beta 1's `kernel[gx, gy]` is gone. Launch
kernel[gx * gy] and compute the two indexes from nl.program_id(0). tilescope stops at the launch with
an error naming the line.

Expected error:
    kernel 'tile_kernel': NKI Beta 2 grids are one-dimensional, not (2, 2): launch kernel[n] with n the
    number of programs and derive the indexes from nl.program_id(0)

Run: tilescope sanitize -- python examples/error_nki_grid_2d.py
"""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def tile_kernel(x, out):
    i = nl.program_id(0)
    t = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[i * 128:(i + 1) * 128])
    nisa.dma_copy(dst=out[i * 128:(i + 1) * 128], src=t)


def main():
    x = np.ones((256, 64), np.float32)
    tile_kernel[2, 2](x, np.zeros_like(x))  # BUG: a 2-D grid  expect-error


if __name__ == "__main__":
    main()
