"""BUGGY: layer norm that uses the input's row stride for the output.

The bug (line 30, marked `# BUG:`): x is a column slice of a wider tensor (row stride 2*N) but y is
contiguous (row stride N); the kernel writes y with x's stride, so rows past M/2 land beyond the end of
y (and the rows before that overwrite each other's neighbours).

Run: tilescope sanitize -- python examples/buggy_layer_norm_wrong_stride.py
"""
import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def layer_norm_fwd(x_ptr, y_ptr, w_ptr, b_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    y = xc * rstd * w + b
    # (correct: a separate y_stride argument)
    tl.store(y_ptr + row * stride + cols, y, mask=mask)  # BUG: x's stride used for y  expect: out-of-bounds-store


def main():
    torch.manual_seed(0)
    M, N = 32, 96
    wide = torch.randn(M, 2 * N, device=DEVICE)
    x = wide[:, :N]  # row stride 2*N
    w = torch.randn(N, device=DEVICE)
    b = torch.randn(N, device=DEVICE)
    y = torch.empty(M, N, device=DEVICE)  # row stride N
    layer_norm_fwd[(M,)](x, y, w, b, x.stride(0), N, 1e-5, BLOCK=128)
    ok = torch.allclose(y, torch.nn.functional.layer_norm(x, (N,), w, b, 1e-5), atol=1e-4)
    print("buggy_layer_norm_wrong_stride: ran; outputs", "match" if ok else "DO NOT match", "torch")


if __name__ == "__main__":
    main()
