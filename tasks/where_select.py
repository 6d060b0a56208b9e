"""Elementwise select by an i8 condition: out = cond != 0 ? a : b (torch.where on the condition as booleans)."""
import torch

description = (
    "Elementwise select: out[i] = a[i] if cond[i] != 0 else b[i] for i in [0, n). cond is i8[n] (booleans stored "
    "as bytes: any nonzero value, negative ones included, means true); a, b and out are f32[n]. Launched with "
    "one program per BLOCK consecutive elements: grid (cdiv(n, BLOCK),).")
signature = ["cond_ptr: *i8", "a_ptr: *f32", "b_ptr: *f32", "out_ptr: *f32 out", "n: i32", "BLOCK: constexpr"]
sizes = [{"n": 1}, {"n": 1000}, {"n": 4097}, {"n": 512}]
tolerance = (0.0, 0.0)  # data movement: every element is one of the inputs, exactly


def inputs(size, gen):
    n = size["n"]
    cond = torch.randint(-2, 3, (n,), generator=gen, dtype=torch.int8)  # -2..2: nonzero values other than 1 too
    return {"cond_ptr": cond, "a_ptr": torch.randn(n, generator=gen), "b_ptr": torch.randn(n, generator=gen),
            "out_ptr": torch.empty(n), "n": n}


def reference(args):
    return {"out_ptr": torch.where(args["cond_ptr"] != 0, args["a_ptr"], args["b_ptr"])}


def grid(size, meta):
    return (-(-size["n"] // meta["BLOCK"]),)
