"""L2 normalization of rows: y = x / max(||x||_2, eps), as torch.nn.functional.normalize(x, p=2, dim=1, eps)."""
import torch

description = (
    "Normalize each row of a row-major f32 matrix x to unit L2 norm: y[i, j] = x[i, j] / max(sqrt(sum_k "
    "x[i, k]^2), eps), as torch.nn.functional.normalize(x, p=2, dim=1, eps=eps). x has n_cols columns (1 <= "
    "n_cols <= 2048: one block holds a whole row) and its row i starts at element i * stride (stride >= n_cols); "
    "y has the same layout, and only its first n_cols elements of each row are written. eps is an f32 scalar "
    "(1e-12): a row of zeros gives zeros. Launched with one program per row: grid (number of rows,).")
signature = ["x_ptr: *f32", "y_ptr: *f32 out", "n_cols: i32", "stride: i32", "eps: f32", "BLOCK: constexpr"]
# one element; a row of zeros (the eps branch) in a padded matrix; full 2048-wide rows; tiny values.
sizes = [{"m": 1, "n": 1}, {"m": 5, "n": 300, "pad": 3, "zero_row": 2}, {"m": 3, "n": 2048},
         {"m": 4, "n": 77, "scale": 1e-3}]


def inputs(size, gen):
    m, n = size["m"], size["n"]
    stride = n + size.get("pad", 0)
    x = torch.randn(m, stride, generator=gen) * size.get("scale", 2.0)
    if "zero_row" in size:
        x[size["zero_row"]] = 0
    return {"x_ptr": x, "y_ptr": torch.empty(m, stride), "n_cols": n, "stride": stride, "eps": 1e-12}


def reference(args):
    x, n = args["x_ptr"].double(), args["n_cols"]
    y = torch.zeros_like(x)
    y[:, :n] = torch.nn.functional.normalize(x[:, :n], p=2.0, dim=1, eps=args["eps"])
    written = torch.zeros_like(x, dtype=torch.bool)
    written[:, :n] = True
    return {"y_ptr": (y, written)}


def grid(size, meta):
    return (size["m"],)
