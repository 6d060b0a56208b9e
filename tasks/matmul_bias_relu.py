"""A tiled f16 matrix product with f32 accumulation and a fused epilogue: C = relu(A @ B + bias)."""
import torch

description = (
    "C = relu(A @ B + bias): A is an f16 matrix of M x K elements (element (i, k) at i * stride_am + k * "
    "stride_ak), B an f16 matrix of K x N (element (k, j) at k * stride_bk + j * stride_bn), bias a contiguous f32 "
    "vector of N values (added to every row), C an f32 matrix of M x N (element (i, j) at i * stride_cm + j * "
    "stride_cn); the products are accumulated in f32 and relu(v) = max(v, 0). Strides are in elements; M, N and "
    "K are any positive sizes. Launched with a 2-D grid of ceil(M / BLOCK_M) x ceil(N / BLOCK_N) programs "
    "(BLOCK_M, BLOCK_N: the kernel's tile); program (p, q) computes rows p * BLOCK_M .. p * BLOCK_M + BLOCK_M - 1 "
    "and columns q * BLOCK_N .. q * BLOCK_N + BLOCK_N - 1 of C (those inside it), looping over K.")
signature = ["a_ptr: *f16", "b_ptr: *f16", "bias_ptr: *f32", "c_ptr: *f32 out", "M: i32", "N: i32", "K: i32",
             "stride_am: i32", "stride_ak: i32", "stride_bk: i32", "stride_bn: i32", "stride_cm: i32",
             "stride_cn: i32", "BLOCK_M: constexpr", "BLOCK_N: constexpr", "BLOCK_K: constexpr"]
# "b_t": B is stored transposed (an N x K row-major array, so stride_bk = 1 and stride_bn = K).
sizes = [{"m": 32, "n": 32, "k": 32}, {"m": 50, "n": 70, "k": 45}, {"m": 17, "n": 33, "k": 100},
         {"m": 64, "n": 16, "k": 7}, {"m": 40, "n": 24, "k": 50, "b_t": True}]
tolerance = (1e-4, 1e-4)  # f16 x f16 products accumulated in f32 over K, against float64 of the same f16 inputs


def inputs(size, gen):
    m, n, k = size["m"], size["n"], size["k"]
    a = torch.randn(m, k, generator=gen).half()
    if size.get("b_t"):
        b, sbk, sbn = torch.randn(n, k, generator=gen).half(), 1, k
    else:
        b, sbk, sbn = torch.randn(k, n, generator=gen).half(), n, 1
    return {"a_ptr": a, "b_ptr": b, "bias_ptr": torch.randn(n, generator=gen), "c_ptr": torch.empty(m, n),
            "M": m, "N": n, "K": k, "stride_am": k, "stride_ak": 1, "stride_bk": sbk, "stride_bn": sbn,
            "stride_cm": n, "stride_cn": 1}


def reference(args):
    m, n, k = args["M"], args["N"], args["K"]
    a = args["a_ptr"].double().flatten().as_strided((m, k), (args["stride_am"], args["stride_ak"]))
    b = args["b_ptr"].double().flatten().as_strided((k, n), (args["stride_bk"], args["stride_bn"]))
    return {"c_ptr": torch.relu(a @ b + args["bias_ptr"].double())}


def grid(size, meta):
    return ((size["m"] + meta["BLOCK_M"] - 1) // meta["BLOCK_M"], (size["n"] + meta["BLOCK_N"] - 1) // meta["BLOCK_N"])
