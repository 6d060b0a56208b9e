"""Matrix product with a residual: C = A @ B + R, f16 inputs, f32 accumulation, f16 output (a transformer block's
output projection plus the skip connection)."""
import torch

description = (
    "C = A @ B + R: A is f16 M x K, B is f16 K x N, R and C are f16 M x N. Element (i, j) of A is at a_ptr + i * "
    "stride_am + j * stride_ak, of B at b_ptr + i * stride_bk + j * stride_bn; R and C share one layout: element "
    "(i, j) at i * stride_cm + j * stride_cn. Multiply the f16 values exactly and accumulate in f32 (dot of f16 "
    "tiles into an f32 accumulator), add R converted to f32, and round the sum to f16 once (round to nearest "
    "even) when storing. M, N, K >= 1 need not be multiples of the blocks: loop over K in steps of BLOCK_K with "
    "masked loads. Launched on a 2-D grid of BLOCK_M x BLOCK_N tiles of C: grid (cdiv(M, BLOCK_M), cdiv(N, "
    "BLOCK_N)); program (pid_m, pid_n) computes rows pid_m * BLOCK_M ... and columns pid_n * BLOCK_N ... of C.")
signature = ["a_ptr: *f16", "b_ptr: *f16", "r_ptr: *f16", "c_ptr: *f16 out", "M: i32", "N: i32", "K: i32",
             "stride_am: i32", "stride_ak: i32", "stride_bk: i32", "stride_bn: i32", "stride_cm: i32", "stride_cn: i32",
             "BLOCK_M: constexpr", "BLOCK_N: constexpr", "BLOCK_K: constexpr"]
# One element; exactly one tile; tails everywhere; K smaller than BLOCK_K; a long K.
sizes = [{"m": 1, "n": 1, "k": 1}, {"m": 32, "n": 32, "k": 32}, {"m": 45, "n": 70, "k": 50},
         {"m": 64, "n": 20, "k": 9}, {"m": 10, "n": 40, "k": 200}]
# tolerance: the default for f16 outputs (2e-3: the final rounding to f16 is 2^-11 relative; the f32 sum is far
# more precise)


def inputs(size, gen):
    m, n, k = size["m"], size["n"], size["k"]
    a = (torch.randn(m, k, generator=gen) / k ** 0.5).half()  # |A @ B| of order 1, like R
    b = torch.randn(k, n, generator=gen).half()
    r = torch.randn(m, n, generator=gen).half()
    return {"a_ptr": a, "b_ptr": b, "r_ptr": r, "c_ptr": torch.empty(m, n, dtype=torch.float16), "M": m, "N": n,
            "K": k, "stride_am": k, "stride_ak": 1, "stride_bk": n, "stride_bn": 1, "stride_cm": n, "stride_cn": 1}


def reference(args):
    return {"c_ptr": args["a_ptr"].double() @ args["b_ptr"].double() + args["r_ptr"].double()}


def grid(size, meta):
    return (-(-size["m"] // meta["BLOCK_M"]), -(-size["n"] // meta["BLOCK_N"]))
