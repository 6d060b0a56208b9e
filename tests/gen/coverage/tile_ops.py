"""Op coverage: trans, reshape, reduce min / argmin / prod, scans max / min / reverse prod, on one 16 x 16 tile.
Not a suite task: it exists so that every op kind of the AST format runs against torch."""
import torch

description = (
    "x is a contiguous f32 matrix of M x N values (M, N at most 16). One program writes: t = x transposed "
    "(N x M), cmin = the minimum of each column (N), amin = the index of the minimum of each row (M, i32, the "
    "first on ties), cmax = the running maximum down each column (M x N), rprod = the running product of each row "
    "from its end (M x N), rmin = the running minimum along each row (M x N), prod = the product of all of x (1 "
    "value); every output contiguous.")
signature = ["x_ptr: *f32", "t_ptr: *f32 out", "cmin_ptr: *f32 out", "amin_ptr: *i32 out", "cmax_ptr: *f32 out",
             "rprod_ptr: *f32 out", "rmin_ptr: *f32 out", "prod_ptr: *f32 out", "M: i32", "N: i32",
             "BLOCK: constexpr"]
sizes = [{"m": 16, "n": 16}, {"m": 13, "n": 9}, {"m": 1, "n": 16}]
# Data movement, minima and maxima are exact; products are f32 reductions (rtol 1e-5, atol 1e-5, the default).
tolerance = {"t_ptr": (0.0, 0.0), "cmin_ptr": (0.0, 0.0), "cmax_ptr": (0.0, 0.0), "rmin_ptr": (0.0, 0.0)}


def inputs(size, gen):
    m, n = size["m"], size["n"]
    x = 1 + 0.1 * torch.randn(m, n, generator=gen)
    return {"x_ptr": x, "t_ptr": torch.empty(n, m), "cmin_ptr": torch.empty(n),
            "amin_ptr": torch.empty(m, dtype=torch.int32), "cmax_ptr": torch.empty(m, n),
            "rprod_ptr": torch.empty(m, n), "rmin_ptr": torch.empty(m, n), "prod_ptr": torch.empty(1), "M": m,
            "N": n}


def reference(args):
    x = args["x_ptr"].double()
    return {"t_ptr": x.T, "cmin_ptr": x.min(dim=0).values, "amin_ptr": torch.argmin(x, dim=1),
            "cmax_ptr": torch.cummax(x, dim=0).values, "rprod_ptr": torch.cumprod(x.flip(1), dim=1).flip(1),
            "rmin_ptr": torch.cummin(x, dim=1).values, "prod_ptr": x.prod().reshape(1)}


def grid(size, meta):
    return (1,)
