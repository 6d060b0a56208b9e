"""Op coverage: atomic_rmw (scalar max, f32 add, xchg) and atomic_cas (a successful and a failed compare).
Not a suite task: it exists so that every op kind of the AST format runs against torch."""
import torch

BLOCK = 64  # the fixture's block size: the per-program buffers have one slot per program

description = (
    "x is a contiguous i32 vector of n values; ceil(n / 64) programs of 64 elements each. Every program atomically "
    "maxes its block's maximum into max[0] and adds its block's sum (as f32) into sum[0]; program p "
    "compare-and-swaps slot[p] from 0 to p + 1 (old value into old1[p]) and then from 0 to -1 (fails: old value "
    "into old2[p]); and it exchanges its elements of x into buf, writing the previous contents to prev.")
signature = ["x_ptr: *i32", "max_ptr: *i32 inout", "sum_ptr: *f32 inout", "slot_ptr: *i32 inout",
             "old1_ptr: *i32 out", "old2_ptr: *i32 out", "buf_ptr: *i32 inout", "prev_ptr: *i32 out", "n: i32",
             "BLOCK: constexpr"]
sizes = [{"n": 1}, {"n": 64}, {"n": 1000}]
tolerance = {"sum_ptr": (1e-5, 1e-5)}  # an f32 sum, in an order of the programs that varies


def inputs(size, gen):
    n = size["n"]
    programs = (n + BLOCK - 1) // BLOCK
    return {"x_ptr": torch.randint(-10 ** 6, 10 ** 6, (n,), generator=gen, dtype=torch.int32),
            "max_ptr": torch.tensor([-2 ** 31], dtype=torch.int32), "sum_ptr": torch.zeros(1),
            "slot_ptr": torch.zeros(programs, dtype=torch.int32),
            "old1_ptr": torch.empty(programs, dtype=torch.int32), "old2_ptr": torch.empty(programs, dtype=torch.int32),
            "buf_ptr": torch.randint(-5, 5, (n,), generator=gen, dtype=torch.int32),
            "prev_ptr": torch.empty(n, dtype=torch.int32), "n": n}


def reference(args):
    x = args["x_ptr"].long()
    slot = args["slot_ptr"].long()
    after = torch.where(slot == 0, torch.arange(1, slot.numel() + 1), slot)  # the first compare-and-swap
    return {"max_ptr": torch.maximum(args["max_ptr"].long(), x.max()),
            "sum_ptr": args["sum_ptr"].double() + x.double().sum(), "slot_ptr": after, "old1_ptr": slot,
            "old2_ptr": after, "buf_ptr": x, "prev_ptr": args["buf_ptr"]}


def grid(size, meta):
    assert meta["BLOCK"] == BLOCK, meta
    return ((size["n"] + BLOCK - 1) // BLOCK,)
