"""BUGGY: an NKI RMSNorm-style scaling that multiplies a [128, D] tile by a [1, D] weight row.

The bug (line 29, marked `# BUG:`): tensor_tensor does not broadcast; its operands must have the same
partitions and elements per partition (nki.isa.tensor_tensor). The weight row must first be put on
every partition (a DMA per partition, or nl.broadcast_to). tilescope checks the shapes when the kernel
calls the op and stops with an error naming the line, the op and both arguments.

Expected error:
    nki.isa.tensor_tensor: 'dst' (128x256) and 'data2' (1x256) must have the same partitions and elements
    per partition

Run: tilescope sanitize -- python examples/error_nki_shape_mismatch.py
"""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def scale_kernel(x, w):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    wt = nl.ndarray(w.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=wt, src=w)
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=y, data1=t, data2=wt, op=nl.multiply)  # BUG: wt is one row  expect-error
    nisa.dma_copy(dst=out, src=y)
    return out


if __name__ == "__main__":
    scale_kernel(np.ones((128, 256), np.float32), np.ones((1, 256), np.float32))
