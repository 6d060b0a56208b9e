"""BUGGY: tiled matmul C = A @ B whose K loop drops the last, partial K tile.

The bug (line 27, marked `# BUG:`): the loop runs `K // BLOCK_K` whole tiles, so with K = 100 and
BLOCK_K = 32 only k < 96 is summed and the last 4 columns of A (rows of B) never reach C. Every load
is in bounds, so the sanitizer finds nothing: the values are wrong (C == A[:, :96] @ B[:96, :]). The
fix: `for k in range(0, tl.cdiv(K, BLOCK_K))` with the loads masked by `k * BLOCK_K + rk < K`.

Run: tilescope sanitize -- python examples/buggy_matmul_missing_k_tail.py
Its trace, for the assistant: tilescope trace -o k_tail.tstrace -- python examples/buggy_matmul_missing_k_tail.py
"""
import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K // BLOCK_K):  # BUG: drops the remainder; should be tl.cdiv(K, BLOCK_K), K masked
        a = tl.load(a_ptrs, mask=rm[:, None] < M, other=0.0)
        b = tl.load(b_ptrs, mask=rn[None, :] < N, other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def main():
    """Run the kernel once; returns (a, b, c) for tests/python/test_examples.py."""
    torch.manual_seed(0)
    M, N, K = 48, 40, 100
    a = torch.randn(M, K, device=DEVICE)
    b = torch.randn(K, N, device=DEVICE)
    c = torch.empty(M, N, device=DEVICE)
    grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                        BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
    ok = torch.allclose(c, a @ b, rtol=1e-3, atol=1e-3)
    print("buggy_matmul_missing_k_tail: ran; outputs", "match" if ok else "DO NOT match", "torch")
    return a, b, c


if __name__ == "__main__":
    main()
