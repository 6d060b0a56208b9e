"""BUGGY: a histogram accumulated with atomics into memory nobody zeroed.

The bug (line 33, marked `# BUG:`): the bins come from `torch.empty`, whose contents are unspecified,
and the kernel only adds to them with `tl.atomic_add`, so every count starts from whatever the memory
held. On an NVIDIA H200 the counts came out wrong, and compute-sanitizer's initcheck reported 0 errors.
tilescope tracks `torch.empty` memory and reports the atomic that reads never-written bins, naming
the allocation's line. Fix: `torch.zeros`.

Run: tilescope sanitize -- python examples/buggy_histogram_empty.py
"""
import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def histogram_kernel(x_ptr, hist_ptr, n, lo, hi, N_BINS: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=lo)
    b = ((x - lo) / (hi - lo) * N_BINS).to(tl.int32)
    b = tl.minimum(tl.maximum(b, 0), N_BINS - 1)
    tl.atomic_add(hist_ptr + b, 1, mask=mask)  # expect: uninitialized-read


def main():
    torch.manual_seed(0)
    n, n_bins = 5000, 20
    x = torch.randn(n, device=DEVICE) * 1.5
    hist = torch.empty(n_bins, dtype=torch.int32, device=DEVICE)  # BUG: never zeroed (torch.zeros)
    histogram_kernel[(triton.cdiv(n, 512),)](x, hist, n, -3.0, 3.0, N_BINS=n_bins, BLOCK=512)
    ref_bins = ((x - -3.0) / 6.0 * n_bins).to(torch.int32).clamp(0, n_bins - 1)
    ref = torch.bincount(ref_bins, minlength=n_bins).to(torch.int32)
    print("buggy_histogram_empty: ran; counts", "match" if torch.equal(hist, ref) else "DO NOT match", "torch")


if __name__ == "__main__":
    main()
