"""SwiGLU forward in fp16 with fp32 math: out = silu(a) * b, a 2-D grid over rows and column blocks.

Run: python examples/swiglu.py   (or: tilescope sanitize -- python examples/swiglu.py)
"""
import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def swiglu_kernel(a_ptr, b_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    a = tl.load(a_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    out = a * tl.sigmoid(a) * b
    tl.store(out_ptr + row * stride + cols, out.to(tl.float16), mask=mask)


def main():
    torch.manual_seed(0)
    rows, cols = 12, 300
    a = torch.randn(rows, cols, device=DEVICE, dtype=torch.float16)
    b = torch.randn(rows, cols, device=DEVICE, dtype=torch.float16)
    out = torch.empty_like(a)
    swiglu_kernel[(rows, triton.cdiv(cols, 128))](a, b, out, a.stride(0), cols, BLOCK=128)
    ref = (torch.nn.functional.silu(a.float()) * b.float()).half()
    torch.testing.assert_close(out, ref, rtol=1e-3, atol=1e-3)
    print("swiglu: OK")


if __name__ == "__main__":
    main()
