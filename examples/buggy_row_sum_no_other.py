"""BUGGY: row sum whose masked load has no `other`, so the reduction adds undefined values.

The bug (line 21, marked `# BUG:`): a masked load without `other` leaves the masked-off lanes
(cols >= n_cols) undefined; on a GPU they hold whatever the registers held. tl.sum then adds them
into the result. The fix is `other=0.0`. The sanitizer reports the use (the tl.sum) and names the load.

Run: tilescope sanitize -- python examples/buggy_row_sum_no_other.py
"""
import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask)  # BUG: no other= for the masked-off lanes
    total = tl.sum(x, axis=0)  # expect: undefined-value
    tl.store(out_ptr + row, total)


def main():
    torch.manual_seed(0)
    x = torch.randn(8, 100, device=DEVICE)
    out = torch.empty(8, device=DEVICE)
    row_sum_kernel[(8,)](x, out, x.stride(0), 100, BLOCK=128)
    ok = torch.allclose(out, x.sum(dim=1), atol=1e-4)
    print("buggy_row_sum_no_other: ran; outputs", "match" if ok else "DO NOT match", "torch")


if __name__ == "__main__":
    main()
