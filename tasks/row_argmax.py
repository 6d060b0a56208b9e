"""Index of the largest value of each row; on ties the first one (torch.argmax)."""
import torch

description = (
    "For each row of the f32 matrix x (M rows of N values, N at most 256; row r starts at element r * stride, "
    "stride >= N), the column index (0 to N - 1) of its largest value, the smallest such index when several "
    "values are equal to the maximum, into the contiguous i32 vector out of M values. Launched with a 1-D grid of "
    "ceil(M / BLOCK_M) programs (BLOCK_M: the kernel's rows per program); program p handles rows p * BLOCK_M to "
    "p * BLOCK_M + BLOCK_M - 1, the last one only those below M.")
signature = ["x_ptr: *f32", "out_ptr: *i32 out", "M: i32", "N: i32", "stride: i32", "BLOCK_M: constexpr",
             "BLOCK_N: constexpr"]
# "ties": values rounded to integers, so that most rows hold their maximum several times.
sizes = [{"m": 3, "n": 10}, {"m": 9, "n": 256}, {"m": 6, "n": 200, "ties": True}]


def inputs(size, gen):
    m, n = size["m"], size["n"]
    x = torch.randn(m, n, generator=gen)
    if size.get("ties"):
        x = torch.round(x)
    return {"x_ptr": x, "out_ptr": torch.empty(m, dtype=torch.int32), "M": m, "N": n, "stride": n}


def reference(args):
    x = args["x_ptr"].double()[:, :args["N"]]
    return {"out_ptr": torch.argmax(x, dim=1)}  # the first index of the maximum (PyTorch's documented rule)


def grid(size, meta):
    return ((size["m"] + meta["BLOCK_M"] - 1) // meta["BLOCK_M"],)
