"""BUGGY: vector add without a tail mask.

The bug (line 21, marked `# BUG:`): the loads and the store have no `mask=offs < n`, so the last
program reads and writes past the end whenever n is not a multiple of BLOCK (here 1000 = 3*256 + 232:
the last program's lanes 232..255 are outside x, y and out). The sanitizer reports each access.

Run: tilescope sanitize -- python examples/buggy_vector_add_no_mask.py
"""
import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    # (correct: mask = offs < n, passed to both loads and the store)
    x = tl.load(x_ptr + offs)  # BUG: no mask on the tail  expect: out-of-bounds-load
    y = tl.load(y_ptr + offs)  # expect: out-of-bounds-load
    tl.store(out_ptr + offs, x + y)  # expect: out-of-bounds-store


def main():
    torch.manual_seed(0)
    n = 1000
    x = torch.randn(n, device=DEVICE)
    y = torch.randn(n, device=DEVICE)
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    print("buggy_vector_add_no_mask: ran; outputs", "match" if torch.equal(out, x + y) else "DO NOT match", "torch")


if __name__ == "__main__":
    main()
