"""BUGGY: a per-row kernel launched on a grid larger than the data.

The bug (line 34, marked `# BUG:`): the launch rounds the number of programs up to a multiple of 8
(40 programs for 37 rows), but the kernel has no `if row >= n_rows: return`, so programs 37..39 read
and write rows that do not exist, past the end of x and y.

Run: tilescope sanitize -- python examples/buggy_grid_too_large.py
"""
import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def l2_normalize_kernel(x_ptr, y_ptr, stride, n_rows, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    # (correct: `if row >= n_rows: return` here, or a row term in the masks)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)  # expect: out-of-bounds-load
    norm = tl.sqrt(tl.sum(x * x, axis=0))
    tl.store(y_ptr + row * stride + cols, x / norm, mask=mask)  # expect: out-of-bounds-store


def main():
    torch.manual_seed(0)
    n_rows, n_cols = 37, 50
    x = torch.randn(n_rows, n_cols, device=DEVICE)
    y = torch.empty_like(x)
    # the bug is here: 40 programs for 37 rows
    grid = (triton.cdiv(n_rows, 8) * 8,)
    l2_normalize_kernel[grid](x, y, x.stride(0), n_rows, n_cols, BLOCK=64)  # BUG: grid larger than the data
    ok = torch.allclose(y, torch.nn.functional.normalize(x, dim=1), atol=1e-5)
    print("buggy_grid_too_large: ran; outputs", "match" if ok else "DO NOT match", "torch")


if __name__ == "__main__":
    main()
