"""Vector addition: out = x + y, elementwise over n f32 values."""
import torch

description = (
    "Elementwise sum of two contiguous f32 vectors x and y of n elements: out[i] = x[i] + y[i] for every i < n, "
    "into the contiguous f32 vector out of n elements. Launched with a 1-D grid of ceil(n / BLOCK) programs "
    "(BLOCK: the kernel's block size); program p handles elements p * BLOCK to p * BLOCK + BLOCK - 1, the last "
    "one only those below n.")
signature = ["x_ptr: *f32", "y_ptr: *f32", "out_ptr: *f32 out", "n: i32", "BLOCK: constexpr"]
sizes = [{"n": 1}, {"n": 256}, {"n": 1000}, {"n": 4097}]
# Exact: the float64 sum of two f32 values rounded to f32 is the correctly rounded f32 sum (IEEE 754), which is
# what one f32 addition gives.
tolerance = (0.0, 0.0)


def inputs(size, gen):
    n = size["n"]
    return {"x_ptr": torch.randn(n, generator=gen), "y_ptr": torch.randn(n, generator=gen),
            "out_ptr": torch.empty(n), "n": n}


def reference(args):
    return {"out_ptr": (args["x_ptr"].double() + args["y_ptr"].double()).float()}


def grid(size, meta):
    return ((size["n"] + meta["BLOCK"] - 1) // meta["BLOCK"],)
