"""Histogram with atomics: each program bins BLOCK values and atomically adds 1 to each bin.

Run: python examples/histogram.py   (or: tilescope sanitize -- python examples/histogram.py)
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
    b = tl.minimum(tl.maximum(b, 0), N_BINS - 1)  # clamp: values at or past the edges go to the end bins
    tl.atomic_add(hist_ptr + b, 1, mask=mask)


def main():
    torch.manual_seed(0)
    n, n_bins = 5000, 20
    x = torch.randn(n, device=DEVICE) * 1.5
    hist = torch.zeros(n_bins, dtype=torch.int32, device=DEVICE)
    histogram_kernel[(triton.cdiv(n, 512),)](x, hist, n, -3.0, 3.0, N_BINS=n_bins, BLOCK=512)
    ref_bins = ((x - -3.0) / 6.0 * n_bins).to(torch.int32).clamp(0, n_bins - 1)
    ref = torch.bincount(ref_bins, minlength=n_bins).to(torch.int32)
    torch.testing.assert_close(hist, ref)
    assert int(hist.sum()) == n
    print("histogram: OK")


if __name__ == "__main__":
    main()
