"""tl.dot_scaled with NVIDIA's nvfp4 (Triton's tutorial 10 default): e2m1 values with one e4m3 scale per 16
elements along K (`a_scale` [M, K/16] of torch.float8_e4m3fn), on `--target sm_100` (Triton compiles
block-scaled dots for it). The expected product is computed here in float64 from the definition (e2m1 table,
the even element in the low nibble, times the group's e4m3 scale), independently of tilescope. Before nvfp4
support the launch failed with "a_scale must be [M, K/32] bytes".
"""
from __future__ import annotations

import subprocess
import sys

SCRIPT = r'''
import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def nvfp4_dot(a_ptr, as_ptr, b_ptr, bs_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    offs_m = tl.arange(0, M)
    offs_n = tl.arange(0, N)
    offs_k2 = tl.arange(0, K // 2)
    offs_s = tl.arange(0, K // 16)
    a = tl.load(a_ptr + offs_m[:, None] * (K // 2) + offs_k2[None, :])
    b = tl.load(b_ptr + offs_k2[:, None] * N + offs_n[None, :])
    sa = tl.load(as_ptr + offs_m[:, None] * (K // 16) + offs_s[None, :])
    sb = tl.load(bs_ptr + offs_n[:, None] * (K // 16) + offs_s[None, :])
    c = tl.dot_scaled(a, sa, "e2m1", b, sb, "e2m1")
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], c)


M, N, K = 32, 32, 64
g = torch.Generator().manual_seed(0)
a = torch.randint(0, 256, (M, K // 2), generator=g, dtype=torch.int32).to(torch.uint8)
b = torch.randint(0, 256, (K // 2, N), generator=g, dtype=torch.int32).to(torch.uint8)
choices = torch.tensor([0.25, 0.375, 0.5, 1.0, 1.5, 2.0, 3.0])
sa = choices[torch.randint(0, 7, (M, K // 16), generator=g)].to(torch.float8_e4m3fn)
sb = choices[torch.randint(0, 7, (N, K // 16), generator=g)].to(torch.float8_e4m3fn)
c = torch.zeros(M, N)
nvfp4_dot[(1,)](a, sa, b, sb, c, M=M, N=N, K=K)

# Reference: e2m1 nibbles (sign, 2 exponent bits, 1 mantissa bit), the even k in the low nibble, times the
# e4m3 scale of its group of 16 along K; float64 products and sums.
fp4 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6], dtype=np.float64)
def unpack(x):  # [R, C] bytes -> [R, 2C] values along the packed dimension (pairs along axis 1)
    x = x.numpy().astype(np.int64)
    lo, hi = x & 15, x >> 4
    nib = np.stack([lo, hi], axis=-1).reshape(x.shape[0], -1)
    return np.where(nib & 8, -1.0, 1.0) * fp4[nib & 7]
A = unpack(a) * np.repeat(sa.float().numpy().astype(np.float64), 16, axis=1)
B = unpack(b.T.contiguous()).T * np.repeat(sb.float().numpy().astype(np.float64), 16, axis=1).T
ref = A @ B
err = np.abs(c.numpy() - ref).max()
print("max abs error", err, "max", np.abs(ref).max())
assert err <= 1e-3 * max(1.0, np.abs(ref).max()), err
print("OK")
'''


def test_nvfp4_dot_scaled_on_sm100(tmp_path):
    path = tmp_path / "nvfp4.py"
    path.write_text(SCRIPT)
    p = subprocess.run([sys.executable, "-m", "tilescope", "sanitize", "--color", "never", "--target", "sm_100", "--",
                        sys.executable, str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert "max abs error 0.0 " in out and "OK" in out, out
    assert "tilescope: no findings (1 launch(es)" in out, out
