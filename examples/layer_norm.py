"""Layer norm forward and backward (dx, dw, db), one program per row.

The backward pass accumulates dw and db in GROUP partial rows (program p handles rows p, p+G, ...)
and a second kernel sums the partials column-wise, so no atomics are needed.

Run: python examples/layer_norm.py   (or: tilescope sanitize -- python examples/layer_norm.py)
"""
import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def layer_norm_fwd(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(y_ptr + row * stride + cols, xc * rstd * w + b, mask=mask)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


@triton.jit
def layer_norm_bwd_dx(dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr, dw_part_ptr, db_part_ptr, stride,
                      n_rows, n_cols, GROUP: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    dw_acc = tl.zeros([BLOCK], dtype=tl.float32)
    db_acc = tl.zeros([BLOCK], dtype=tl.float32)
    for row in range(pid, n_rows, GROUP):
        x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
        dy = tl.load(dy_ptr + row * stride + cols, mask=mask, other=0.0)
        mean = tl.load(mean_ptr + row)
        rstd = tl.load(rstd_ptr + row)
        xhat = tl.where(mask, (x - mean) * rstd, 0.0)
        wdy = w * dy
        c1 = tl.sum(xhat * wdy, axis=0) / n_cols
        c2 = tl.sum(wdy, axis=0) / n_cols
        dx = (wdy - (xhat * c1 + c2)) * rstd
        tl.store(dx_ptr + row * stride + cols, dx, mask=mask)
        dw_acc += dy * xhat
        db_acc += dy
    tl.store(dw_part_ptr + pid * n_cols + cols, dw_acc, mask=mask)
    tl.store(db_part_ptr + pid * n_cols + cols, db_acc, mask=mask)


@triton.jit
def sum_partials(part_ptr, out_ptr, n_parts, n_cols, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    cols = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for p0 in range(0, n_parts, BLOCK_P):
        parts = p0 + tl.arange(0, BLOCK_P)
        m = (parts[:, None] < n_parts) & (cols[None, :] < n_cols)
        acc += tl.sum(tl.load(part_ptr + parts[:, None] * n_cols + cols[None, :], mask=m, other=0.0), axis=0)
    tl.store(out_ptr + cols, acc, mask=cols < n_cols)


def main():
    torch.manual_seed(0)
    M, N, eps, GROUP = 45, 200, 1e-5, 8
    BLOCK = triton.next_power_of_2(N)
    x = torch.randn(M, N, device=DEVICE)
    w = torch.randn(N, device=DEVICE)
    b = torch.randn(N, device=DEVICE)
    dy = torch.randn(M, N, device=DEVICE)

    y = torch.empty_like(x)
    mean = torch.empty(M, device=DEVICE)
    rstd = torch.empty(M, device=DEVICE)
    layer_norm_fwd[(M,)](x, y, w, b, mean, rstd, x.stride(0), N, eps, BLOCK=BLOCK)

    dx = torch.empty_like(x)
    dw_part = torch.empty(GROUP, N, device=DEVICE)
    db_part = torch.empty(GROUP, N, device=DEVICE)
    layer_norm_bwd_dx[(GROUP,)](dy, x, w, mean, rstd, dx, dw_part, db_part, x.stride(0), M, N,
                                GROUP=GROUP, BLOCK=BLOCK)
    dw = torch.empty(N, device=DEVICE)
    db = torch.empty(N, device=DEVICE)
    sum_partials[(triton.cdiv(N, 64),)](dw_part, dw, GROUP, N, BLOCK_P=4, BLOCK_N=64)
    sum_partials[(triton.cdiv(N, 64),)](db_part, db, GROUP, N, BLOCK_P=4, BLOCK_N=64)

    xr = x.clone().requires_grad_()
    wr = w.clone().requires_grad_()
    br = b.clone().requires_grad_()
    yr = torch.nn.functional.layer_norm(xr, (N,), wr, br, eps)
    yr.backward(dy)
    torch.testing.assert_close(y, yr.detach(), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(mean, x.mean(dim=1), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(dx, xr.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(dw, wr.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(db, br.grad, rtol=1e-4, atol=1e-4)
    print("layer_norm (forward and backward): OK")


if __name__ == "__main__":
    main()
