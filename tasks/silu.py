"""SiLU (swish): y = x * sigmoid(x) = x / (1 + exp(-x))."""
import torch

description = (
    "SiLU of each element of the contiguous f32 vector x of n elements: y[i] = x[i] / (1 + exp(-x[i])) for "
    "i < n, into the contiguous f32 vector y of n elements. Launched with a 1-D grid of ceil(n / BLOCK) programs "
    "(BLOCK: the kernel's block size); program p handles elements p * BLOCK to p * BLOCK + BLOCK - 1, the last one "
    "only those below n.")
signature = ["x_ptr: *f32", "y_ptr: *f32 out", "n: i32", "BLOCK: constexpr"]
sizes = [{"n": 100}, {"n": 129}, {"n": 2048}]
tolerance = (1e-5, 1e-6)  # f32 elementwise math: exp and the division within a few ulp of float64's


def inputs(size, gen):
    n = size["n"]
    return {"x_ptr": torch.randn(n, generator=gen) * 4, "y_ptr": torch.empty(n), "n": n}


def reference(args):
    return {"y_ptr": torch.nn.functional.silu(args["x_ptr"].double())}


def grid(size, meta):
    return ((size["n"] + meta["BLOCK"] - 1) // meta["BLOCK"],)
