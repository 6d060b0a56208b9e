"""Op coverage: the forms of ops whose Triton Python spelling depends on the dtype or on the operands
(src/gen/python.cpp): f16 rem, a bf16 sum scan, max reductions of bf16 and i8, a bf16 argmax with ties,
a rank-3 trans, a -0.0 constant, an f16 literal that rounding through f32 would change, constexprs used as
values (negated, added to themselves, carried by a loop), nested loops whose inner bound is the outer variable,
an f64 sqrt, a loop to an i64 bound carrying two values, and an if without else on an i1 argument; f16, i64
and i1 scalar arguments; values named as Python keywords and builtins. Not a suite task: it exists so that
these forms run against torch, and round-trip through the emitted Python (tests/python/test_gen_python.py).
The f16 division is written in f32, as Triton's `/` computes it: an f16 `div` (arith.divf on f16) runs here
but Triton's NVIDIA backend cannot lower it (ConvertTritonGPUToLLVM fails), so the fixture could not compile
to PTX; tests/python/test_gen_python.py round-trips the f16 `div` form on a copy of this AST."""
import torch

description = (
    "One program per BLOCK = 64 elements of a, b (f16), c (bf16) and i (i8), n elements each. Elementwise: q = "
    "(a * s) / b (a * s in f16, the quotient in f32 rounded to f16), r = fmod(a, b) in f16, cs = the running sum "
    "of c within each block of 64 (bf16), p = the block of a as f32, viewed as 4 x 4 x 4 (zero past n), its dims "
    "permuted to (2, 0, 1), flattened. Program p writes 8 values to st[8p .. 8p + 7]: the block's maximum of c, "
    "its maximum of i, the index of its first maximum of c, 1 / -0.0, (f16(1.0004882812509095) - 1) * 1024, 64, "
    "sqrt(9) and, when debug, big.")
signature = ["a_ptr: *f16", "b_ptr: *f16", "c_ptr: *bf16", "i_ptr: *i8", "q_ptr: *f16 out", "r_ptr: *f16 out",
             "cs_ptr: *bf16 out", "p_ptr: *f32 out", "st_ptr: *f32 out", "n: i32", "s: f16", "big: i64",
             "debug: i1", "BLOCK: constexpr"]
sizes = [{"n": 1}, {"n": 64}, {"n": 150}, {"n": 1000}]
# f16 q: one f16 rounding (the default f16 tolerance); the rest is exact: fmod is exact, the bf16 running
# sums are of small integers (exact in bf16), maxima, indices, permutations and the constants are exact.
tolerance = {"r_ptr": (0.0, 0.0), "cs_ptr": (0.0, 0.0), "p_ptr": (0.0, 0.0), "st_ptr": (0.0, 0.0)}
BLOCK = 64


def inputs(size, gen):
    n = size["n"]
    blocks = -(-n // BLOCK)
    sign = torch.where(torch.rand(n, generator=gen) < 0.5, -1.0, 1.0)
    return {"a_ptr": (torch.randn(n, generator=gen) * 4).half(),
            "b_ptr": (sign * (0.5 + 1.5 * torch.rand(n, generator=gen))).half(),
            "c_ptr": torch.randint(-4, 5, (n,), generator=gen).to(torch.bfloat16),
            "i_ptr": torch.randint(-128, 128, (n,), generator=gen, dtype=torch.int8),
            "q_ptr": torch.empty(n, dtype=torch.float16), "r_ptr": torch.empty(n, dtype=torch.float16),
            "cs_ptr": torch.empty(n, dtype=torch.bfloat16), "p_ptr": torch.empty(n),
            "st_ptr": torch.empty(8 * blocks), "n": n, "s": 0.5, "big": 5, "debug": True}


def reference(args):
    a, b, c, i, n = args["a_ptr"], args["b_ptr"], args["c_ptr"], args["i_ptr"], args["n"]
    blocks = -(-n // BLOCK)
    q = (a * args["s"]).double() / b.double()  # a * s in f16 (exact here: s = 0.5), the division in float64
    r = torch.fmod(a.double(), b.double())
    cs = torch.empty(n, dtype=torch.float64)
    p = torch.empty(n, dtype=torch.float64)
    st = torch.empty(blocks, 8, dtype=torch.float64)
    for k in range(blocks):
        lo, hi = k * BLOCK, min(n, (k + 1) * BLOCK)
        cs[lo:hi] = torch.cumsum(c[lo:hi].double(), 0)
        block = torch.zeros(BLOCK, dtype=torch.float64)
        block[:hi - lo] = a[lo:hi].double()
        p[lo:hi] = block.reshape(4, 4, 4).permute(2, 0, 1).reshape(BLOCK)[:hi - lo]
        cb = c[lo:hi].double()
        st[k] = torch.tensor([cb.max(), i[lo:hi].max(), torch.argmax(cb), -float("inf"), 1.0, 64.0, 3.0,
                              float(args["big"]) if args["debug"] else 0.0], dtype=torch.float64)
    return {"q_ptr": q, "r_ptr": r, "cs_ptr": cs, "p_ptr": p, "st_ptr": st.reshape(-1)}


def grid(size, meta):
    return (-(-size["n"] // meta["BLOCK"]),)
