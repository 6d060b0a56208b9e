"""BUGGY: scale a vector, y[i] = 2 * x[i], with its load offsets shifted by one.

The bug (line 22, marked `# BUG:`): the load adds 1 to the offsets that the mask checked, so every
y[i] gets 2 * x[i + 1] (wrong values everywhere) and the last lane of the last block reads x[n], one
element past the end of x. The fix: load `x_ptr + offs` (or shift the mask with the offsets).

Run: tilescope sanitize -- python examples/buggy_index_shift.py
Its trace, for the assistant: tilescope trace -o index_shift.tstrace -- python examples/buggy_index_shift.py
"""
import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs + 1, mask=mask)  # BUG: should be x_ptr + offs  expect: out-of-bounds-load
    tl.store(y_ptr + offs, 2 * x, mask=mask)


def main():
    """Run the kernel once; returns (x, y) for tests/python/test_examples.py."""
    torch.manual_seed(0)
    n = 1000
    x = torch.randn(n, device=DEVICE)
    y = torch.empty_like(x)
    scale_kernel[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256)
    ok = torch.allclose(y, 2 * x)
    print("buggy_index_shift: ran; outputs", "match" if ok else "DO NOT match", "torch")
    return x, y


if __name__ == "__main__":
    main()
