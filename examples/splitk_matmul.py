"""Split-K matmul: grid axis 2 splits K into SPLIT_K slices; each program accumulates its slice and
atomically adds its partial tile into C (which starts at zero).

Run: python examples/splitk_matmul.py   (or: tilescope sanitize -- python examples/splitk_matmul.py)
"""
import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def splitk_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_k = tl.program_id(2)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(pid_k * BLOCK_K, K, BLOCK_K * SPLIT_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.atomic_add(c_ptrs, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def main():
    torch.manual_seed(0)
    M, N, K, SPLIT_K = 40, 36, 300, 4
    a = torch.randn(M, K, device=DEVICE)
    b = torch.randn(K, N, device=DEVICE)
    c = torch.zeros(M, N, device=DEVICE)
    grid = (triton.cdiv(M, 32), triton.cdiv(N, 32), SPLIT_K)
    splitk_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                        c.stride(1), BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, SPLIT_K=SPLIT_K)
    # tl.dot on fp32 inputs may use TF32 on a GPU: compare with a tolerance that admits it
    torch.testing.assert_close(c, a @ b, rtol=2e-2, atol=5e-2)
    print("splitk_matmul: OK")


if __name__ == "__main__":
    main()
