"""Masked mean of each row: out[i] = sum_j x[i, j] * [mask[i, j] != 0] / count_j(mask[i, j] != 0), 0 when the
row's mask is all zero (PyTorch: (x * m).sum(1) / m.sum(1) with the empty rows set to 0)."""
import torch

description = (
    "Mean of the selected elements of each row: x is a row-major f32 matrix of M rows and N columns (N >= 1, any "
    "size: loop over the columns in blocks of BLOCK_N), row i starting at element i * stride_x; mask is a "
    "row-major i8 matrix of the same shape, row i starting at element i * stride_mask (an element is selected "
    "where mask != 0, negative values included). out[i] (f32[M]) = the sum of the selected x[i, j] divided by "
    "their number, and exactly 0.0 when no element of row i is selected. Launched with one program per "
    "BLOCK_M consecutive rows: grid (cdiv(M, BLOCK_M),).")
signature = ["x_ptr: *f32", "mask_ptr: *i8", "out_ptr: *f32 out", "M: i32", "N: i32", "stride_x: i32",
             "stride_mask: i32", "BLOCK_M: constexpr", "BLOCK_N: constexpr"]
# One element (selected or not); padded rows with an empty row; several column blocks and row blocks; a single
# column.
sizes = [{"m": 1, "n": 1}, {"m": 9, "n": 100, "pad": 3, "empty_row": 4}, {"m": 17, "n": 300, "empty_row": 16},
         {"m": 4, "n": 1}, {"m": 8, "n": 256}]
# tolerance: the default for f32 (sums of up to 300 terms divided by the count; the order of the additions
# differs from float64's)


def inputs(size, gen):
    m, n, pad = size["m"], size["n"], size.get("pad", 0)
    x = torch.randn(m, n + pad, generator=gen)
    mask = torch.randint(-1, 3, (m, n + 2 * pad), generator=gen, dtype=torch.int8)  # -1..2: 3 in 4 selected
    if "empty_row" in size:
        mask[size["empty_row"]] = 0
    return {"x_ptr": x, "mask_ptr": mask, "out_ptr": torch.empty(m), "M": m, "N": n, "stride_x": n + pad,
            "stride_mask": n + 2 * pad}


def reference(args):
    n = args["N"]
    x = args["x_ptr"][:, :n].double()
    sel = (args["mask_ptr"][:, :n] != 0).double()
    count = sel.sum(dim=1)
    total = (x * sel).sum(dim=1)
    return {"out_ptr": torch.where(count > 0, total / count.clamp(min=1), torch.zeros_like(total))}


def grid(size, meta):
    return (-(-size["m"] // meta["BLOCK_M"]),)
