"""Inclusive prefix sum along each row of a matrix (torch.cumsum(x, dim=1))."""
import torch

description = (
    "Inclusive cumulative sum along each row of the f32 matrix x (M rows of N values, N at most 128; row r starts "
    "at element r * stride, stride >= N): y[r, j] = x[r, 0] + ... + x[r, j] for j < N. y has the layout of x "
    "(rows `stride` elements apart); the elements between N and stride are not written. Launched with a 1-D grid "
    "of ceil(M / BLOCK_M) programs (BLOCK_M: the kernel's rows per program); program p handles rows p * BLOCK_M "
    "to p * BLOCK_M + BLOCK_M - 1, the last one only those below M.")
signature = ["x_ptr: *f32", "y_ptr: *f32 out", "M: i32", "N: i32", "stride: i32", "BLOCK_M: constexpr",
             "BLOCK_N: constexpr"]
sizes = [{"m": 1, "n": 5}, {"m": 8, "n": 128}, {"m": 13, "n": 100, "pad": 4}]
tolerance = (1e-5, 1e-5)  # f32 scans: the order of the additions differs from float64's


def inputs(size, gen):
    m, n = size["m"], size["n"]
    stride = n + size.get("pad", 0)
    return {"x_ptr": torch.randn(m, stride, generator=gen), "y_ptr": torch.empty(m, stride), "M": m, "N": n,
            "stride": stride}


def reference(args):
    x, n = args["x_ptr"].double(), args["N"]
    y = torch.zeros_like(x)
    y[:, :n] = torch.cumsum(x[:, :n], dim=1)
    written = torch.zeros(x.shape, dtype=torch.bool)
    written[:, :n] = True
    return {"y_ptr": (y, written)}


def grid(size, meta):
    return ((size["m"] + meta["BLOCK_M"] - 1) // meta["BLOCK_M"],)
