"""Per-row int8 dequantization: x[i, j] = q[i, j] * scale[i] in f32 (the inverse of quantize_int8)."""
import torch

description = (
    "Dequantize a row-major int8 matrix q of M rows and N columns (row i starting at element i * stride_q) with "
    "one f32 scale per row (scale is f32[M]): x[i, j] = float(q[i, j]) * scale[i], one f32 multiplication, into "
    "the row-major f32 matrix x (row i starting at element i * stride_x; only its first N elements of each row "
    "are written). Launched on a 2-D grid of BLOCK_M x BLOCK_N tiles: grid (cdiv(M, BLOCK_M), cdiv(N, BLOCK_N)); "
    "program (pid_m, pid_n) handles rows pid_m * BLOCK_M ... and columns pid_n * BLOCK_N ....")
signature = ["q_ptr: *i8", "scale_ptr: *f32", "x_ptr: *f32 out", "M: i32", "N: i32", "stride_q: i32", "stride_x: i32",
             "BLOCK_M: constexpr", "BLOCK_N: constexpr"]
sizes = [{"m": 1, "n": 1}, {"m": 37, "n": 300, "pad": 3}, {"m": 16, "n": 128}, {"m": 5, "n": 1000, "pad": 1}]
tolerance = (0.0, 0.0)  # one f32 product of exact operands, correctly rounded on both sides: bit-exact


def inputs(size, gen):
    m, n, pad = size["m"], size["n"], size.get("pad", 0)
    q = torch.randint(-127, 128, (m, n + pad), generator=gen, dtype=torch.int8)
    scale = torch.rand(m, generator=gen) * 0.1
    return {"q_ptr": q, "scale_ptr": scale, "x_ptr": torch.empty(m, n + 2 * pad), "M": m, "N": n,
            "stride_q": n + pad, "stride_x": n + 2 * pad}


def reference(args):
    n = args["N"]
    x = torch.zeros(args["x_ptr"].shape, dtype=torch.float32)
    x[:, :n] = args["q_ptr"][:, :n].float() * args["scale_ptr"][:, None]  # in f32, as the kernel
    written = torch.zeros(x.shape, dtype=torch.bool)
    written[:, :n] = True
    return {"x_ptr": (x, written)}


def grid(size, meta):
    return (-(-size["m"] // meta["BLOCK_M"]), -(-size["n"] // meta["BLOCK_N"]))
