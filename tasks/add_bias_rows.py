"""Add a bias vector to every row: out[i, j] = x[i, j] + bias[j] (a linear layer's epilogue), by 2-D tiles."""
import torch

description = (
    "Add a bias to every row of a row-major f32 matrix x of M rows and N columns (row i starting at element i * "
    "stride_x): out[i, j] = x[i, j] + bias[j], with bias f32[N] and out a row-major f32 matrix (row i starting at "
    "element i * stride_out; only the first N elements of each row are written). Launched on a 2-D grid of "
    "BLOCK_M x BLOCK_N tiles: grid (cdiv(M, BLOCK_M), cdiv(N, BLOCK_N)); program (pid_m, pid_n) handles rows "
    "pid_m * BLOCK_M ... and columns pid_n * BLOCK_N ....")
signature = ["x_ptr: *f32", "bias_ptr: *f32", "out_ptr: *f32 out", "M: i32", "N: i32", "stride_x: i32",
             "stride_out: i32", "BLOCK_M: constexpr", "BLOCK_N: constexpr"]
sizes = [{"m": 1, "n": 1}, {"m": 20, "n": 100, "pad": 4}, {"m": 64, "n": 64}, {"m": 3, "n": 300}]
tolerance = (0.0, 0.0)  # one correctly rounded f32 addition per element, as torch's f32 addition: bit-exact


def inputs(size, gen):
    m, n, pad = size["m"], size["n"], size.get("pad", 0)
    return {"x_ptr": torch.randn(m, n + pad, generator=gen), "bias_ptr": torch.randn(n, generator=gen),
            "out_ptr": torch.empty(m, n + 2 * pad), "M": m, "N": n, "stride_x": n + pad, "stride_out": n + 2 * pad}


def reference(args):
    n = args["N"]
    out = torch.zeros(args["out_ptr"].shape)
    out[:, :n] = args["x_ptr"][:, :n] + args["bias_ptr"]  # f32, as the kernel
    written = torch.zeros(out.shape, dtype=torch.bool)
    written[:, :n] = True
    return {"out_ptr": (out, written)}


def grid(size, meta):
    return (-(-size["m"] // meta["BLOCK_M"]), -(-size["n"] // meta["BLOCK_N"]))
