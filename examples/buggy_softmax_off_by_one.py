"""BUGGY: row softmax with an off-by-one mask.

The bug (line 20, marked `# BUG:`): `cols <= n_cols` lets lane n_cols through. For every row but the
last that lane reads the first element of the next row (inside x, so it is not a memory error, but the
softmax is wrong; its store races with the next program's); on the last row it reads and writes past x, y.

Run: tilescope sanitize -- python examples/buggy_softmax_off_by_one.py
"""
import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def softmax_kernel(x_ptr, y_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols <= n_cols  # BUG: should be cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))  # expect: out-of-bounds-load
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(y_ptr + row * stride + cols, y, mask=mask)  # expect: out-of-bounds-store, data-race


def main():
    torch.manual_seed(0)
    x = torch.randn(16, 100, device=DEVICE)
    y = torch.empty_like(x)
    softmax_kernel[(16,)](x, y, x.stride(0), 100, BLOCK=128)
    ok = torch.allclose(y, torch.softmax(x, dim=1), atol=1e-5)
    print("buggy_softmax_off_by_one: ran; outputs", "match" if ok else "DO NOT match", "torch")


if __name__ == "__main__":
    main()
