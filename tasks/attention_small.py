"""Single-head attention for short sequences: O = softmax(Q K^T * scale [+ causal mask]) V, f16 Q, K, V, f32 O;
one program per block of queries holds every key (seq_len <= 64), so the softmax needs no online rescaling."""
import torch

description = (
    "Single-head attention O = softmax(Q K^T * scale) V for one sequence. Q, K, V are f16 [seq_len, head_dim], "
    "row i of Q at q_ptr + i * stride_q (likewise K with stride_k, V with stride_v); O is f32 [seq_len, "
    "head_dim], row i at o_ptr + i * stride_o. Limits: 1 <= seq_len <= 64 and 1 <= head_dim <= 64 (a program "
    "can hold all of K and V). Scores s[i, j] = scale * sum_d Q[i, d] * K[j, d] (f16 products accumulated in "
    "f32); the softmax over j is in f32. When the i32 scalar causal is nonzero, query i attends only to keys j "
    "<= i (the others get probability 0); when it is 0, to every key. For the product with V the probabilities "
    "may be rounded to f16 (accumulated in f32), as flash attention does. Launched with one program per "
    "BLOCK_M consecutive queries: grid (cdiv(seq_len, BLOCK_M),).")
signature = ["q_ptr: *f16", "k_ptr: *f16", "v_ptr: *f16", "o_ptr: *f32 out", "seq_len: i32", "head_dim: i32",
             "stride_q: i32", "stride_k: i32", "stride_v: i32", "stride_o: i32", "scale: f32", "causal: i32",
             "BLOCK_M: constexpr", "BLOCK_N: constexpr", "BLOCK_D: constexpr"]
# One query and key of one dim; the largest case; tails in both dims, causal; padded rows; a nonzero flag other
# than 1.
sizes = [{"s": 1, "d": 1, "causal": 0}, {"s": 64, "d": 64, "causal": 0}, {"s": 37, "d": 24, "causal": 1},
         {"s": 50, "d": 64, "causal": 0, "pad": 8}, {"s": 16, "d": 16, "causal": 5}, {"s": 64, "d": 32, "causal": 1}]
# O is f32, but the probabilities may be rounded to f16 (2^-11 relative) before the product with V: the f16
# output tolerance.
tolerance = (2e-3, 2e-3)


def inputs(size, gen):
    s, d, pad = size["s"], size["d"], size.get("pad", 0)
    q, k, v = (torch.randn(s, d + pad, generator=gen).half() for _ in range(3))
    return {"q_ptr": q, "k_ptr": k, "v_ptr": v, "o_ptr": torch.empty(s, d + pad), "seq_len": s, "head_dim": d,
            "stride_q": d + pad, "stride_k": d + pad, "stride_v": d + pad, "stride_o": d + pad,
            "scale": 1 / d ** 0.5, "causal": size["causal"]}


def reference(args):
    s, d = args["seq_len"], args["head_dim"]
    q, k, v = (args[p][:, :d].double() for p in ("q_ptr", "k_ptr", "v_ptr"))
    scores = q @ k.T * args["scale"]
    if args["causal"]:
        scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool).triu(1), float("-inf"))
    o = torch.zeros(args["o_ptr"].shape, dtype=torch.float64)
    o[:, :d] = torch.softmax(scores, dim=1) @ v
    written = torch.zeros(o.shape, dtype=torch.bool)
    written[:, :d] = True
    return {"o_ptr": (o, written)}


def grid(size, meta):
    return (-(-size["s"] // meta["BLOCK_M"]),)
