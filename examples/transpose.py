"""2-D tiled transpose out = x.T through strides, on a non-contiguous input (a column slice).

Run: python examples/transpose.py   (or: tilescope sanitize -- python examples/transpose.py)
"""
import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def transpose_kernel(x_ptr, out_ptr, M, N, stride_xm, stride_xn, stride_om, stride_on, BLOCK_M: tl.constexpr,
                     BLOCK_N: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tile = tl.load(x_ptr + rm[:, None] * stride_xm + rn[None, :] * stride_xn, mask=mask)
    # out[n, m] = x[m, n]: write the transposed tile
    tl.store(out_ptr + rn[:, None] * stride_om + rm[None, :] * stride_on, tl.trans(tile), mask=tl.trans(mask))


def main():
    torch.manual_seed(0)
    wide = torch.randn(45, 100, device=DEVICE, dtype=torch.float16)
    x = wide[:, 10:77]  # 45 x 67, row stride 100
    M, N = x.shape
    out = torch.empty(N, M, device=DEVICE, dtype=x.dtype)
    grid = (triton.cdiv(M, 16), triton.cdiv(N, 32))
    transpose_kernel[grid](x, out, M, N, x.stride(0), x.stride(1), out.stride(0), out.stride(1), BLOCK_M=16,
                           BLOCK_N=32)
    torch.testing.assert_close(out, x.t(), rtol=0, atol=0)
    print("transpose: OK")


if __name__ == "__main__":
    main()
