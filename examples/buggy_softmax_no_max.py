"""BUGGY: row softmax without subtracting the row's maximum first.

The bug (line 24, marked `# BUG:`): `tl.exp(x)` overflows float32 to inf for x > 88.7, and inf / inf is
NaN: the rows holding large values come out NaN (the other rows are right). Nothing is out of bounds,
so the sanitizer finds nothing: the values are wrong. The fix: `x = x - tl.max(x, axis=0)` before the
exponential (softmax is unchanged by a shift; the largest exponent is then 0).

Run: tilescope sanitize -- python examples/buggy_softmax_no_max.py
Its trace, for the assistant: tilescope trace -o softmax_no_max.tstrace -- python examples/buggy_softmax_no_max.py
"""
import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def softmax_kernel(x_ptr, y_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    num = tl.exp(x)  # BUG: exp overflows for large x; subtract tl.max(x, axis=0) first
    y = num / tl.sum(num, axis=0)
    tl.store(y_ptr + row * stride + cols, y, mask=mask)


def main():
    """Run the kernel once; returns (x, y) for tests/python/test_examples.py."""
    torch.manual_seed(0)
    x = torch.randn(8, 100, device=DEVICE)
    x[::2] *= 60  # logits of a confident model: the even rows reach past 88.7
    y = torch.empty_like(x)
    softmax_kernel[(8,)](x, y, x.stride(0), 100, BLOCK=128)
    ok = torch.allclose(y, torch.softmax(x, dim=1), atol=1e-5)
    print("buggy_softmax_no_max: ran; outputs", "match" if ok else "DO NOT match", "torch")
    return x, y


if __name__ == "__main__":
    main()
