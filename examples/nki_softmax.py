"""A numerically stable row softmax as an NKI Beta 2 kernel, run on the CPU by tilescope.

softmax(x)[i, j] = exp(x[i, j] - max_j x[i, :]) / sum_j exp(x[i, j] - max_j x[i, :]) for x [N, F]: rows
on the 128 partitions (128 rows per tile, the last tile partial), a whole row in one SBUF tile. Per tile:
the Vector engine takes the row maximum (nki.isa.tensor_reduce) and negates it (tensor_scalar); the
Scalar engine computes exp(x - max) and, in the same instruction, the row sum into its accumulator and
`reduce_res` (nki.isa.activation with reduce_op=nl.add, reduce_cmd=reset_reduce); the Vector engine
takes 1 / sum (nki.isa.reciprocal) and scales the row (tensor_scalar with a [P, 1] operand). Inputs of
any float dtype are converted to float32 by the DMA (nki.isa.dma_copy); the result is rounded to x's
dtype on the last write.

Tolerance: float32 arithmetic throughout, so relative to the float64 softmax each element is off by
at most a few float32 roundings per step: the subtraction (|x - max| 2^-24), exp, a sum of F terms
(F 2^-24), the reciprocal and the product; checked as rtol = (F + |x - max| + 8) 2^-24 elementwise,
plus 2^-140 absolute for results in float32's subnormal range (exp below 2^-126 keeps fewer bits).

Run: tilescope sanitize -- python examples/nki_softmax.py   (`import nki` is tilescope's NKI there)
"""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def softmax_kernel(x):
    n, f = x.shape
    P = nl.tile_size.pmax
    out = nl.ndarray((n, f), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range((n + P - 1) // P):
        r0 = i * P
        rows = min(P, n - r0)
        t = nl.ndarray((P, f), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t[:rows], src=x[r0:r0 + rows])
        neg_max = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=neg_max[:rows], op=nl.maximum, data=t[:rows], axis=1)
        nisa.tensor_scalar(dst=neg_max[:rows], data=neg_max[:rows], op0=nl.multiply, operand0=-1.0)
        e = nl.ndarray((P, f), dtype=nl.float32, buffer=nl.sbuf)
        total = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=e[:rows], op=nl.exp, data=t[:rows], bias=neg_max[:rows], reduce_op=nl.add,
                        reduce_res=total[:rows], reduce_cmd=nisa.reduce_cmd.reset_reduce)
        inv = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(dst=inv[:rows], data=total[:rows])
        y = nl.ndarray((P, f), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y[:rows], data=e[:rows], op0=nl.multiply, operand0=inv[:rows])
        nisa.dma_copy(dst=out[r0:r0 + rows], src=y[:rows])
    return out


def close_to_softmax(y, x):
    """Whether y is within the documented tolerance of the float64 softmax of the float32 x."""
    x64 = x.astype(np.float64)
    d = x64 - x64.max(axis=1, keepdims=True)
    e = np.exp(d)
    ref = e / e.sum(axis=1, keepdims=True)
    rtol = (x.shape[1] + np.abs(d) + 8) * 2.0 ** -24
    return bool((np.abs(y.astype(np.float64) - ref) <= rtol * ref + 2.0 ** -140).all())


def main():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((300, 1000), dtype=np.float32) * 10 + 50  # large values: exp(x) alone overflows
    y = softmax_kernel(x)
    print("nki_softmax:", "OK" if close_to_softmax(y, x) else "WRONG")


if __name__ == "__main__":
    main()
