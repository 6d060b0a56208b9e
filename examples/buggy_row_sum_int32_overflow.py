"""BUGGY: row sum whose row offset `row * stride` is computed in int32 and overflows.

x is a 3-row view with a row stride of 2**30 elements (a large stride: think of rows taken from a
huge tensor). Triton passes a stride below 2**31 as an int32, and program_id is an int32, so for
row 2 the product 2 * 2**30 = 2**31 wraps to -2**31 and the load goes 2 GiB before x.
The bug (line 27, marked `# BUG:`): the fix is `row.to(tl.int64) * stride`. tilescope reports the
overflow at the multiplication, and the load it feeds, which lands 2**31 elements before x.

Only the three rows' 256-byte windows are ever touched: the 2 GiB storage is allocated with
torch.empty and never written elsewhere, so it costs (almost) no real memory.

Run: tilescope sanitize -- python examples/buggy_row_sum_int32_overflow.py
"""
import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
ROW_STRIDE = 2**30
N_COLS = 256


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    start = row * stride  # BUG: int32 product overflows for row 2  expect: int32-overflow
    x = tl.load(x_ptr + start + cols, mask=cols < n_cols, other=0)  # expect: out-of-bounds-load
    tl.store(out_ptr + row, tl.sum(x.to(tl.int32), axis=0))


def main():
    storage = torch.empty(2 * ROW_STRIDE + N_COLS, dtype=torch.uint8, device=DEVICE)
    x = storage.as_strided((3, N_COLS), (ROW_STRIDE, 1))
    for r in range(3):
        x[r] = torch.arange(N_COLS, dtype=torch.uint8, device=DEVICE) % (r + 2)
    out = torch.zeros(3, dtype=torch.int32, device=DEVICE)
    row_sum_kernel[(3,)](x, out, x.stride(0), N_COLS, BLOCK=N_COLS)
    ref = x.to(torch.int32).sum(dim=1)
    print("buggy_row_sum_int32_overflow: ran; outputs", "match" if torch.equal(out, ref) else "DO NOT match",
          f"torch ({out.tolist()} vs {ref.tolist()})")


if __name__ == "__main__":
    main()
