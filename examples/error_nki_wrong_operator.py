"""BUGGY: an NKI kernel that asks the Vector engine's tensor_scalar for an exponential.

The bug (line 27, marked `# BUG:`): tensor_scalar's two operators (op0, then op1) are ALU operators (nl.add,
nl.multiply, nl.maximum, ...; nki.isa.tensor_scalar); nl.exp is an activation function, which the
Scalar engine computes (nisa.activation(op=nl.exp, data=t, bias=...)). tilescope checks every
operator against the op's table when the kernel calls it and stops with an error saying which op
takes it.

Expected error:
    nki.isa.tensor_scalar: 'op1' nl.exp is not an ALU operator (nl.exp is an activation function:
    nisa.activation computes it on the Scalar engine)

Run: tilescope sanitize -- python examples/error_nki_wrong_operator.py
"""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def exp_minus_kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.subtract, operand0=1.0, op1=nl.exp)  # BUG: expect-error
    nisa.dma_copy(dst=out, src=t)
    return out


if __name__ == "__main__":
    exp_minus_kernel(np.ones((128, 64), np.float32))
