"""Reverse cumulative sum along rows: y[i, j] = sum_{k >= j} x[i, k] (torch.flip(torch.cumsum(flip(x)))), over
blocks of columns from the last one back, carrying the sum of the blocks after the current one."""
import torch

description = (
    "Reverse (suffix) cumulative sum of each row of a row-major f32 matrix x with N columns (N >= 1, any size: "
    "loop over the columns in blocks of BLOCK, from the last block back to the first, carrying the sum of the "
    "blocks already done), row i starting at element i * stride: y[i, j] = x[i, j] + x[i, j + 1] + ... + "
    "x[i, N - 1]. y has the same layout; only its first N elements of each row are written. Launched with one "
    "program per row: grid (number of rows,).")
signature = ["x_ptr: *f32", "y_ptr: *f32 out", "N: i32", "stride: i32", "BLOCK: constexpr"]
sizes = [{"m": 1, "n": 1}, {"m": 5, "n": 100}, {"m": 3, "n": 1000, "pad": 3}, {"m": 2, "n": 512}]
# f32 running sums of up to 1000 terms (|y| up to ~100) rounded in a different order from float64's: the
# absolute error grows with the partial sums, beyond the default atol where y itself is near 0.
tolerance = (1e-5, 1e-4)


def inputs(size, gen):
    m, n = size["m"], size["n"]
    stride = n + size.get("pad", 0)
    return {"x_ptr": torch.randn(m, stride, generator=gen), "y_ptr": torch.empty(m, stride), "N": n, "stride": stride}


def reference(args):
    n = args["N"]
    x = args["x_ptr"][:, :n].double()
    y = torch.zeros(args["y_ptr"].shape, dtype=torch.float64)
    y[:, :n] = torch.flip(torch.cumsum(torch.flip(x, [1]), dim=1), [1])
    written = torch.zeros(y.shape, dtype=torch.bool)
    written[:, :n] = True
    return {"y_ptr": (y, written)}


def grid(size, meta):
    return (size["m"],)
