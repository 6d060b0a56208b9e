"""Layer normalization over each row, with a weight and a bias per column (torch.nn.functional.layer_norm)."""
import torch

description = (
    "Layer normalization of each row of the f32 matrix x (m rows of n_cols values, n_cols at most 256; row r "
    "starts at element r * stride, stride >= n_cols): with mean and biased variance var of the row's n_cols "
    "values, y = (x - mean) / sqrt(var + eps) * w + b, where w and b are contiguous f32 vectors of n_cols values "
    "(one per column) and eps an f32 scalar. y has the layout of x (rows `stride` elements apart); the elements "
    "between n_cols and stride are not written. Launched with one program per row (a grid of m).")
signature = ["x_ptr: *f32", "w_ptr: *f32", "b_ptr: *f32", "y_ptr: *f32 out", "n_cols: i32", "stride: i32",
             "eps: f32", "BLOCK: constexpr"]
sizes = [{"m": 3, "n": 17}, {"m": 8, "n": 256}, {"m": 2, "n": 200, "pad": 5}]
tolerance = (1e-5, 1e-5)  # f32 reductions: the order of the additions differs from float64's


def inputs(size, gen):
    m, n = size["m"], size["n"]
    stride = n + size.get("pad", 0)
    return {"x_ptr": torch.randn(m, stride, generator=gen) * 2, "w_ptr": torch.randn(n, generator=gen),
            "b_ptr": torch.randn(n, generator=gen), "y_ptr": torch.empty(m, stride), "n_cols": n, "stride": stride,
            "eps": 1e-5}


def reference(args):
    x, n = args["x_ptr"].double(), args["n_cols"]
    eps = float(torch.tensor(args["eps"], dtype=torch.float32))  # the f32 value the kernel receives
    y = torch.zeros_like(x)
    y[:, :n] = torch.nn.functional.layer_norm(x[:, :n], (n,), args["w_ptr"].double(), args["b_ptr"].double(), eps)
    written = torch.zeros(x.shape, dtype=torch.bool)
    written[:, :n] = True
    return {"y_ptr": (y, written)}


def grid(size, meta):
    return (size["m"],)
