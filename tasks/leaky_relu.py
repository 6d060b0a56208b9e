"""Leaky ReLU with a runtime slope: y = x for x > 0, else slope * x (torch.nn.functional.leaky_relu)."""
import torch

description = (
    "Leaky ReLU of each element of the contiguous f32 vector x of n elements: y[i] = x[i] if x[i] > 0, else "
    "slope * x[i] (slope an f32 scalar argument), for i < n, into the contiguous f32 vector y of n elements. "
    "Launched with a 1-D grid of ceil(n / BLOCK) programs (BLOCK: the kernel's block size); program p handles "
    "elements p * BLOCK to p * BLOCK + BLOCK - 1, the last one only those below n.")
signature = ["x_ptr: *f32", "y_ptr: *f32 out", "n: i32", "slope: f32", "BLOCK: constexpr"]
sizes = [{"n": 1, "slope": 0.01}, {"n": 700, "slope": 0.2}, {"n": 4096, "slope": 0.01}, {"n": 1500, "slope": 0.1}]


def inputs(size, gen):
    n = size["n"]
    return {"x_ptr": torch.randn(n, generator=gen) * 2, "y_ptr": torch.empty(n), "n": n, "slope": size["slope"]}


def reference(args):
    slope = float(torch.tensor(args["slope"], dtype=torch.float32))  # the f32 value the kernel receives
    return {"y_ptr": torch.nn.functional.leaky_relu(args["x_ptr"].double(), negative_slope=slope)}


def grid(size, meta):
    return ((size["n"] + meta["BLOCK"] - 1) // meta["BLOCK"],)
