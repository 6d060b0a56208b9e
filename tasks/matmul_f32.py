"""f32 matrix product C = A @ B with exact fp32 products (tl.dot with input_precision="ieee", not tf32)."""
import torch

description = (
    "Matrix product C = A @ B in f32: A is M x K, B is K x N, C is M x N, all f32, element (i, j) of A at "
    "a_ptr + i * stride_am + j * stride_ak (likewise B with stride_bk, stride_bn and C with stride_cm, "
    "stride_cn). Use exact fp32 multiplication (dot with input precision ieee, not tf32) and accumulate in f32. "
    "M, N, K >= 1 and need not be multiples of the blocks: loop over K in steps of BLOCK_K with masked loads. "
    "Launched on a 2-D grid of BLOCK_M x BLOCK_N tiles of C: grid (cdiv(M, BLOCK_M), cdiv(N, BLOCK_N)); program "
    "(pid_m, pid_n) computes rows pid_m * BLOCK_M ... and columns pid_n * BLOCK_N ... of C.")
signature = ["a_ptr: *f32", "b_ptr: *f32", "c_ptr: *f32 out", "M: i32", "N: i32", "K: i32", "stride_am: i32",
             "stride_ak: i32", "stride_bk: i32", "stride_bn: i32", "stride_cm: i32", "stride_cn: i32",
             "BLOCK_M: constexpr", "BLOCK_N: constexpr", "BLOCK_K: constexpr"]
# One element; exactly one tile; tails in M, N and K; K smaller than BLOCK_K; B stored transposed (column-major).
sizes = [{"m": 1, "n": 1, "k": 1}, {"m": 32, "n": 32, "k": 32}, {"m": 50, "n": 70, "k": 45},
         {"m": 17, "n": 33, "k": 300, "b_col_major": True}, {"m": 64, "n": 16, "k": 7}]
# f32 sums of K products (K up to 300, |C| up to ~50) in another order than float64's: a few ulp of the partial
# sums, which exceed the default atol where C is near 0.
tolerance = (1e-5, 1e-4)


def inputs(size, gen):
    m, n, k = size["m"], size["n"], size["k"]
    a = torch.randn(m, k, generator=gen)
    if size.get("b_col_major"):  # the buffer holds B^T row-major: B[i, j] at i + j * K
        b = torch.randn(n, k, generator=gen)
        sbk, sbn = 1, k
    else:
        b = torch.randn(k, n, generator=gen)
        sbk, sbn = n, 1
    return {"a_ptr": a, "b_ptr": b, "c_ptr": torch.empty(m, n), "M": m, "N": n, "K": k, "stride_am": k,
            "stride_ak": 1, "stride_bk": sbk, "stride_bn": sbn, "stride_cm": n, "stride_cn": 1}


def reference(args):
    b = args["b_ptr"].double()
    if args["stride_bk"] == 1:
        b = b.T
    return {"c_ptr": args["a_ptr"].double() @ b}


def grid(size, meta):
    return (-(-size["m"] // meta["BLOCK_M"]), -(-size["n"] // meta["BLOCK_N"]))
