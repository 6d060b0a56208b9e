"""Per-row absmax int8 quantization: scale = max|x| / 127, q = clamp(round_half_away_from_zero(x / scale), -127,
127). The rounding is the one C's roundf does (not torch.round's half-to-even); x / scale is one f32 division."""
import torch

description = (
    "Quantize each row of a row-major f32 matrix x to int8 with one scale per row. x has n_cols columns (1 <= "
    "n_cols <= 1024: one block holds a row), row i starting at element i * stride_x; q (i8) has the same shape, "
    "row i starting at i * stride_q; scale is f32[number of rows]. For row i: scale[i] = max_j |x[i, j]| / 127 "
    "(an f32 division); then q[i, j] = clamp(round(x[i, j] / scale[i]), -127, 127) where x / scale is one f32 "
    "division and round is round-half-away-from-zero (as C's roundf: 2.5 -> 3, -2.5 -> -3, 0.5 -> 1; not ties "
    "to even), and the clamped value is converted to i8. A row of zeros has scale[i] = 0 and every q[i, j] = 0 "
    "(do not divide by zero). Only the first n_cols elements of each row of q are written. Launched with one "
    "program per row: grid (number of rows,).")
signature = ["x_ptr: *f32", "q_ptr: *i8 out", "scale_ptr: *f32 out", "n_cols: i32", "stride_x: i32", "stride_q: i32",
             "BLOCK: constexpr"]
# One element; padded rows with a row of zeros and a row of exact ties (max 127, so scale = 1 and x / scale =
# k + 0.5 exactly); full 1024-wide rows; values spanning several orders of magnitude.
sizes = [{"m": 1, "n": 1}, {"m": 6, "n": 300, "pad": 5, "zero_row": 2, "ties_row": 4}, {"m": 3, "n": 1024},
         {"m": 5, "n": 255, "wide": True, "ties_row": 0}]
# q is compared exactly (integers); scale gets the default f32 tolerance.


def inputs(size, gen):
    m, n = size["m"], size["n"]
    x = torch.randn(m, n + size.get("pad", 0), generator=gen) * 3
    if size.get("wide"):
        x *= 10.0 ** torch.randint(-3, 4, x.shape, generator=gen)
    if "zero_row" in size:
        x[size["zero_row"]] = 0
    if "ties_row" in size:  # 127 and halves: k + 0.5 for k in -127..126, cycled, and their negatives
        halves = torch.arange(-127, 127, dtype=torch.float32) + 0.5
        row = halves[torch.randint(0, len(halves), (n,), generator=gen)]
        row[0] = 127.0
        x[size["ties_row"], :n] = row
    q_stride = n + 2
    return {"x_ptr": x, "q_ptr": torch.empty(m, q_stride, dtype=torch.int8), "scale_ptr": torch.empty(m),
            "n_cols": n, "stride_x": x.shape[1], "stride_q": q_stride}


def reference(args):
    n = args["n_cols"]
    x = args["x_ptr"][:, :n]  # float32
    scale = x.abs().amax(dim=1) / 127  # f32 division, as the kernel's
    den = torch.where(scale == 0, torch.ones_like(scale), scale)
    v = (x / den[:, None]).double()  # one f32 division per element (torch's CPU division is IEEE)
    r = torch.sign(v) * torch.floor(v.abs() + 0.5)  # half away from zero; exact in float64 for f32 values
    q = torch.zeros(args["q_ptr"].shape, dtype=torch.int64)
    q[:, :n] = r.clamp(-127, 127).long()
    written = torch.zeros(q.shape, dtype=torch.bool)
    written[:, :n] = True
    return {"q_ptr": (q, written), "scale_ptr": scale.double()}


def grid(size, meta):
    return (size["m"],)
