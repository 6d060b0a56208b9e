"""f32 -> bf16 conversion, rounding to nearest even (torch's .to(torch.bfloat16)): a dtype-coverage task."""
import math

import torch

description = (
    "Convert x (f32[n]) to bfloat16 into y (bf16[n]): y[i] = x[i] rounded to the nearest bf16 value, ties to "
    "even (as torch's x.to(torch.bfloat16) and Triton's x.to(tl.bfloat16)); infinities and NaN stay so, f32 "
    "values above the largest bf16 round to infinity, subnormals convert too. Launched with one program per "
    "BLOCK consecutive elements: grid (cdiv(n, BLOCK),).")
signature = ["x_ptr: *f32", "y_ptr: *bf16 out", "n: i32", "BLOCK: constexpr"]
sizes = [{"n": 1}, {"n": 1000}, {"n": 4099}, {"n": 40, "special": True}]
tolerance = (0.0, 0.0)  # one correctly rounded conversion per element: bit-exact


def _special():
    """Values at the edges of rounding: exact ties (bf16 keeps 8 significant bits, so an f32 whose low 16 bits are
    0x8000 is halfway; odd and even kept bits), just above and below a tie, overflow, infinities, NaN,
    subnormals, zeros."""
    bits = [0x3F808000, 0x3F818000, 0xBF808000, 0xBF818000, 0x3F808001, 0x3F807FFF, 0x7F7FFFFF, 0x7F7F7FFF,
            0x00008000, 0x00018000, 0x00000001, 0x807FFFFF, 0x80000000, 0x00000000]
    v = torch.tensor(bits, dtype=torch.int64).to(torch.int32).view(torch.float32)
    return torch.cat([v, torch.tensor([math.inf, -math.inf, math.nan, 1.0, -2.5, 3.0e38, -3.4e38, 1e-40])])


def inputs(size, gen):
    n = size["n"]
    x = torch.randn(n, generator=gen) * 10.0 ** torch.randint(-6, 7, (n,), generator=gen)
    if size.get("special"):
        s = _special()
        x[:len(s)] = s
    return {"x_ptr": x, "y_ptr": torch.empty(n, dtype=torch.bfloat16), "n": n}


def reference(args):
    return {"y_ptr": args["x_ptr"].to(torch.bfloat16)}


def grid(size, meta):
    return (-(-size["n"] // meta["BLOCK"]),)
