"""BUGGY: an NKI kernel that masks with nisa.range_select, built for trn1.

The bug (line 33, marked `# BUG:`): range_select exists only on NeuronCore-v3 and newer (trn2, trn3;
nki.isa.range_select), and the kernel is compiled for trn1 (NeuronCore-v2: `platform_target="trn1"`).
On trn1, mask with nisa.affine_select or nisa.tensor_copy_predicated instead. tilescope checks each op
against the target's NeuronCore version when the kernel calls it and stops with an error naming the
line, the op and the targets that have it.

Expected error:
    nki.isa.range_select: available only on NeuronCore-v3 and newer (trn2, trn3), not trn1 (NeuronCore-v2)

Run: tilescope sanitize -- python examples/error_nki_op_needs_trn2.py
"""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit(platform_target="trn1")
def window_max_kernel(x, lo, hi):
    p, f = x.shape
    out = nl.ndarray((p, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((p, f), dtype=nl.float32, buffer=nl.sbuf)
    b0 = nl.ndarray((p, 1), dtype=nl.float32, buffer=nl.sbuf)
    b1 = nl.ndarray((p, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=b0, src=lo)
    nisa.dma_copy(dst=b1, src=hi)
    sel = nl.ndarray((p, f), dtype=nl.float32, buffer=nl.sbuf)
    m = nl.ndarray((p, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.range_select(dst=sel, on_true_tile=t, comp_op0=nl.greater_equal, comp_op1=nl.less,  # BUG: expect-error
                      bound0=b0, bound1=b1, reduce_res=m)
    nisa.dma_copy(dst=out, src=m)
    return out


if __name__ == "__main__":
    window_max_kernel(np.ones((128, 64), np.float32), np.zeros((128, 1), np.float32), np.full((128, 1), 8, np.float32))
