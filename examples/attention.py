"""Attention forward with an online softmax over K/V blocks (the FlashAttention loop).

One program per (query block, batch*head). For each K/V block it rescales the running sum and output
by exp(m_old - m_new), so the full score matrix is never materialised. Causal masking optional.

Run: python examples/attention.py   (or: tilescope sanitize -- python examples/attention.py)
"""
import math

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def attn_fwd(q_ptr, k_ptr, v_ptr, o_ptr, stride_h, stride_s, seq_len, scale, CAUSAL: tl.constexpr,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rd = tl.arange(0, HEAD_DIM)
    base = bh * stride_h
    q = tl.load(q_ptr + base + rm[:, None] * stride_s + rd[None, :], mask=rm[:, None] < seq_len, other=0.0)
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    end = tl.minimum((pid_m + 1) * BLOCK_M, seq_len) if CAUSAL else seq_len
    for start in range(0, end, BLOCK_N):
        rn = start + tl.arange(0, BLOCK_N)
        kv_mask = rn[:, None] < seq_len
        k = tl.load(k_ptr + base + rn[:, None] * stride_s + rd[None, :], mask=kv_mask, other=0.0)
        v = tl.load(v_ptr + base + rn[:, None] * stride_s + rd[None, :], mask=kv_mask, other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale
        valid = rn[None, :] < seq_len
        if CAUSAL:
            valid = valid & (rn[None, :] <= rm[:, None])
        s = tl.where(valid, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p, v)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + base + rm[:, None] * stride_s + rd[None, :], out, mask=rm[:, None] < seq_len)


def attention(q, k, v, causal):
    B, H, S, D = q.shape
    o = torch.empty_like(q)
    grid = (triton.cdiv(S, 16), B * H)
    attn_fwd[grid](q, k, v, o, q.stride(1), q.stride(2), S, 1.0 / math.sqrt(D), CAUSAL=causal,
                   BLOCK_M=16, BLOCK_N=16, HEAD_DIM=D)
    return o


def main():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 40, 32, device=DEVICE) for _ in range(3))
    for causal in (False, True):
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        torch.testing.assert_close(attention(q, k, v, causal), ref, rtol=2e-3, atol=2e-3)
    print("attention: OK")


if __name__ == "__main__":
    main()
