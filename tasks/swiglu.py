"""SwiGLU's gating: y = silu(a) * b, elementwise over two matrices, with silu(a) = a / (1 + exp(-a))."""
import torch

description = (
    "SwiGLU gating: a and b are f32 matrices of M rows of N values with the same layout (row r starts at element "
    "r * stride, stride >= N); y[r, j] = silu(a[r, j]) * b[r, j] with silu(v) = v / (1 + exp(-v)), into the "
    "contiguous f32 matrix y of M rows of N values (row r at r * N). Launched with a 2-D grid of M x ceil(N / "
    "BLOCK) programs (BLOCK: the kernel's block size); program (r, q) handles columns q * BLOCK to q * BLOCK + "
    "BLOCK - 1 of row r, the last one only those below N.")
signature = ["a_ptr: *f32", "b_ptr: *f32", "y_ptr: *f32 out", "N: i32", "stride: i32", "BLOCK: constexpr"]
sizes = [{"m": 1, "n": 1}, {"m": 4, "n": 1000, "pad": 24}, {"m": 3, "n": 2048}, {"m": 5, "n": 300, "pad": 1}]


def inputs(size, gen):
    m, n = size["m"], size["n"]
    stride = n + size.get("pad", 0)
    return {"a_ptr": torch.randn(m, stride, generator=gen) * 3, "b_ptr": torch.randn(m, stride, generator=gen),
            "y_ptr": torch.empty(m, n), "N": n, "stride": stride}


def reference(args):
    n = args["N"]
    a, b = args["a_ptr"].double()[:, :n], args["b_ptr"].double()[:, :n]
    return {"y_ptr": torch.nn.functional.silu(a) * b}


def grid(size, meta):
    return (size["m"], (size["n"] + meta["BLOCK"] - 1) // meta["BLOCK"])
