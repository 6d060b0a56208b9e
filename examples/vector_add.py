"""Vector add: out = x + y, one program per BLOCK elements, the tail masked.

Run: python examples/vector_add.py   (or: tilescope sanitize -- python examples/vector_add.py)
"""
import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)
    add_kernel[grid](x, y, out, n, BLOCK=256)
    return out


def main():
    torch.manual_seed(0)
    x = torch.randn(1000, device=DEVICE)
    y = torch.randn(1000, device=DEVICE)
    torch.testing.assert_close(add(x, y), x + y, rtol=0, atol=0)
    print("vector_add: OK")


if __name__ == "__main__":
    main()
