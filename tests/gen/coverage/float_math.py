"""Op coverage: the float math ops (exp2, log, log2, sqrt, sin, cos, floor, ceil, tanh, abs, min, rem), one row of
y each. Not a suite task: it exists so that every op kind of the AST format runs against torch."""
import torch

description = (
    "For the contiguous f32 vector x of n values (each in 0.1 .. 4), with x3 = x * 3.3 and xm2 = x - 2 computed "
    "in f32, write 12 rows of n values into the contiguous f32 matrix y (12 x n): exp2(x), log(x), log2(x), "
    "sqrt(x), sin(x3), cos(x3), floor(x3), ceil(x3), tanh(xm2), |xm2|, min(x, 1.5), and x % 0.7 (the remainder "
    "with the sign of x). Launched with ceil(n / BLOCK) programs, program p handling elements p * BLOCK to "
    "p * BLOCK + BLOCK - 1 of every row.")
signature = ["x_ptr: *f32", "y_ptr: *f32 out", "n: i32", "BLOCK: constexpr"]
sizes = [{"n": 5}, {"n": 128}, {"n": 1000}]
tolerance = (1e-5, 1e-6)  # f32 elementwise math: the GPU's f32 functions are within a few ulp of float64's


def inputs(size, gen):
    n = size["n"]
    return {"x_ptr": torch.rand(n, generator=gen) * 3.9 + 0.1, "y_ptr": torch.empty(12, n), "n": n}


def reference(args):
    x = args["x_ptr"]
    f32 = lambda v: torch.tensor(v, dtype=torch.float32)  # noqa: E731 - the kernel's f32 constants
    x3, xm2 = (x * f32(3.3)).double(), (x - f32(2)).double()  # rounded to f32 as the kernel computes them
    xd = x.double()
    rows = [torch.exp2(xd), torch.log(xd), torch.log2(xd), torch.sqrt(xd), torch.sin(x3), torch.cos(x3),
            torch.floor(x3), torch.ceil(x3), torch.tanh(xm2), torch.abs(xm2), torch.clamp(xd, max=1.5),
            torch.fmod(xd, f32(0.7).double())]
    return {"y_ptr": torch.stack(rows)}


def grid(size, meta):
    return ((size["n"] + meta["BLOCK"] - 1) // meta["BLOCK"],)
