"""GELU, the tanh approximation: y = x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))."""
import torch

description = (
    "GELU with the tanh approximation of each element of the contiguous f32 vector x of n elements: y[i] = 0.5 * "
    "x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))) with x = x[i], for i < n, into the contiguous f32 vector "
    "y of n elements. Launched with a 1-D grid of ceil(n / BLOCK) programs (BLOCK: the kernel's block size); "
    "program p handles elements p * BLOCK to p * BLOCK + BLOCK - 1, the last one only those below n.")
signature = ["x_ptr: *f32", "y_ptr: *f32 out", "n: i32", "BLOCK: constexpr"]
sizes = [{"n": 1}, {"n": 512}, {"n": 2000}, {"n": 5000}]


def inputs(size, gen):
    n = size["n"]
    return {"x_ptr": torch.randn(n, generator=gen) * 3, "y_ptr": torch.empty(n), "n": n}


def reference(args):
    return {"y_ptr": torch.nn.functional.gelu(args["x_ptr"].double(), approximate="tanh")}


def grid(size, meta):
    return ((size["n"] + meta["BLOCK"] - 1) // meta["BLOCK"],)
