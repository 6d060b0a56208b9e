"""BUGGY: histogram that does not clamp the bin index.

The bug (line 22, marked `# BUG:`): values outside [lo, hi) give bin indices below 0 or at/after
N_BINS, and the atomic add then updates memory outside hist. The fix is to clamp the index to
[0, N_BINS - 1] (or mask those lanes off).

Run: tilescope sanitize -- python examples/buggy_histogram_no_clamp.py
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
    b = tl.floor((x - lo) / (hi - lo) * N_BINS).to(tl.int32)  # BUG: not clamped to [0, N_BINS)
    tl.atomic_add(hist_ptr + b, 1, mask=mask)  # expect: out-of-bounds-atomic


def main():
    torch.manual_seed(0)
    n, n_bins = 5000, 20
    x = torch.randn(n, device=DEVICE) * 1.5  # about 5% of the values fall outside [-3, 3)
    hist = torch.zeros(n_bins, dtype=torch.int32, device=DEVICE)
    histogram_kernel[(triton.cdiv(n, 512),)](x, hist, n, -3.0, 3.0, N_BINS=n_bins, BLOCK=512)
    print(f"buggy_histogram_no_clamp: ran; {int(hist.sum())} of {n} values counted")


if __name__ == "__main__":
    main()
