"""Clamp into [lo, hi] with runtime bounds: y = min(max(x, lo), hi) (torch.clamp)."""
import torch

description = (
    "Clamp each element of the contiguous f32 vector x of n elements into [lo, hi] (lo <= hi, f32 scalar "
    "arguments): y[i] = min(max(x[i], lo), hi) for i < n, into the contiguous f32 vector y of n elements. Launched "
    "with a 1-D grid of ceil(n / BLOCK) programs (BLOCK: the kernel's block size); program p handles elements "
    "p * BLOCK to p * BLOCK + BLOCK - 1, the last one only those below n.")
signature = ["x_ptr: *f32", "y_ptr: *f32 out", "n: i32", "lo: f32", "hi: f32", "BLOCK: constexpr"]
sizes = [{"n": 1, "lo": -0.5, "hi": 0.5}, {"n": 1000, "lo": -1.0, "hi": 2.0}, {"n": 3000, "lo": 0.25, "hi": 0.25},
         {"n": 2048, "lo": -3.0, "hi": -1.0}]


def inputs(size, gen):
    n = size["n"]
    return {"x_ptr": torch.randn(n, generator=gen) * 2, "y_ptr": torch.empty(n), "n": n, "lo": size["lo"],
            "hi": size["hi"]}


def reference(args):
    f32 = lambda v: float(torch.tensor(v, dtype=torch.float32))  # noqa: E731 - the f32 values the kernel receives
    return {"y_ptr": torch.clamp(args["x_ptr"].double(), f32(args["lo"]), f32(args["hi"]))}


def grid(size, meta):
    return ((size["n"] + meta["BLOCK"] - 1) // meta["BLOCK"],)
