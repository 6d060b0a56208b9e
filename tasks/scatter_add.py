"""Scatter-add with atomics: out[idx[i]] += val[i] for every i, with repeated indices (torch.Tensor.index_add_)."""
import torch

description = (
    "Scatter-add: for every i in [0, n), add val[i] to out[idx[i]]. val is f32[n] and idx is i32[n], each index "
    "in [0, n_out) where n_out is the length of out (f32[n_out]); indices repeat, so several programs add to "
    "the same element: use atomic adds. out is read and written: it holds its initial values, which the sums "
    "add to (out.index_add_(0, idx, val) in PyTorch). Launched with one program per BLOCK consecutive elements "
    "of val: grid (cdiv(n, BLOCK),).")
signature = ["val_ptr: *f32", "idx_ptr: *i32", "out_ptr: *f32 inout", "n: i32", "BLOCK: constexpr"]
# one element; ~27 adds per slot across 4 programs; ~64 per slot, n not a multiple of the block; more slots
# than values (most untouched).
sizes = [{"n": 1, "n_out": 1}, {"n": 1000, "n_out": 37}, {"n": 4099, "n_out": 64}, {"n": 300, "n_out": 1000}]
# f32 atomic adds happen in an arbitrary order, so each slot's sum of up to ~100 values (|sum| up to ~30) is
# rounded differently from float64's: a few f32 ulp of the partial sums, more than the default atol.
tolerance = (1e-5, 1e-4)


def inputs(size, gen):
    n, n_out = size["n"], size["n_out"]
    return {"val_ptr": torch.randn(n, generator=gen), "idx_ptr": torch.randint(0, n_out, (n,), generator=gen,
                                                                               dtype=torch.int32),
            "out_ptr": torch.randn(n_out, generator=gen), "n": n}


def reference(args):
    out = args["out_ptr"].double().clone()
    return {"out_ptr": out.index_add_(0, args["idx_ptr"].long(), args["val_ptr"].double())}


def grid(size, meta):
    return (-(-size["n"] // meta["BLOCK"]),)
