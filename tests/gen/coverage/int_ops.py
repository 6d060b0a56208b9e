"""Op coverage: integer arithmetic, bitwise ops, shifts, comparisons, casts (i1, i8, i64, f32) and num_programs,
one row of y each. Not a suite task: it exists so that every op kind of the AST format runs against torch."""
import torch

BLOCK = 64  # the fixture's block size: row 19 depends on the number of programs, which reference() cannot see

description = (
    "For contiguous i32 vectors x and z of n values (z never 0), write 20 rows of n values into the contiguous i32 "
    "matrix y (20 x n): x / z (truncated), x % z (sign of x), min, max, x & z, x | z, x ^ z, x << 3, x >> 2 "
    "(arithmetic), |x|, -x, x == z, x != z, x <= z, x > z, x >= z (as 0 / 1), x through i64 (<< 20 then >> 20), "
    "trunc(x * 0.5) through f32, x wrapped to i8, and x + the number of programs. Launched with ceil(n / 64) "
    "programs, program p handling elements p * 64 to p * 64 + 63 of every row.")
signature = ["x_ptr: *i32", "z_ptr: *i32", "y_ptr: *i32 out", "n: i32", "BLOCK: constexpr"]
sizes = [{"n": 3}, {"n": 64}, {"n": 700}]


def inputs(size, gen):
    n = size["n"]
    x = torch.randint(-1000, 1001, (n,), generator=gen, dtype=torch.int32)
    z = torch.randint(1, 51, (n,), generator=gen, dtype=torch.int32)
    z = torch.where(torch.randint(0, 2, (n,), generator=gen) == 1, -z, z)
    return {"x_ptr": x, "z_ptr": z, "y_ptr": torch.empty(20, n, dtype=torch.int32), "n": n}


def reference(args):
    x, z = args["x_ptr"].long(), args["z_ptr"].long()
    programs = (x.numel() + BLOCK - 1) // BLOCK
    rows = [torch.div(x, z, rounding_mode="trunc"), torch.fmod(x, z), torch.minimum(x, z), torch.maximum(x, z),
            x & z, x | z, x ^ z, x << 3, x >> 2, torch.abs(x), -x, x == z, x != z, x <= z, x > z, x >= z, x,
            torch.trunc(x.double() * 0.5).long(), (x + 128) % 256 - 128, x + programs]
    return {"y_ptr": torch.stack([r.long() for r in rows])}


def grid(size, meta):
    assert meta["BLOCK"] == BLOCK, meta
    return ((size["n"] + BLOCK - 1) // BLOCK,)
