"""Row-wise inclusive prefix sum with tl.cumsum, carrying the running total across column blocks.

Run: python examples/cumsum.py   (or: tilescope sanitize -- python examples/cumsum.py)
"""
import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def cumsum_kernel(x_ptr, y_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    carry = tl.zeros([1], dtype=tl.int64)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0).to(tl.int64)
        y = tl.cumsum(x, axis=0) + carry
        tl.store(y_ptr + row * stride + cols, y, mask=mask)
        carry += tl.sum(x, axis=0)


def main():
    torch.manual_seed(0)
    x = torch.randint(-100, 100, (10, 300), device=DEVICE, dtype=torch.int32)
    y = torch.empty(10, 300, device=DEVICE, dtype=torch.int64)
    cumsum_kernel[(10,)](x, y, x.stride(0), 300, BLOCK=64)
    torch.testing.assert_close(y, torch.cumsum(x.long(), dim=1))
    print("cumsum: OK")


if __name__ == "__main__":
    main()
