"""Sum of a vector in one launch: every program stores its partial sum, then counts itself done with
tl.atomic_add (acq_rel, Triton's default); the program that sees the count reach the last value adds the
partials. The counter's release / acquire orders every partial store before the final loads: no data race.
Programs of a CTA-free design like this are what a race detector must not flag.

Run: python examples/last_block_sum.py   (or: tilescope sanitize -- python examples/last_block_sum.py)
"""
import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def last_block_sum_kernel(x_ptr, partial_ptr, count_ptr, out_ptr, n, NPROG: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(partial_ptr + pid, tl.sum(x, axis=0))
    done = tl.atomic_add(count_ptr, 1)
    if done == NPROG - 1:
        p = tl.load(partial_ptr + tl.arange(0, NPROG))
        tl.store(out_ptr, tl.sum(p, axis=0))


def main():
    torch.manual_seed(0)
    n, block = 4000, 512
    nprog = triton.cdiv(n, block)
    x = torch.randn(n, device=DEVICE)
    partial = torch.zeros(nprog, device=DEVICE)
    count = torch.zeros(1, dtype=torch.int32, device=DEVICE)
    out = torch.zeros(1, device=DEVICE)
    last_block_sum_kernel[(nprog,)](x, partial, count, out, n, NPROG=nprog, BLOCK=block)
    torch.testing.assert_close(out[0], x.sum(), rtol=1e-4, atol=1e-4)
    print("last_block_sum: OK")


if __name__ == "__main__":
    main()
