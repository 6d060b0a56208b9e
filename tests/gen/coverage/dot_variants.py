"""Op coverage: every form of dot: f32 inputs in ieee and tf32 precision, i8 into i32, f16 accumulating in f16.
Not a suite task: it exists so that every op kind of the AST format runs against torch."""
import torch

description = (
    "One program computes four products of contiguous matrices (M, N, K at most 32): ieee = a @ b in full f32, "
    "tf32 = a @ b with tf32 inputs, i8 = a8 @ b8 into i32, h = ah @ bh accumulated in f16; a, a8, ah are M x K, "
    "b, b8, bh are K x N, every output M x N.")
signature = ["a_ptr: *f32", "b_ptr: *f32", "a8_ptr: *i8", "b8_ptr: *i8", "ah_ptr: *f16", "bh_ptr: *f16",
             "ieee_ptr: *f32 out", "tf32_ptr: *f32 out", "i8_ptr: *i32 out", "h_ptr: *f16 out", "M: i32", "N: i32",
             "K: i32", "BLOCK: constexpr"]
sizes = [{"m": 32, "n": 32, "k": 32}, {"m": 20, "n": 17, "k": 30}, {"m": 5, "n": 32, "k": 3}]
# ieee and tf32: f32 reductions (the default, rtol 1e-5, atol 1e-5); tf32 against float64 of the inputs truncated
# to tf32 (below). An f16 accumulator rounds every partial sum to f16: rtol 1e-2, atol 2e-2.
tolerance = {"h_ptr": (1e-2, 2e-2)}


def inputs(size, gen):
    m, n, k = size["m"], size["n"], size["k"]
    return {"a_ptr": torch.randn(m, k, generator=gen), "b_ptr": torch.randn(k, n, generator=gen),
            "a8_ptr": torch.randint(-8, 9, (m, k), generator=gen, dtype=torch.int8),
            "b8_ptr": torch.randint(-8, 9, (k, n), generator=gen, dtype=torch.int8),
            "ah_ptr": (0.5 * torch.randn(m, k, generator=gen)).half(),
            "bh_ptr": (0.5 * torch.randn(k, n, generator=gen)).half(),
            "ieee_ptr": torch.empty(m, n), "tf32_ptr": torch.empty(m, n),
            "i8_ptr": torch.empty(m, n, dtype=torch.int32), "h_ptr": torch.empty(m, n, dtype=torch.float16),
            "M": m, "N": n, "K": k}


def tf32(v):
    """f32 values with their low 13 mantissa bits cleared: what a tensor core reads of an f32 operand in tf32 mode
    (truncation, as measured on an H200: ../shared/reference/ttir.md section 5.3)."""
    return (v.view(torch.int32) & -8192).view(torch.float32)


def reference(args):
    a, b = args["a_ptr"], args["b_ptr"]
    return {"ieee_ptr": a.double() @ b.double(), "tf32_ptr": tf32(a).double() @ tf32(b).double(),
            "i8_ptr": args["a8_ptr"].long() @ args["b8_ptr"].long(),
            "h_ptr": args["ah_ptr"].double() @ args["bh_ptr"].double()}


def grid(size, meta):
    return (1,)
