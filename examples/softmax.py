"""Fused row softmax: one program per row, the row held in one block (masked past n_cols).

Run: python examples/softmax.py   (or: tilescope sanitize -- python examples/softmax.py)
"""
import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def softmax_kernel(x_ptr, y_ptr, x_row_stride, y_row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    # Masked-off lanes read -inf so that they neither win the max nor add to the sum.
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(y_ptr + row * y_row_stride + cols, y, mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(n_rows,)](x, y, x.stride(0), y.stride(0), n_cols, BLOCK=triton.next_power_of_2(n_cols))
    return y


def main():
    torch.manual_seed(0)
    x = torch.randn(37, 100, device=DEVICE) * 3
    torch.testing.assert_close(softmax(x), torch.softmax(x, dim=1))
    # A non-contiguous input: every other column of a wider tensor is NOT supported by this kernel
    # (it assumes unit column stride), but a row slice of a wider tensor is.
    wide = torch.randn(37, 160, device=DEVICE)
    torch.testing.assert_close(softmax(wide[:, :100]), torch.softmax(wide[:, :100], dim=1))
    print("softmax: OK")


if __name__ == "__main__":
    main()
