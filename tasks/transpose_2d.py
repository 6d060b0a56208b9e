"""2-D transpose: out[j, i] = x[i, j] for an M x N f32 matrix, by tiles."""
import torch

description = (
    "Transpose a row-major f32 matrix x of M rows and N columns (row i starting at element i * stride_x) into "
    "out, a row-major f32 matrix of N rows and M columns (row j starting at element j * stride_out): "
    "out[j, i] = x[i, j]. Launched on a 2-D grid of BLOCK_M x BLOCK_N tiles of x: grid (cdiv(M, BLOCK_M), "
    "cdiv(N, BLOCK_N)); program (pid_m, pid_n) reads x's rows pid_m * BLOCK_M ... and columns pid_n * BLOCK_N "
    "... and writes them transposed.")
signature = ["x_ptr: *f32", "out_ptr: *f32 out", "M: i32", "N: i32", "stride_x: i32", "stride_out: i32",
             "BLOCK_M: constexpr", "BLOCK_N: constexpr"]
sizes = [{"m": 1, "n": 1}, {"m": 33, "n": 65}, {"m": 64, "n": 32}, {"m": 100, "n": 7, "pad": 3}, {"m": 1, "n": 50}]
tolerance = (0.0, 0.0)  # data movement: exact


def inputs(size, gen):
    m, n, pad = size["m"], size["n"], size.get("pad", 0)
    x = torch.randn(m, n + pad, generator=gen)
    return {"x_ptr": x, "out_ptr": torch.empty(n, m + pad), "M": m, "N": n, "stride_x": n + pad, "stride_out": m + pad}


def reference(args):
    m, n = args["M"], args["N"]
    out = torch.zeros(args["out_ptr"].shape)
    out[:, :m] = args["x_ptr"][:, :n].T
    written = torch.zeros(out.shape, dtype=torch.bool)
    written[:, :m] = True
    return {"out_ptr": (out, written)}


def grid(size, meta):
    return (-(-size["m"] // meta["BLOCK_M"]), -(-size["n"] // meta["BLOCK_N"]))
