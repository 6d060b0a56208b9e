"""Maximum of each row of a matrix, one program per row looping over column blocks (any number of columns)."""
import torch

description = (
    "Maximum of each row of the f32 matrix x (m rows of N values, any N >= 1; row r starts at element r * stride, "
    "stride >= N) into the contiguous f32 vector out of m values: out[r] = max(x[r, 0], ..., x[r, N - 1]). Values "
    "may all be negative. Launched with one program per row (a grid of m); a row longer than the kernel's block "
    "is read in several blocks.")
signature = ["x_ptr: *f32", "out_ptr: *f32 out", "N: i32", "stride: i32", "BLOCK: constexpr"]
# "negative": every value below -1, so that a masked-off lane read as 0 would win.
sizes = [{"m": 1, "n": 1}, {"m": 7, "n": 1000, "pad": 3}, {"m": 3, "n": 4096}, {"m": 4, "n": 300, "negative": True}]


def inputs(size, gen):
    m, n = size["m"], size["n"]
    stride = n + size.get("pad", 0)
    x = torch.randn(m, stride, generator=gen)
    if size.get("negative"):
        x = -x.abs() - 1
    return {"x_ptr": x, "out_ptr": torch.empty(m), "N": n, "stride": stride}


def reference(args):
    return {"out_ptr": args["x_ptr"].double()[:, :args["N"]].amax(dim=1)}


def grid(size, meta):
    return (size["m"],)
