"""ReLU: y = max(x, 0), elementwise."""
import torch

description = (
    "ReLU of each element of the contiguous f32 vector x of n elements: y[i] = max(x[i], 0) for i < n, into the "
    "contiguous f32 vector y of n elements. Launched with a 1-D grid of ceil(n / BLOCK) programs (BLOCK: the "
    "kernel's block size); program p handles elements p * BLOCK to p * BLOCK + BLOCK - 1, the last one only those "
    "below n.")
signature = ["x_ptr: *f32", "y_ptr: *f32 out", "n: i32", "BLOCK: constexpr"]
sizes = [{"n": 1}, {"n": 1000}, {"n": 2048}, {"n": 5001}]


def inputs(size, gen):
    n = size["n"]
    return {"x_ptr": torch.randn(n, generator=gen), "y_ptr": torch.empty(n), "n": n}


def reference(args):
    return {"y_ptr": torch.relu(args["x_ptr"].double())}


def grid(size, meta):
    return ((size["n"] + meta["BLOCK"] - 1) // meta["BLOCK"],)
