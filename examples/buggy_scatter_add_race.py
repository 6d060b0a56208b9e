"""BUGGY: scatter-add with duplicate indices done as load, add, store.

The bug (line 25, marked `# BUG:`): two programs (and two lanes of one program) that get the same index
both load the old value, add their own, and store; one update is lost, and which one is up to the GPU's
timing. tilescope reports a data-race between programs and an intra-program-race between lanes of the
store. The fix is `tl.atomic_add(out_ptr + idx, v, mask=mask)`.

Run: tilescope sanitize -- python examples/buggy_scatter_add_race.py
"""
import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def scatter_add_kernel(idx_ptr, src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    idx = tl.load(idx_ptr + offs, mask=mask, other=0)
    v = tl.load(src_ptr + offs, mask=mask, other=0.0)
    cur = tl.load(out_ptr + idx, mask=mask, other=0.0)
    tl.store(out_ptr + idx, cur + v, mask=mask)  # BUG: not atomic  # expect: data-race, intra-program-race


def main():
    torch.manual_seed(0)
    n, bins = 1000, 64
    idx = torch.randint(0, bins, (n,), dtype=torch.int32, device=DEVICE)
    src = torch.rand(n, device=DEVICE) + 0.5
    out = torch.zeros(bins, device=DEVICE)
    scatter_add_kernel[(triton.cdiv(n, 128),)](idx, src, out, n, BLOCK=128)
    print(f"buggy_scatter_add_race: ran; sum {float(out.sum()):.1f} of {float(src.sum()):.1f}")


if __name__ == "__main__":
    main()
