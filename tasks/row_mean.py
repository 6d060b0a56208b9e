"""Mean of each row of a matrix, several rows per program, looping over column blocks (any number of columns)."""
import torch

description = (
    "Mean of each row of the f32 matrix x (M rows of N values, any N >= 1; row r starts at element r * stride, "
    "stride >= N) into the contiguous f32 vector out of M values: out[r] = (x[r, 0] + ... + x[r, N - 1]) / N. "
    "Launched with a 1-D grid of ceil(M / BLOCK_M) programs (BLOCK_M: the kernel's rows per program); program p "
    "handles rows p * BLOCK_M to p * BLOCK_M + BLOCK_M - 1, the last one only those below M, looping over the "
    "columns in blocks.")
signature = ["x_ptr: *f32", "out_ptr: *f32 out", "M: i32", "N: i32", "stride: i32", "BLOCK_M: constexpr",
             "BLOCK_N: constexpr"]
sizes = [{"m": 1, "n": 1}, {"m": 10, "n": 300, "pad": 5}, {"m": 33, "n": 64}, {"m": 8, "n": 1000}]


def inputs(size, gen):
    m, n = size["m"], size["n"]
    stride = n + size.get("pad", 0)
    return {"x_ptr": torch.randn(m, stride, generator=gen) + 0.5, "out_ptr": torch.empty(m), "M": m, "N": n,
            "stride": stride}


def reference(args):
    return {"out_ptr": args["x_ptr"].double()[:, :args["N"]].mean(dim=1)}


def grid(size, meta):
    return ((size["m"] + meta["BLOCK_M"] - 1) // meta["BLOCK_M"],)
