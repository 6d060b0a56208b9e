"""BUGGY: first difference y[i] = x[i] - x[i-1] (y[0] = x[0]) with the guard in the wrong place.

The bug (line 22, marked `# BUG:`): `tl.where(offs > 0, x - prev, x)` only chooses which value to keep;
the load of x[offs - 1] still happens for offs = 0, i.e. at index -1, one element before x. The mask
should exclude that lane: `mask=mask & (offs > 0)`.

Run: tilescope sanitize -- python examples/buggy_diff_negative_index.py
"""
import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def diff_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    prev = tl.load(x_ptr + offs - 1, mask=mask)  # BUG: reads x[-1] for offs == 0  expect: out-of-bounds-load
    y = tl.where(offs > 0, x - prev, x)
    tl.store(y_ptr + offs, y, mask=mask)


def main():
    torch.manual_seed(0)
    n = 1000
    x = torch.randn(n, device=DEVICE)
    y = torch.empty_like(x)
    diff_kernel[(triton.cdiv(n, 128),)](x, y, n, BLOCK=128)
    ref = torch.cat([x[:1], x[1:] - x[:-1]])
    print("buggy_diff_negative_index: ran; outputs", "match" if torch.allclose(y, ref) else "DO NOT match", "torch")


if __name__ == "__main__":
    main()
