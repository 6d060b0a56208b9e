"""BUGGY: an NKI kernel that loads a 256-row tile; a tile has at most 128 partitions.

The bug (line 24, marked `# BUG:`): `nl.load` makes an SBUF tile of the HBM tile's shape, and the first
dimension of an on-chip tile is its partition dimension: at most 128 (nl.tile_size.pmax; NKI
architecture guide, "SBUF"). AWS's own layout-violation example makes the same mistake. tilescope
checks it when the kernel calls nl.load and stops with an error naming the line, before anything runs.

Expected error:
    nki.language.load: 'src' (256x512) has 256 rows, but the new SBUF tile puts dim 0 on the partitions:
    at most 128 (nl.tile_size.pmax); load it in tiles of at most 128 rows

Run: tilescope sanitize -- python examples/error_nki_partition_dim.py
"""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def exp_kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x[0:256, 0:512])  # BUG: 256 rows on 128 partitions  expect-error
    nl.store(out, value=nl.exp(t))
    return out


if __name__ == "__main__":
    exp_kernel(np.ones((256, 512), np.float32))
