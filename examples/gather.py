"""Indirect gather (an embedding lookup): out[i, :] = table[idx[i], :], with the row index loaded
from memory and widened to int64 before it is scaled by the row stride.

Run: python examples/gather.py   (or: tilescope sanitize -- python examples/gather.py)
"""
import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def gather_rows(table_ptr, idx_ptr, out_ptr, n_idx, dim, table_stride, out_stride, BLOCK_I: tl.constexpr,
                BLOCK_D: tl.constexpr):
    pid = tl.program_id(0)
    ri = pid * BLOCK_I + tl.arange(0, BLOCK_I)
    rd = tl.arange(0, BLOCK_D)
    imask = ri < n_idx
    rows = tl.load(idx_ptr + ri, mask=imask, other=0).to(tl.int64)
    mask = imask[:, None] & (rd[None, :] < dim)
    vals = tl.load(table_ptr + rows[:, None] * table_stride + rd[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + ri[:, None] * out_stride + rd[None, :], vals, mask=mask)


def main():
    torch.manual_seed(0)
    vocab, dim, n = 500, 48, 77
    table = torch.randn(vocab, dim, device=DEVICE)
    idx = torch.randint(0, vocab, (n,), device=DEVICE, dtype=torch.int32)
    out = torch.empty(n, dim, device=DEVICE)
    gather_rows[(triton.cdiv(n, 16),)](table, idx, out, n, dim, table.stride(0), out.stride(0), BLOCK_I=16,
                                       BLOCK_D=64)
    torch.testing.assert_close(out, table[idx.long()], rtol=0, atol=0)
    print("gather: OK")


if __name__ == "__main__":
    main()
