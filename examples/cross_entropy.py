"""Cross-entropy loss per row: loss = logsumexp(x) - x[target], looping over the vocabulary in blocks
with an online logsumexp, so rows wider than one block work.

Run: python examples/cross_entropy.py   (or: tilescope sanitize -- python examples/cross_entropy.py)
"""
import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def cross_entropy_kernel(logits_ptr, target_ptr, loss_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    row_ptr = logits_ptr + row.to(tl.int64) * stride
    m = -float("inf")
    s = 0.0
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(row_ptr + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    target = tl.load(target_ptr + row)
    x_t = tl.load(row_ptr + target).to(tl.float32)
    tl.store(loss_ptr + row, m + tl.log(s) - x_t)


def main():
    torch.manual_seed(0)
    n_rows, n_cols = 24, 1000
    logits = torch.randn(n_rows, n_cols, device=DEVICE) * 4
    target = torch.randint(0, n_cols, (n_rows,), device=DEVICE)
    loss = torch.empty(n_rows, device=DEVICE)
    cross_entropy_kernel[(n_rows,)](logits, target, loss, logits.stride(0), n_cols, BLOCK=256)
    ref = torch.nn.functional.cross_entropy(logits, target, reduction="none")
    torch.testing.assert_close(loss, ref, rtol=1e-5, atol=1e-5)
    print("cross_entropy: OK")


if __name__ == "__main__":
    main()
