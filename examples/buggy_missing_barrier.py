"""BUGGY: lanes of one program read back what other lanes stored, with no barrier.

The bug (line 27, marked `# BUG:`): each program stores its block to a scratch buffer and then loads the
block shifted by one element. On a GPU the element a lane loads was stored by another thread, and
without `tl.debug_barrier()` between the store and the load it may not be there yet. tilescope reports an
intra-program-race at the store. The fix is `tl.debug_barrier()` before the second load.

Run: tilescope sanitize -- python examples/buggy_missing_barrier.py
"""
import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def neighbour_diff_kernel(x_ptr, scratch_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + pid * BLOCK + offs)
    base = scratch_ptr + pid * BLOCK
    tl.store(base + offs, x * x)  # expect: intra-program-race
    nxt = (offs + 1) % BLOCK
    # The fix: tl.debug_barrier() here.
    y = tl.load(
        base + nxt,  # BUG: reads what lane offs + 1 stored, with no barrier in between
    )
    tl.store(out_ptr + pid * BLOCK + offs, y - x * x)


def main():
    torch.manual_seed(0)
    n, block = 1024, 128
    x = torch.randn(n, device=DEVICE)
    scratch = torch.empty(n, device=DEVICE)
    out = torch.empty(n, device=DEVICE)
    neighbour_diff_kernel[(n // block,)](x, scratch, out, BLOCK=block)
    print(f"buggy_missing_barrier: ran; {float(out.abs().sum()):.1f}")


if __name__ == "__main__":
    main()
