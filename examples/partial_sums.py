"""A two-pass row sum through a scratch buffer from `torch.empty`: pass 1 writes every partial sum,
pass 2 reads them. Memory from torch.empty is undefined until written; here every element pass 2
reads was written by pass 1 (grid from triton.cdiv), so there is nothing to report (compare
examples/buggy_partial_output.py).

Run: python examples/partial_sums.py   (or: tilescope sanitize -- python examples/partial_sums.py)
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
    p = tl.load(partial_ptr + row * n_blocks + b, mask=b < n_blocks, other=0.0)
    tl.store(out_ptr + row, tl.sum(p, axis=0))


def main():
    torch.manual_seed(0)
    rows, cols, block = 8, 1000, 128
    x = torch.randn(rows, cols, device=DEVICE)
    n_blocks = triton.cdiv(cols, block)
    partial = torch.empty(rows, n_blocks, device=DEVICE)
    partial_sum_kernel[(rows, n_blocks)](x, partial, cols, n_blocks, BLOCK=block)
    out = torch.empty(rows, device=DEVICE)
    row_total_kernel[(rows,)](partial, out, n_blocks, NB=triton.next_power_of_2(n_blocks))
    torch.testing.assert_close(out, x.sum(dim=1), atol=1e-3, rtol=1e-4)
    print("partial_sums: OK")


if __name__ == "__main__":
    main()
