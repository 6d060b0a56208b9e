"""BUGGY: an NKI row softmax that loads only part of each tile.

The bug (line 25, marked `# BUG:`): the DMA copies the first `f - 1` columns of x into the SBUF tile, so
the tile's last column is never written. The max and the exponentials then read never-written SBUF
(on a Trainium that is whatever the previous kernel left there). tilescope reports the reads of
never-written memory at the instructions that make them, naming the tile's allocation line.

Run: tilescope sanitize -- python examples/buggy_nki_softmax_partial_load.py
"""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def softmax_kernel(x):
    p, f = x.shape
    out = nl.ndarray((p, f), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((p, f), dtype=nl.float32, buffer=nl.sbuf)
    m = nl.ndarray((p, 1), dtype=nl.float32, buffer=nl.sbuf)
    e = nl.ndarray((p, f), dtype=nl.float32, buffer=nl.sbuf)
    s = nl.ndarray((p, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t[:, :f - 1], src=x[:, :f - 1])  # BUG: should copy all f columns
    nisa.tensor_reduce(dst=m, op=nl.maximum, data=t, axis=1)  # expect: uninitialized-read
    nisa.tensor_scalar(dst=m, data=m, op0=nl.multiply, operand0=-1.0)
    nisa.activation(dst=e, op=nl.exp, data=t, bias=m, reduce_op=nl.add, reduce_res=s,  # expect: uninitialized-read
                    reduce_cmd=nisa.reduce_cmd.reset_reduce)
    nisa.reciprocal(dst=s, data=s)
    nisa.tensor_scalar(dst=e, data=e, op0=nl.multiply, operand0=s)
    nisa.dma_copy(dst=out, src=e)
    return out


def main():
    x = np.random.default_rng(0).standard_normal((64, 100), dtype=np.float32)
    y = softmax_kernel(x)
    z = np.exp(x - x.max(axis=1, keepdims=True))
    ok = np.allclose(y, z / z.sum(axis=1, keepdims=True), atol=1e-5)
    print("buggy_nki_softmax_partial_load: ran; outputs", "match" if ok else "DO NOT match", "numpy")


if __name__ == "__main__":
    main()
