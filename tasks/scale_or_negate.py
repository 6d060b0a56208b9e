"""A branch on a runtime flag: y = x * scale when flag is non-zero, else y = -x."""
import torch

description = (
    "If the i32 scalar flag is not 0, y[i] = x[i] * scale (scale an f32 scalar), else y[i] = -x[i], for every "
    "i < n; x and y are contiguous f32 vectors of n elements. Launched with a 1-D grid of ceil(n / BLOCK) programs "
    "(BLOCK: the kernel's block size); program p handles elements p * BLOCK to p * BLOCK + BLOCK - 1, the last one "
    "only those below n.")
signature = ["x_ptr: *f32", "y_ptr: *f32 out", "n: i32", "flag: i32", "scale: f32", "BLOCK: constexpr"]
sizes = [{"n": 100, "flag": 1}, {"n": 100, "flag": 0}, {"n": 64, "flag": 7}]
# Exact: the float64 product of two f32 values is exact, and rounding it to f32 gives the correctly rounded f32
# product, which is what one f32 multiplication gives; negation is exact.
tolerance = (0.0, 0.0)


def inputs(size, gen):
    n = size["n"]
    return {"x_ptr": torch.randn(n, generator=gen), "y_ptr": torch.empty(n), "n": n, "flag": size["flag"],
            "scale": 2.5}


def reference(args):
    x = args["x_ptr"].double()
    scale = float(torch.tensor(args["scale"], dtype=torch.float32))  # the f32 value the kernel receives
    return {"y_ptr": (x * scale).float() if args["flag"] != 0 else -x}


def grid(size, meta):
    return ((size["n"] + meta["BLOCK"] - 1) // meta["BLOCK"],)
