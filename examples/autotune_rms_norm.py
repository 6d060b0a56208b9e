"""RMS norm behind triton.autotune and triton.heuristics: the launch picks BLOCK from the row width
(heuristics) and autotunes num_warps; the grid is a callable that receives META.

Run: python examples/autotune_rms_norm.py   (or: tilescope sanitize -- python examples/autotune_rms_norm.py)
"""
import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.autotune(configs=[triton.Config({}, num_warps=4), triton.Config({}, num_warps=8)], key=["n_cols"])
@triton.heuristics({"BLOCK": lambda args: triton.next_power_of_2(args["n_cols"])})
@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, y_ptr, stride, n_rows, n_cols, eps, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0)
    tl.store(y_ptr + rows[:, None] * stride + cols[None, :], x * rstd[:, None] * w[None, :], mask=mask)


def main():
    torch.manual_seed(0)
    n_rows, n_cols = 33, 130
    x = torch.randn(n_rows, n_cols, device=DEVICE)
    w = torch.randn(n_cols, device=DEVICE)
    y = torch.empty_like(x)
    grid = lambda meta: (triton.cdiv(n_rows, meta["ROWS"]),)
    rms_norm_kernel[grid](x, w, y, x.stride(0), n_rows, n_cols, 1e-6, ROWS=4)
    ref = x * torch.rsqrt(x.pow(2).mean(dim=1, keepdim=True) + 1e-6) * w
    torch.testing.assert_close(y, ref, rtol=1e-5, atol=1e-5)
    print("autotune_rms_norm: OK")


if __name__ == "__main__":
    main()
