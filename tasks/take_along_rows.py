"""Gather within each row: out[r, j] = x[r, idx[r, j]] (torch.gather(x, 1, idx))."""
import torch

description = (
    "Gather along each row: x is an f32 matrix of M rows of N values (N at most 64; row r starts at element "
    "r * stride, stride >= N) and idx a contiguous i32 matrix of M rows of K column indices (K at most 32), each "
    "in 0 .. N - 1; out[r, j] = x[r, idx[r, j]], into the contiguous f32 matrix out of M rows of K values. "
    "Launched with a 1-D grid of ceil(M / BLOCK_M) programs (BLOCK_M: the kernel's rows per program); program p "
    "handles rows p * BLOCK_M to p * BLOCK_M + BLOCK_M - 1, the last one only those below M.")
signature = ["x_ptr: *f32", "idx_ptr: *i32", "out_ptr: *f32 out", "M: i32", "N: i32", "K: i32", "stride: i32",
             "BLOCK_M: constexpr", "BLOCK_N: constexpr", "BLOCK_K: constexpr"]
sizes = [{"m": 3, "n": 10, "k": 4}, {"m": 8, "n": 64, "k": 32}, {"m": 19, "n": 50, "k": 7},
         {"m": 5, "n": 33, "k": 20, "pad": 9}]
tolerance = (0.0, 0.0)  # data movement: exact


def inputs(size, gen):
    m, n, k = size["m"], size["n"], size["k"]
    stride = n + size.get("pad", 0)
    return {"x_ptr": torch.randn(m, stride, generator=gen),
            "idx_ptr": torch.randint(0, n, (m, k), generator=gen, dtype=torch.int32),
            "out_ptr": torch.empty(m, k), "M": m, "N": n, "K": k, "stride": stride}


def reference(args):
    return {"out_ptr": torch.gather(args["x_ptr"].double(), 1, args["idx_ptr"].long())}


def grid(size, meta):
    return ((size["m"] + meta["BLOCK_M"] - 1) // meta["BLOCK_M"],)
