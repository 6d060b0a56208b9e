"""Column sums of a matrix through a spin lock: every program adds its row into one shared row of sums
inside a critical section taken with tl.atomic_cas and released with tl.atomic_xchg (sem="release").

The release orders the critical section's stores before the next holder's acquire: no data race, though
every program reads and writes the same memory (a naive race detector reports one).

Run: python examples/spin_lock.py   (or: tilescope sanitize -- python examples/spin_lock.py)
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
    while tl.atomic_cas(lock_ptr, 0, 1, sem="acquire") == 1:
        pass
    acc = tl.load(sum_ptr + cols, mask=mask, other=0.0)
    tl.store(sum_ptr + cols, acc + x, mask=mask)
    tl.atomic_xchg(lock_ptr, 0, sem="release")


def main():
    torch.manual_seed(0)
    rows, cols = 16, 100
    x = torch.randn(rows, cols, device=DEVICE)
    sums = torch.zeros(cols, device=DEVICE)
    lock = torch.zeros(1, dtype=torch.int32, device=DEVICE)
    locked_col_sum_kernel[(rows,)](x, sums, lock, cols, BLOCK=128)
    torch.testing.assert_close(sums, x.sum(0), rtol=1e-5, atol=1e-5)
    print("spin_lock: OK")


if __name__ == "__main__":
    main()
