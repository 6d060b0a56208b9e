"""Batched matrix product C[b] = alpha * (A[b] @ B[b]) with f16 inputs and f32 accumulation (torch.bmm)."""
import torch

description = (
    "Batched matrix product: C[b] = alpha * (A[b] @ B[b]) for every batch b. A is f16 [batch, M, K], B is f16 "
    "[batch, K, N], C is f32 [batch, M, N]; element A[b, i, k] is at a_ptr + b * stride_ab + i * stride_am + k * "
    "stride_ak (likewise B with stride_bb, stride_bk, stride_bn and C with stride_cb, stride_cm, stride_cn: B "
    "may be stored transposed, so use the strides). Multiply the f16 values exactly and accumulate in f32 (dot "
    "of f16 tiles into an f32 accumulator), then scale by the f32 scalar alpha. M, N, K >= 1 need not be "
    "multiples of the blocks: loop over K in steps of BLOCK_K with masked loads. Launched with grid "
    "(cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N), batch): program_id(1) is the batch; program_id(0) numbers the "
    "BLOCK_M x BLOCK_N tiles of C[b] row by row: tile t covers rows (t // cdiv(N, BLOCK_N)) * BLOCK_M ... and "
    "columns (t % cdiv(N, BLOCK_N)) * BLOCK_N ....")
signature = ["a_ptr: *f16", "b_ptr: *f16", "c_ptr: *f32 out", "M: i32", "N: i32", "K: i32", "stride_ab: i32",
             "stride_am: i32", "stride_ak: i32", "stride_bb: i32", "stride_bk: i32", "stride_bn: i32",
             "stride_cb: i32", "stride_cm: i32", "stride_cn: i32", "alpha: f32", "BLOCK_M: constexpr",
             "BLOCK_N: constexpr", "BLOCK_K: constexpr"]
# One element in one batch; tails in M, N, K over 3 batches; K smaller than BLOCK_K; B stored transposed.
sizes = [{"batch": 1, "m": 1, "n": 1, "k": 1}, {"batch": 3, "m": 50, "n": 40, "k": 70},
         {"batch": 2, "m": 64, "n": 33, "k": 5}, {"batch": 4, "m": 17, "n": 64, "k": 96, "b_transposed": True}]
# f16 products are exact in f32; the f32 sums of up to 96 of them (|C| up to ~20) round in another order than
# float64's: relative 1e-4 as for other f16 dots with an f32 accumulator.
tolerance = (1e-4, 1e-4)


def inputs(size, gen):
    bt, m, n, k = size["batch"], size["m"], size["n"], size["k"]
    a = torch.randn(bt, m, k, generator=gen).half()
    if size.get("b_transposed"):  # the buffer holds B[b]^T row-major: B[b, i, j] at b * K * N + i + j * K
        b = torch.randn(bt, n, k, generator=gen).half()
        sbk, sbn = 1, k
    else:
        b = torch.randn(bt, k, n, generator=gen).half()
        sbk, sbn = n, 1
    return {"a_ptr": a, "b_ptr": b, "c_ptr": torch.empty(bt, m, n), "M": m, "N": n, "K": k,
            "stride_ab": m * k, "stride_am": k, "stride_ak": 1, "stride_bb": k * n, "stride_bk": sbk,
            "stride_bn": sbn, "stride_cb": m * n, "stride_cm": n, "stride_cn": 1, "alpha": 0.75}


def reference(args):
    b = args["b_ptr"].double()
    if args["stride_bk"] == 1:
        b = b.transpose(1, 2)
    return {"c_ptr": args["alpha"] * torch.bmm(args["a_ptr"].double(), b)}


def grid(size, meta):
    tiles = -(-size["m"] // meta["BLOCK_M"]) * -(-size["n"] // meta["BLOCK_N"])
    return (tiles, size["batch"])
