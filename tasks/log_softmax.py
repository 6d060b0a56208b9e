"""Log-softmax over each row (torch.log_softmax(x, dim=1)), in the stable form x - max - log(sum(exp(x - max)))."""
import torch

description = (
    "Log-softmax over each row of the f32 matrix x (m rows of n_cols values, n_cols at most 1024; row r starts at "
    "element r * x_stride, x_stride >= n_cols): y[r, j] = x[r, j] - log(sum over k of exp(x[r, k])), computed "
    "without overflow for large values. y is an f32 matrix with its own row stride (row r starts at element "
    "r * y_stride, y_stride >= n_cols); its elements between n_cols and y_stride are not written. Launched with one "
    "program per row (a grid of m).")
signature = ["x_ptr: *f32", "y_ptr: *f32 out", "n_cols: i32", "x_stride: i32", "y_stride: i32", "BLOCK: constexpr"]
sizes = [{"m": 1, "n": 1}, {"m": 6, "n": 200, "x_pad": 7, "y_pad": 3}, {"m": 3, "n": 1024},
         {"m": 2, "n": 555, "y_pad": 20, "scale": 50}]


def inputs(size, gen):
    m, n = size["m"], size["n"]
    xs, ys = n + size.get("x_pad", 0), n + size.get("y_pad", 0)
    x = torch.randn(m, xs, generator=gen) * size.get("scale", 3)
    return {"x_ptr": x, "y_ptr": torch.empty(m, ys), "n_cols": n, "x_stride": xs, "y_stride": ys}


def reference(args):
    n, y_stride = args["n_cols"], args["y_stride"]
    x = args["x_ptr"].double()[:, :n]
    y = torch.zeros(x.shape[0], y_stride, dtype=torch.float64)
    y[:, :n] = torch.log_softmax(x, dim=1)
    written = torch.zeros(y.shape, dtype=torch.bool)
    written[:, :n] = True
    return {"y_ptr": (y, written)}


def grid(size, meta):
    return (size["m"],)
