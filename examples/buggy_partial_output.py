"""BUGGY: a two-pass row sum whose first pass leaves the last block of each row unwritten.

Pass 1 writes one partial sum per block of BLOCK columns into `partial` (from `torch.empty`); pass 2
adds the partial sums of each row. The bug (line 43, marked `# BUG:`): the number of blocks per row is
computed with floor division, so when the row length is not a multiple of BLOCK the grid of pass 1 has
one block too few per row and the last partial sum of every row is never written; pass 2 still reads
it (it uses the right count). tilescope reports the load of pass 2 that reads the never-written
elements, names the `torch.empty` line, and gives their offsets (the last column of `partial`).
Fix: `triton.cdiv(cols, BLOCK)` for the grid.

Run: tilescope sanitize -- python examples/buggy_partial_output.py
"""
import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def partial_sum_kernel(x_ptr, partial_ptr, cols, n_blocks, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    blk = tl.program_id(1)
    offs = blk * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * cols + offs, mask=offs < cols, other=0.0)
    tl.store(partial_ptr + row * n_blocks + blk, tl.sum(x, axis=0))


@triton.jit
def row_total_kernel(partial_ptr, out_ptr, n_blocks, NB: tl.constexpr):
    row = tl.program_id(0)
    b = tl.arange(0, NB)
    p = tl.load(partial_ptr + row * n_blocks + b, mask=b < n_blocks, other=0.0)  # expect: uninitialized-read
    tl.store(out_ptr + row, tl.sum(p, axis=0))


def main():
    torch.manual_seed(0)
    rows, cols, block = 8, 1000, 128
    x = torch.randn(rows, cols, device=DEVICE)
    n_blocks = triton.cdiv(cols, block)
    partial = torch.empty(rows, n_blocks, device=DEVICE)
    partial_sum_kernel[(rows, cols // block)](x, partial, cols, n_blocks, BLOCK=block)  # BUG: cdiv
    out = torch.empty(rows, device=DEVICE)
    row_total_kernel[(rows,)](partial, out, n_blocks, NB=triton.next_power_of_2(n_blocks))
    ok = torch.allclose(out, x.sum(dim=1), atol=1e-3)
    print("buggy_partial_output: ran; row sums", "match" if ok else "DO NOT match", "torch")


if __name__ == "__main__":
    main()
