"""Histogram of small integers, accumulated into existing counts with atomic adds."""
import torch

description = (
    "Histogram: x is a contiguous i32 vector of n values, each in 0 .. bins - 1, and counts a contiguous i32 "
    "vector of `bins` counts that already holds earlier counts; add 1 to counts[x[i]] for every i < n (several "
    "programs may hit the same bin). Launched with a 1-D grid of ceil(n / BLOCK) programs (BLOCK: the kernel's "
    "block size); program p handles elements p * BLOCK to p * BLOCK + BLOCK - 1, the last one only those below n.")
signature = ["x_ptr: *i32", "counts_ptr: *i32 inout", "n: i32", "BLOCK: constexpr"]
sizes = [{"n": 1, "bins": 4}, {"n": 1000, "bins": 16}, {"n": 4099, "bins": 100}]


def inputs(size, gen):
    n, bins = size["n"], size["bins"]
    return {"x_ptr": torch.randint(0, bins, (n,), generator=gen, dtype=torch.int32),
            "counts_ptr": torch.randint(0, 5, (bins,), generator=gen, dtype=torch.int32), "n": n}


def reference(args):
    counts = args["counts_ptr"]
    return {"counts_ptr": counts.long() + torch.bincount(args["x_ptr"].long(), minlength=counts.numel())}


def grid(size, meta):
    return ((size["n"] + meta["BLOCK"] - 1) // meta["BLOCK"],)
