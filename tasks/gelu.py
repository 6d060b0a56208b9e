"""GELU, the exact form with the error function: y = x / 2 * (1 + erf(x / sqrt(2)))."""
import torch

description = (
    "GELU (the exact form, not the tanh approximation) of each element of the contiguous f32 vector x of n "
    "elements: y[i] = 0.5 * x[i] * (1 + erf(x[i] / sqrt(2))) for i < n, into the contiguous f32 vector y of n "
    "elements. Launched with a 1-D grid of ceil(n / BLOCK) programs (BLOCK: the kernel's block size); program p "
    "handles elements p * BLOCK to p * BLOCK + BLOCK - 1, the last one only those below n.")
signature = ["x_ptr: *f32", "y_ptr: *f32 out", "n: i32", "BLOCK: constexpr"]
sizes = [{"n": 7}, {"n": 512}, {"n": 3001}]
tolerance = (1e-5, 1e-6)  # f32 elementwise math: erf within a few ulp of float64's


def inputs(size, gen):
    n = size["n"]
    return {"x_ptr": torch.randn(n, generator=gen) * 3, "y_ptr": torch.empty(n), "n": n}


def reference(args):
    return {"y_ptr": torch.nn.functional.gelu(args["x_ptr"].double(), approximate="none")}


def grid(size, meta):
    return ((size["n"] + meta["BLOCK"] - 1) // meta["BLOCK"],)
