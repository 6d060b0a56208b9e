"""Sum of each column of a matrix: programs over column blocks, each looping over the rows."""
import torch

description = (
    "Sum of each column of the f32 matrix x (M rows of N values, any M >= 1; row r starts at element r * stride, "
    "stride >= N) into the contiguous f32 vector out of N values: out[j] = x[0, j] + ... + x[M - 1, j]. Launched "
    "with a 1-D grid of ceil(N / BLOCK_N) programs (BLOCK_N: the kernel's columns per program); program p handles "
    "columns p * BLOCK_N to p * BLOCK_N + BLOCK_N - 1, the last one only those below N, looping over the rows in "
    "blocks.")
signature = ["x_ptr: *f32", "out_ptr: *f32 out", "M: i32", "N: i32", "stride: i32", "BLOCK_M: constexpr",
             "BLOCK_N: constexpr"]
sizes = [{"m": 1, "n": 1}, {"m": 100, "n": 70, "pad": 2}, {"m": 257, "n": 128}, {"m": 5, "n": 300, "pad": 10}]


def inputs(size, gen):
    m, n = size["m"], size["n"]
    stride = n + size.get("pad", 0)
    return {"x_ptr": torch.randn(m, stride, generator=gen), "out_ptr": torch.empty(n), "M": m, "N": n,
            "stride": stride}


def reference(args):
    return {"out_ptr": args["x_ptr"].double()[:, :args["N"]].sum(dim=0)}


def grid(size, meta):
    return ((size["n"] + meta["BLOCK_N"] - 1) // meta["BLOCK_N"],)
