"""Softplus with PyTorch's threshold: y = log(1 + exp(x)), and y = x where x > 20 (torch.nn.functional.softplus
with beta 1 and threshold 20)."""
import torch

description = (
    "Softplus of each element of the contiguous f32 vector x of n elements, as PyTorch's with beta = 1 and "
    "threshold = 20: y[i] = x[i] where x[i] > 20, else log(1 + exp(x[i])), for i < n, into the contiguous f32 "
    "vector y of n elements. x may be large in magnitude (such as -100 or 100): y must stay finite and accurate "
    "(exp(x) overflows f32 above about 88). Launched with a 1-D grid of ceil(n / BLOCK) programs (BLOCK: the "
    "kernel's block size); program p handles elements p * BLOCK to p * BLOCK + BLOCK - 1, the last one only those "
    "below n.")
signature = ["x_ptr: *f32", "y_ptr: *f32 out", "n: i32", "BLOCK: constexpr"]
sizes = [{"n": 1}, {"n": 300}, {"n": 1024}, {"n": 4099}]
EXTREMES = [-100.0, -30.0, -20.0, 19.5, 20.0, 20.5, 30.0, 100.0]  # both sides of the threshold, and overflow


def inputs(size, gen):
    n = size["n"]
    x = torch.randn(n, generator=gen) * 15
    k = min(n, len(EXTREMES))
    x[:k] = torch.tensor(EXTREMES[:k])
    return {"x_ptr": x, "y_ptr": torch.empty(n), "n": n}


def reference(args):
    return {"y_ptr": torch.nn.functional.softplus(args["x_ptr"].double(), beta=1.0, threshold=20.0)}


def grid(size, meta):
    return ((size["n"] + meta["BLOCK"] - 1) // meta["BLOCK"],)
