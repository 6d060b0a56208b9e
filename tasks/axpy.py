"""AXPY (BLAS level 1): y = alpha * x + y, in place."""
import torch

description = (
    "AXPY: y[i] = alpha * x[i] + y[i] for every i < n, in place: x and y are contiguous f32 vectors of n "
    "elements, alpha an f32 scalar; y holds its old values on entry. Launched with a 1-D grid of ceil(n / BLOCK) "
    "programs (BLOCK: the kernel's block size); program p handles elements p * BLOCK to p * BLOCK + BLOCK - 1, the "
    "last one only those below n.")
signature = ["x_ptr: *f32", "y_ptr: *f32 inout", "n: i32", "alpha: f32", "BLOCK: constexpr"]
sizes = [{"n": 1, "alpha": 2.0}, {"n": 1000, "alpha": -0.5}, {"n": 4096, "alpha": 3.25}, {"n": 10000, "alpha": 0.1}]


def inputs(size, gen):
    n = size["n"]
    return {"x_ptr": torch.randn(n, generator=gen), "y_ptr": torch.randn(n, generator=gen), "n": n,
            "alpha": size["alpha"]}


def reference(args):
    alpha = float(torch.tensor(args["alpha"], dtype=torch.float32))  # the f32 value the kernel receives
    return {"y_ptr": alpha * args["x_ptr"].double() + args["y_ptr"].double()}


def grid(size, meta):
    return ((size["n"] + meta["BLOCK"] - 1) // meta["BLOCK"],)
