"""Embedding lookup: out[t] = table[ids[t]] (torch.nn.functional.embedding)."""
import torch

description = (
    "Embedding lookup: table is a contiguous f32 matrix of `vocab` rows of D values (D at most 64) and ids a "
    "contiguous i32 vector of T token ids, each in 0 .. vocab - 1; copy row ids[t] of table into row t of out, "
    "a contiguous f32 matrix of T rows of D values. Launched with a 1-D grid of ceil(T / BLOCK_T) programs "
    "(BLOCK_T: the kernel's tokens per program); program p handles tokens p * BLOCK_T to p * BLOCK_T + BLOCK_T - 1, "
    "the last one only those below T.")
signature = ["table_ptr: *f32", "ids_ptr: *i32", "out_ptr: *f32 out", "T: i32", "D: i32", "BLOCK_T: constexpr",
             "BLOCK_D: constexpr"]
sizes = [{"vocab": 10, "d": 8, "t": 5}, {"vocab": 50, "d": 64, "t": 16}, {"vocab": 100, "d": 40, "t": 37}]
tolerance = (0.0, 0.0)  # data movement: exact


def inputs(size, gen):
    v, d, t = size["vocab"], size["d"], size["t"]
    return {"table_ptr": torch.randn(v, d, generator=gen),
            "ids_ptr": torch.randint(0, v, (t,), generator=gen, dtype=torch.int32),
            "out_ptr": torch.empty(t, d), "T": t, "D": d}


def reference(args):
    return {"out_ptr": torch.nn.functional.embedding(args["ids_ptr"].long(), args["table_ptr"].double())}


def grid(size, meta):
    return ((size["t"] + meta["BLOCK_T"] - 1) // meta["BLOCK_T"],)
