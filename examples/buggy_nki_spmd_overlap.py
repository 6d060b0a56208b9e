"""BUGGY: an NKI kernel on an SPMD grid whose programs overlap in the output.

The bug (line 24, marked `# BUG:`): each of the 4 programs copies `rows + 1` rows instead of `rows`, so
program p also writes the first row of program p + 1's block, in the same HBM tensor, with nothing
ordering the two writes (on a Trainium, the NeuronCores run the programs concurrently). Here both write
the same values, so the output happens to be right; with any program-dependent value it would depend on
the timing. tilescope's race detector reports the writes of different programs to the same bytes.

Run: tilescope sanitize -- python examples/buggy_nki_spmd_overlap.py
"""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def scale_rows_kernel(x, out):
    rows = x.shape[0] // nl.num_programs()
    p = nl.program_id(0)
    n = rows + 1 if p + 1 < nl.num_programs() else rows
    t = nl.ndarray((n, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[p * rows:p * rows + n])  # BUG: n = rows + 1 reaches the next program's rows
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
    nisa.dma_copy(dst=out[p * rows:p * rows + n], src=t)  # expect: data-race


def main():
    x = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)
    out = np.zeros_like(x)
    scale_rows_kernel[4](x, out)
    print("buggy_nki_spmd_overlap: ran; outputs", "match" if np.array_equal(out, 2 * x) else "DO NOT match", "numpy")


if __name__ == "__main__":
    main()
