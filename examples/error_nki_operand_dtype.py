"""BUGGY: an NKI kernel that keeps a row maximum in bfloat16 and uses it as tensor_scalar's operand.

The bug (line 28, marked `# BUG:`): the Vector engine computes in float32, and a per-partition operand
tile of an arithmetic tensor_scalar must be float32 (nki.isa.tensor_scalar, "operand0"). Keep the
[P, 1] statistics in float32 tiles. tilescope checks dtypes when the kernel calls the op and stops with
an error naming the line, the op, the argument and the rule.

Expected error:
    nki.isa.tensor_scalar: 'operand0' is bfloat16; a tile operand of an arithmetic operator must be float32

Run: tilescope sanitize -- python examples/error_nki_operand_dtype.py
"""
import ml_dtypes
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def center_kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    m = nl.ndarray((x.shape[0], 1), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=m, op=nl.maximum, data=t, axis=1)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.subtract, operand0=m)  # BUG: m is bfloat16  expect-error
    nisa.dma_copy(dst=out, src=t)
    return out


if __name__ == "__main__":
    center_kernel(np.ones((128, 64), np.float32).astype(ml_dtypes.bfloat16))
