"""Logistic sigmoid: y = 1 / (1 + exp(-x)), elementwise."""
import torch

description = (
    "Sigmoid of each element of the contiguous f32 vector x of n elements: y[i] = 1 / (1 + exp(-x[i])) for i < n, "
    "into the contiguous f32 vector y of n elements; x may be large in magnitude (tens), and y must then be 0 or 1 "
    "within f32 precision, never NaN. Launched with a 1-D grid of ceil(n / BLOCK) programs (BLOCK: the kernel's "
    "block size); program p handles elements p * BLOCK to p * BLOCK + BLOCK - 1, the last one only those below n.")
signature = ["x_ptr: *f32", "y_ptr: *f32 out", "n: i32", "BLOCK: constexpr"]
sizes = [{"n": 1}, {"n": 255}, {"n": 1024}, {"n": 3333}]


def inputs(size, gen):
    n = size["n"]
    x = torch.randn(n, generator=gen) * 6
    x[:4] = torch.tensor([-100.0, -30.0, 30.0, 100.0])[:n]  # exp(-x) overflows f32 for the first
    return {"x_ptr": x, "y_ptr": torch.empty(n), "n": n}


def reference(args):
    return {"y_ptr": torch.sigmoid(args["x_ptr"].double())}


def grid(size, meta):
    return ((size["n"] + meta["BLOCK"] - 1) // meta["BLOCK"],)
