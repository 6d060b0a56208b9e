"""BUGGY: a spin lock released with sem="relaxed".

The bug (line 31, marked `# BUG:`): the lock is taken with atomic_cas (acquire) but released with a
relaxed exchange, which does not order the critical section's stores before the release. The next holder
may read the running sums before the previous holder's stores are visible. tilescope reports a data-race
on the critical section's store (the next holder's load and store race with it). The fix is
`tl.atomic_xchg(lock_ptr, 0, sem="release")` (or the default, acq_rel).

Run: tilescope sanitize -- python examples/buggy_lock_relaxed_release.py
"""
import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def locked_col_sum_kernel(x_ptr, sum_ptr, lock_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    acc = tl.load(sum_ptr + cols, mask=mask, other=0.0)
    tl.store(sum_ptr + cols, acc + x, mask=mask)  # expect: data-race
    tl.atomic_xchg(
        lock_ptr,
        0,
        sem="relaxed",  # BUG: a relaxed release does not publish the store above
    )


def main():
    torch.manual_seed(0)
    rows, cols = 16, 100
    x = torch.randn(rows, cols, device=DEVICE)
    sums = torch.zeros(cols, device=DEVICE)
    lock = torch.zeros(1, dtype=torch.int32, device=DEVICE)
    locked_col_sum_kernel[(rows,)](x, sums, lock, cols, BLOCK=128)
    print(f"buggy_lock_relaxed_release: ran; max error {float((sums - x.sum(0)).abs().max()):.2e}")


if __name__ == "__main__":
    main()
