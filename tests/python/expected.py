"""Expected outputs of the TTIR fixtures, computed independently with numpy / Python integers / torch.

`EXPECTED[name](ins, sc)` takes the fixture's buffers as created by fixture_data.make_inputs (storage
arrays: bf16 and fp8 as bit patterns) and its scalars, and returns {output name: Check}. A Check
compares tilescope's saved buffer with the expectation:

* `Exact`  bit-exact, except that all NaNs compare equal (NaN payloads are not specified) and, with
  `signed_zero=False`, +0 and -0 compare equal. Used for integer ops and for float ops that are
  exactly rounded (add, mul, div_rn, sqrt_rn, fma, conversions, min/max, fmod, ...).
* `Ulp(n)` at most n units in the last place of the float32 (or f16) result, for approximate math:
  exp/log/sin/erf/libdevice (the GPU's own versions are approximations: reference §2.2, §5.2).
* `DotTol(scale)` |got - exact| <= scale * (|a| @ |b|) elementwise, for products whose accumulation
  order (and TF32 input rounding) is implementation-defined (reference §1.5, §5.3).
* `Close(rtol, atol)` numpy.isclose semantics, for reductions whose order is implementation-defined.
* `Custom(fn)` any other property (fn raises AssertionError).

Semantics follow the GPU (reference §5), not Triton's interpreter: C truncating division, division by
zero giving -1 and the dividend, saturating float->int, RTNE bf16, rtz overflow to the largest finite
value, IEEE minNum/maxNum.
"""
from __future__ import annotations

import math
import os
import sys
from fractions import Fraction

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ttir"))
import fixture_data as fd  # noqa: E402

I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1


# --------------------------------------------------------------------------------------------------
# Checks


class Check:
    mask = None  # optional boolean array: compare only these elements

    def where(self, mask):
        self.mask = np.asarray(mask, dtype=bool)
        return self

    def _sel(self, got, exp):
        got = np.asarray(got).reshape(np.shape(exp))
        if self.mask is None:
            return got.ravel(), np.asarray(exp).ravel()
        m = np.broadcast_to(self.mask, np.shape(exp))
        return got[m], np.asarray(exp)[m]


def _as_float(a):
    a = np.asarray(a)
    return a if a.dtype.kind == "f" else None


class Exact(Check):
    def __init__(self, exp, dtype=None, signed_zero=True):
        self.exp, self.dtype, self.signed_zero = np.asarray(exp), dtype, signed_zero

    def check(self, got, what=""):
        g, e = self._sel(got, self.exp)
        if self.dtype in ("bf16", "f8e5", "f8e4nv"):
            gf, ef = fd.to_float(g, self.dtype), fd.to_float(e.astype(g.dtype), self.dtype)
        else:
            gf, ef = _as_float(g), _as_float(e)
        if gf is None:  # integers: compare the bit patterns at the saved width (TTIR is signless)
            if g.dtype.itemsize == 8:
                bad = g.view(np.uint64) != np.asarray(e).astype(g.dtype).view(np.uint64)
            else:
                m = (1 << (8 * g.dtype.itemsize)) - 1
                bad = (g.astype(np.int64) & m) != (np.asarray(e).astype(np.int64) & m)
        else:
            ef = ef.astype(gf.dtype)
            both_nan = np.isnan(gf) & np.isnan(ef)
            if self.signed_zero:
                ut = {2: np.uint16, 4: np.uint32, 8: np.uint64}[gf.dtype.itemsize]
                same = gf.view(ut) == ef.view(ut)
            else:
                same = gf == ef
            bad = ~(same | both_nan)
        _report(bad, g, e, what)


class Ulp(Check):
    def __init__(self, exp, n, dtype=np.float32, atol=0.0):
        self.exp, self.n, self.dtype, self.atol = np.asarray(exp, dtype=np.float64), n, dtype, atol

    def check(self, got, what=""):
        g, e = self._sel(got, self.exp)
        g = np.asarray(g, dtype=np.float64)
        spacing = np.spacing(np.abs(e).astype(self.dtype)).astype(np.float64)
        spacing = np.maximum(spacing, np.finfo(self.dtype).smallest_subnormal)
        both_nan = np.isnan(g) & np.isnan(e)
        same_inf = np.isinf(e) & (g == e)
        with np.errstate(invalid="ignore"):
            ok = (np.abs(g - e) <= self.n * spacing + self.atol) | both_nan | same_inf
        _report(~ok, g, e, what, extra=f" (tolerance {self.n} ulp)")


class DotTol(Check):
    def __init__(self, exp, mag, scale):
        self.exp, self.mag, self.scale = np.asarray(exp, np.float64), np.asarray(mag, np.float64), scale

    def check(self, got, what=""):
        g = np.asarray(got, np.float64).reshape(self.exp.shape)
        bad = np.abs(g - self.exp) > self.scale * self.mag + 1e-30
        _report(bad.ravel(), g.ravel(), self.exp.ravel(), what, extra=f" (tolerance {self.scale:g} * |a|@|b|)")


class Close(Check):
    def __init__(self, exp, rtol, atol=0.0):
        self.exp, self.rtol, self.atol = np.asarray(exp, np.float64), rtol, atol

    def check(self, got, what=""):
        g, e = self._sel(got, self.exp)
        ok = np.isclose(np.asarray(g, np.float64), e, rtol=self.rtol, atol=self.atol, equal_nan=True)
        _report(~ok, g, e, what, extra=f" (rtol {self.rtol:g}, atol {self.atol:g})")


class Custom(Check):
    def __init__(self, fn):
        self.fn = fn

    def check(self, got, what=""):
        self.fn(np.asarray(got))


def _report(bad, g, e, what, extra=""):
    bad = np.asarray(bad).ravel()
    if bad.any():
        idx = np.flatnonzero(bad)
        shown = ", ".join(f"[{i}] got {g.ravel()[i]!r} expected {e.ravel()[i]!r}" for i in idx[:6])
        raise AssertionError(f"{what}: {len(idx)} of {bad.size} elements differ{extra}: {shown}")


# --------------------------------------------------------------------------------------------------
# Exact integer helpers (Python ints, two's complement wraparound)


def wrap(v, bits=32, signed=True):
    v = int(v) & ((1 << bits) - 1)
    if signed and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def cdiv_c(a, b):
    """C (truncating) division and remainder; GPU result for b == 0: -1 / all ones and the dividend."""
    if b == 0:
        return -1, a
    q = abs(a) // abs(b)
    if (a < 0) != (b < 0):
        q = -q
    return q, a - q * b


def idiv(a, b, bits=32, signed=True):
    q, r = cdiv_c(a, b)
    return wrap(q, bits, signed), wrap(r, bits, signed)


def vec(f, *arrays, dtype=np.int32):
    return np.array([f(*map(int, t)) for t in zip(*[np.asarray(a).ravel() for a in arrays])],
                    dtype=np.int64).astype(dtype).reshape(np.shape(arrays[0]))


def f32(x):
    return np.asarray(x, dtype=np.float32)


def fma_exact(x, y, z):
    """Correctly rounded float32 fma (exact rational arithmetic, then one rounding)."""
    out = []
    for a, b, c in zip(np.ravel(x), np.ravel(y), np.ravel(z)):
        if not (np.isfinite(a) and np.isfinite(b) and np.isfinite(c)):
            with np.errstate(all="ignore"):
                out.append(np.float32(np.float64(a) * np.float64(b) + np.float64(c)))
            continue
        r = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
        if r == 0:  # IEEE sign of an exact zero sum: -0 only for (-0) + (-0)
            prod_neg = (np.signbit(a) != np.signbit(b)) and (a == 0 or b == 0)
            out.append(np.float32(-0.0) if (prod_neg and np.signbit(c) and c == 0) else np.float32(0.0))
            continue
        out.append(_round_f32(r))
    return np.array(out, np.float32).reshape(np.shape(x))


def _round_f32(r: Fraction):
    # float(Fraction) rounds correctly to f64; rounding f64 -> f32 again could double-round, so
    # pick between the two f32 neighbours of the f64 value by the exact rational distance.
    d = np.float32(float(r))
    if not np.isfinite(d):
        return d
    lo = np.nextafter(d, np.float32(-np.inf)) if Fraction(float(d)) > r else d
    hi = np.nextafter(lo, np.float32(np.inf)) if Fraction(float(lo)) < r else lo
    if lo == hi:
        return lo
    dl, dh = r - Fraction(float(lo)), Fraction(float(hi)) - r
    if dl < dh:
        return lo
    if dh < dl:
        return hi
    return lo if (int(np.array(lo, np.float32).view(np.uint32)) & 1) == 0 else hi


def rtz_f16(x):
    """float32 -> float16 rounding toward zero; overflow gives the largest finite value (reference §5)."""
    x = f32(x)
    with np.errstate(over="ignore"):
        h = x.astype(np.float16)
    bits = h.view(np.uint16).copy()
    with np.errstate(invalid="ignore"):
        too_big = (np.abs(h.astype(np.float32)) > np.abs(x)) & np.isfinite(x)
    bits[too_big] -= 1
    return bits.view(np.float16)


def rtz_fp8(x, dtype):
    bits = fd.f32_to_fp8_bits(x, dtype).copy()
    back = fd.fp8_bits_to_f32(bits, dtype)
    with np.errstate(invalid="ignore"):
        too_big = (np.abs(back) > np.abs(x)) & np.isfinite(x) & (back != 0)
    bits[too_big] -= 1
    return bits


def sat_f2i(x, bits, signed=True, nan=None):
    """Saturating float -> int as PTX cvt.rzi computes it (reference §5). PTX ISA, cvt "Integer Notes": a
    NaN from an f32 source gives 0 unless the destination is 64-bit, where it gives 1 << 63 (INT64_MIN
    for s64); measured on the H200 (tests/gpu/data, edge_f2i). `nan` overrides that value."""
    if nan is None:
        nan = 0 if bits < 64 else (-(1 << 63) if signed else 1 << 63)
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    out = []
    for v in np.ravel(np.asarray(x, np.float64)):
        if math.isnan(v):
            out.append(nan)
        elif v >= hi:
            out.append(hi)
        elif v <= lo:
            out.append(lo)
        else:
            out.append(int(v))  # truncation toward zero
    return out


# --------------------------------------------------------------------------------------------------
# Philox 4x32-10 (the counter-based generator behind tl.rand / tl.randint, triton/language/random.py)


def philox_randint(seed: int, offsets):
    M32 = 0xFFFFFFFF
    c0 = np.asarray(offsets, np.int64).astype(np.uint64) & M32
    c1 = np.zeros_like(c0)
    c2 = np.zeros_like(c0)
    c3 = np.zeros_like(c0)
    s = seed & 0xFFFFFFFFFFFFFFFF
    k0 = np.full_like(c0, s & M32)
    k1 = np.full_like(c0, (s >> 32) & M32)
    A, B = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
    for _ in range(10):
        _c0, _c2 = c0, c2
        c0 = ((B * _c2) >> np.uint64(32)) ^ c1 ^ k0
        c2 = ((A * _c0) >> np.uint64(32)) ^ c3 ^ k1
        c1 = (B * _c2) & M32
        c3 = (A * _c0) & M32
        k0 = (k0 + 0x9E3779B9) & M32
        k1 = (k1 + 0xBB67AE85) & M32
    return c0.astype(np.uint32).view(np.int32)


def philox_rand(seed, offsets):
    x = philox_randint(seed, offsets).astype(np.int64)
    x = np.where(x < 0, -x - 1, x).astype(np.int32)
    return x.astype(np.float32) * np.float32(4.6566127342e-10)


# --------------------------------------------------------------------------------------------------
# Per-fixture expectations

EXPECTED = {}


def expect(name):
    def deco(fn):
        EXPECTED[name] = fn
        return fn
    return deco


@expect("add")
def _(i, s):
    return {"out_ptr": Exact(i["x_ptr"] + i["y_ptr"])}


@expect("add_tail")
def _(i, s):
    out = np.full(1024, -7, np.float32)
    out[:1000] = i["x_ptr"] + i["y_ptr"]
    return {"out_ptr": Exact(out)}


@expect("softmax")
def _(i, s):
    x = i["x_ptr"].astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"y_ptr": Close(e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-9)}


@expect("layernorm")
def _(i, s):
    x = i["x_ptr"].astype(np.float64)
    mean = x.mean(axis=1)
    var = ((x - mean[:, None]) ** 2).mean(axis=1)
    rstd = 1 / np.sqrt(var + np.float32(s["eps"]))
    y = (x - mean[:, None]) * rstd[:, None] * i["w_ptr"] + i["b_ptr"]
    return {"y_ptr": Close(y.astype(np.float16), rtol=2e-3, atol=2e-3),
            "mean_ptr": Close(mean, rtol=1e-5, atol=1e-6), "rstd_ptr": Close(rstd, rtol=1e-5)}


def _mm(a, b):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return a @ b, np.abs(a) @ np.abs(b)


@expect("matmul_f16")
def _(i, s):
    c, mag = _mm(i["a_ptr"], i["b_ptr"])
    return {"c_ptr": DotTol(c, mag, 80 * 2.0 ** -24)}


@expect("dot_f32_ieee")
def _(i, s):
    c, mag = _mm(i["a_ptr"], i["b_ptr"])
    return {"c_ptr": DotTol(c, mag, 32 * 2.0 ** -24)}


@expect("dot_f32_tf32x3")
def _(i, s):
    c, mag = _mm(i["a_ptr"], i["b_ptr"])
    return {"c_ptr": DotTol(c, mag, 2.0 ** -17)}


@expect("dot_f32_tf32")
def _(i, s):
    c, mag = _mm(i["a_ptr"], i["b_ptr"])

    def check(got):
        DotTol(c, mag, 2.0 ** -9).check(got, "c_ptr (tf32 bound)")
        err = np.abs(got.astype(np.float64) - c).max()
        # TF32 keeps 10 mantissa bits of each input: randn 32x32x32 shows errors ~1e-2 on the GPU
        # (reference §5 table); an engine that ignores inputPrecision=tf32 stays below 1e-5.
        assert err > 1e-4, f"tf32 dot matches fp32 too closely (max error {err:g}): inputs not rounded to tf32"
    return {"c_ptr": Custom(check)}


@expect("dot_i8")
def _(i, s):
    return {"c_ptr": Exact(i["a_ptr"].astype(np.int64) @ i["b_ptr"].astype(np.int64))}


@expect("dot_f8e5")
def _(i, s):
    a = fd.fp8_bits_to_f32(i["a_ptr"], "f8e5")
    b = fd.fp8_bits_to_f32(i["b_ptr"], "f8e5")
    c, mag = _mm(a, b)
    return {"c_ptr": DotTol(c, mag, 32 * 2.0 ** -24)}


@expect("dot_f16_out_f16")
def _(i, s):
    c, mag = _mm(i["a_ptr"], i["b_ptr"])
    # f16 accumulator: each partial sum may be rounded to f16 (11-bit significand).
    return {"c_ptr": DotTol(c, mag, 33 * 2.0 ** -11)}


@expect("dot_3d")
def _(i, s):
    a = i["a_ptr"].astype(np.float64)
    b = i["b_ptr"].astype(np.float64)
    return {"c_ptr": DotTol(a @ b, np.abs(a) @ np.abs(b), 32 * 2.0 ** -24)}


@expect("row_reduce")
def _(i, s):
    x = i["x_ptr"]
    mag = np.abs(x.astype(np.float64)).sum(axis=1)
    ssum = x.astype(np.float64).sum(axis=1)

    def check_sum(got):
        bad = np.abs(got.astype(np.float64) - ssum) > 50 * 2.0 ** -24 * mag
        _report(bad, got, ssum, "sum_ptr")
    return {"sum_ptr": Custom(check_sum), "max_ptr": Exact(x.max(axis=1)), "min_ptr": Exact(x.min(axis=1)),
            "amax_ptr": Exact(x.argmax(axis=1)), "amin_ptr": Exact(x.argmin(axis=1))}


@expect("int_reduce")
def _(i, s):
    x = i["x_ptr"].astype(np.int64)
    out = np.zeros((8, 16), np.int64)
    out[0] = [wrap(v) for v in x.sum(axis=1)]
    out[1] = x.max(axis=1)
    out[2] = x.min(axis=1)
    out[3] = np.bitwise_xor.reduce(x, axis=1)
    out[4] = [wrap(math.prod(int(v) for v in row)) for row in x]
    out[5] = [wrap(v) for v in x.sum(axis=0)]
    out[6] = x.argmax(axis=1)
    out[7] = wrap(int(x.sum()))
    return {"out_ptr": Exact(out.astype(np.int32))}


@expect("scan")
def _(i, s):
    x = i["x_ptr"].astype(np.float64)
    xi = i["xi_ptr"].astype(np.int64)
    cp = np.flip(np.cumprod(np.flip(x, axis=1), axis=1), axis=1)
    return {"cs_ptr": Close(np.cumsum(x, axis=1), rtol=1e-5, atol=1e-5), "cp_ptr": Close(cp, rtol=1e-5),
            "csi_ptr": Exact(np.flip(np.cumsum(np.flip(xi, axis=1), axis=1), axis=1).astype(np.int32)),
            "cs0_ptr": Exact(np.cumsum(xi, axis=0).astype(np.int32))}


@expect("histogram")
def _(i, s):
    return {"hist_ptr": Exact(np.bincount(i["x_ptr"][:s["n"]], minlength=16).astype(np.int32))}


@expect("gather")
def _(i, s):
    return {"out_ptr": Exact(np.take_along_axis(i["src_ptr"], i["idx_ptr"].astype(np.int64), axis=1))}


@expect("shape_ops")
def _(i, s):
    x, y = i["x_ptr"], i["y_ptr"]
    j = np.stack([x, y], axis=-1)
    sp = x.reshape(16, 4, 2)
    cat = np.sort(np.concatenate([x.ravel(), y.ravel()]))

    def check_cat(got):  # tl.cat(can_reorder=True): any order of the 256 elements
        Exact(cat).check(np.sort(got.ravel()), "cat_ptr (sorted)")
    return {"t_ptr": Exact(x.T), "j_ptr": Exact(j), "p_ptr": Exact(np.transpose(j, (2, 0, 1))),
            "s_ptr": Exact(np.stack([sp[..., 0], sp[..., 1]])), "r_ptr": Exact(x.reshape(8, 16)),
            "cat_ptr": Custom(check_cat)}


@expect("select")
def _(i, s):
    x, y, z = i["x_ptr"], i["y_ptr"], i["z_ptr"]
    with np.errstate(invalid="ignore"):
        out = np.stack([np.where(x > y, x, y), np.fmin(x, y), np.fmax(x, y), np.minimum(x, y), np.maximum(x, y),
                        np.clip(z, np.float32(-0.5), np.float32(0.5)),
                        np.where(z > 0, z, np.float32(0)) + np.where(np.isnan(x), np.float32(1), np.float32(0))])
    return {"out_ptr": Exact(out.astype(np.float32))}


@expect("math")
def _(i, s):
    x, y, z = i["x_ptr"], i["y_ptr"], i["z_ptr"]
    X, Y, Z = (a.astype(np.float64) for a in (x, y, z))
    rows = {
        0: Ulp(np.exp(Z), 4), 1: Ulp(np.exp2(Z), 4), 2: Ulp(np.log(X), 4), 3: Ulp(np.log2(X), 4),
        4: Ulp(np.sqrt(X), 2), 5: Exact(np.sqrt(x)), 6: Exact(z / y), 7: Ulp(1 / np.sqrt(X), 4),
        8: Exact(np.abs(z)), 9: Exact(np.floor(z)), 10: Exact(np.ceil(z)),
        11: Ulp(np.array([math.erf(v) for v in Z]), 4, atol=1e-7), 12: Exact(fma_exact(x, y, z)),
        13: Ulp(np.sin(Z), 4, atol=2e-7), 14: Ulp(np.cos(Z), 4, atol=2e-7), 15: Ulp(Z / Y, 2),
        16: Exact(gpu_frem(z, y)), 17: Exact((-z) * x - y),
    }
    return {"out_ptr": rows}


@expect("libdevice")
def _(i, s):
    x, y = i["x_ptr"], i["y_ptr"]
    X, Y = x.astype(np.float64), y.astype(np.float64)
    x3 = (x * np.float32(3)).astype(np.float64)
    p = (y * np.float32(3)) * x  # f32 roundings as in the kernel
    rows = {
        0: Ulp(np.tanh(x3), 4, atol=1e-7), 1: Ulp(np.power(Y, (x * np.float32(4)).astype(np.float64)), 4),
        2: Ulp(np.arctan2(X, Y), 4, atol=1e-7), 3: Ulp(np.expm1(X), 4, atol=1e-8), 4: Ulp(np.log1p(X), 4, atol=1e-8),
        5: Ulp(np.cbrt(X), 4), 6: Ulp(np.arcsin(X), 4, atol=1e-8), 7: Ulp(np.arctan(Y), 4), 8: Ulp(np.sinh(X), 4, atol=1e-8),
        9: Ulp(np.cosh(X), 4), 10: Ulp(np.array([math.erfc(v) for v in X]), 4), 11: Ulp(np.hypot(X, Y), 4),
        12: Exact(np.trunc(p)), 13: Exact(np.rint(p)), 14: Ulp(np.arccos(X), 4), 15: Ulp(np.log10(Y), 4, atol=1e-8),
    }
    return {"out_ptr": rows}


@expect("int_signed")
def _(i, s):
    a, b, sh = (i[k].astype(np.int64) for k in ("a_ptr", "b_ptr", "s_ptr"))
    rows = [
        vec(lambda p, q: idiv(p, q)[0], a, b), vec(lambda p, q: idiv(p, q)[1], a, b),
        vec(lambda p, t: p >> t, a, sh), vec(lambda p, t: wrap(p << t), a, sh),
        vec(lambda p, q: p & q, a, b), vec(lambda p, q: p | q, a, b), vec(lambda p, q: p ^ q, a, b),
        vec(lambda p: ~p, a), vec(lambda p, q: idiv(wrap(p + q - 1), q)[0], a, b),
        vec(lambda p, q: wrap(p * q), a, b), vec(lambda p, q: wrap(p + wrap(q * 65536)), a, b),
        vec(lambda p: wrap(abs(p)), a), vec(min, a, b), vec(max, a, b),
        vec(lambda p, q: int(p < q) + 2 * int(p == q), a, b), vec(lambda p, q: wrap(p - q), a, b),
    ]
    return {"out_ptr": Exact(np.stack(rows))}


@expect("int_unsigned")
def _(i, s):
    a, b, sh = (i[k].astype(np.int64) for k in ("a_ptr", "b_ptr", "s_ptr"))
    u = lambda v: wrap(v, 32, signed=False)  # noqa: E731
    rows = [
        vec(lambda p, q: p // q, a, b, dtype=np.uint32), vec(lambda p, q: p % q, a, b, dtype=np.uint32),
        vec(lambda p, t: p >> t, a, sh, dtype=np.uint32), vec(lambda p, q: (p * q) >> 32, a, b, dtype=np.uint32),
        vec(max, a, b, dtype=np.uint32), vec(min, a, b, dtype=np.uint32),
        vec(lambda p, q: int(p < q), a, b, dtype=np.uint32),
        vec(lambda p, q: u(p + q - 1) // q, a, b, dtype=np.uint32),
    ]
    return {"out_ptr": Exact(np.stack(rows)), "f_ptr": Exact(i["a_ptr"].astype(np.float32))}


@expect("i64_offsets")
def _(i, s):
    def f(x, y):
        big = wrap(x * 3000000000 + y, 64)
        return wrap(idiv(big, 7, 64)[0] - (big >> 3) + idiv(big, 1000003, 64)[1], 64)
    return {"out_ptr": Exact(vec(f, i["x_ptr"], i["y_ptr"], dtype=np.int64))}


@expect("casts")
def _(i, s):
    x = i["x_ptr"]
    h = x.astype(np.float16)
    bf = fd.f32_to_bf16_bits(x)
    e5 = fd.f32_to_fp8_bits(x, "f8e5")
    e4 = fd.f32_to_fp8_bits(x, "f8e4nv")
    assert np.abs(x).max() < 448, "casts fixture inputs must stay in the fp8e4nv range"
    i32 = np.trunc(x * np.float32(1000)).astype(np.int32)
    back = np.stack([h.astype(np.float32), fd.bf16_bits_to_f32(bf), fd.fp8_bits_to_f32(e5, "f8e5"),
                     fd.fp8_bits_to_f32(e4, "f8e4nv"), i32.astype(np.float32), np.abs(x)])
    return {"h_ptr": Exact(h), "b_ptr": Exact(bf, "bf16"), "e5_ptr": Exact(e5, "f8e5"), "e4_ptr": Exact(e4, "f8e4nv"),
            "hz_ptr": Exact(rtz_f16(x)), "i8_ptr": Exact(np.trunc(x * np.float32(0.25)).astype(np.int8)),
            "i32_ptr": Exact(i32), "i64_ptr": Exact(np.trunc(x * np.float32(1e7)).astype(np.int64)),
            "bits_ptr": Exact(x.view(np.int32) ^ 0x55), "back_ptr": Exact(back)}


@expect("atomics")
def _(i, s):
    x, xi = i["x_ptr"], i["xi_ptr"].astype(np.int64)
    b = np.arange(256) % 8
    fsum = np.array([x[b == k].astype(np.float64).sum() for k in range(8)], np.float32)
    fmax = np.array([max(-1000.0, (x[b == k] * np.float32(0.5)).max()) for k in range(8)], np.float32)
    imin = np.array([xi[b == k].min() for k in range(8)], np.int32)
    umax = np.array([(xi[b == k] & 0xFFFFFFFF).max() for k in range(8)], np.uint32)
    and_ = -1
    or_ = 0
    xor_ = 0x12345678
    for v in xi:
        and_ &= int(v) | 0x10000
        or_ |= int(v) & 0x0F0F
        xor_ ^= int(v)
    return {"cnt_ptr": Exact(np.array([256], np.int32)), "fsum_ptr": Exact(fsum), "fmax_ptr": Exact(fmax),
            "imin_ptr": Exact(imin), "umax_ptr": Exact(umax), "xchg_ptr": Exact(np.arange(1, 9, dtype=np.int32)),
            "bits_ptr": Exact(np.array([wrap(and_), wrap(or_), wrap(xor_)], np.int32))}


@expect("lock_counter")
def _(i, s):
    def order(got):
        counts = np.bincount(got.astype(np.int64), minlength=64)
        assert (got >= 0).all() and (counts == 4).all(), f"each of 64 programs must appear 4 times: {counts}"
    return {"lock_ptr": Exact(np.zeros(1, np.int32)), "count_ptr": Exact(np.array([256], np.int32)),
            "order_ptr": Custom(order)}


@expect("early_return")
def _(i, s):
    y = np.full(256, -1, np.float32)
    y[:160] = i["x_ptr"][:160] * np.float32(2) + np.float32(8)
    return {"y_ptr": Exact(y)}


@expect("noinline_call")
def _(i, s):
    y = i["x_ptr"].copy()
    for pid in range(4):
        k = pid * 32 + 1
        y[k] = y[k] * (np.float32(pid) + np.float32(0.5)) + np.float32(1)
    return {"y_ptr": Exact(y)}


@expect("loop_ret")
def _(i, s):
    base = sum((k if k <= s["lim"] else 2 * s["lim"]) for k in range(s["n"]))
    return {"out_ptr": Exact(np.array([base + p for p in range(4)], np.int32))}


@expect("while_loop")
def _(i, s):
    def steps(v):
        n = 0
        while v != 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            n += 1
        return n
    return {"out_ptr": Exact(vec(steps, i["x_ptr"]))}


@expect("if_else")
def _(i, s):
    x = i["x_ptr"].reshape(8, 16)
    y = np.where((i["flag_ptr"] > 0)[:, None], x * np.float32(2), x.sum(axis=1, keepdims=True) - x)
    return {"y_ptr": Exact(y.ravel().astype(np.float32))}


@expect("static_loop")
def _(i, s):
    acc = i["x_ptr"].astype(np.float32).sum(axis=0)  # small integers: exact in any order
    for j in range(3):
        acc = acc * np.float32(0.5) + np.float32(j)
    return {"y_ptr": Exact(np.abs(acc))}


@expect("device_print")
def _(i, s):
    return {"y_ptr": Exact(i["x_ptr"] + 1)}


@expect("device_assert")
def _(i, s):
    return {"y_ptr": Exact(i["x_ptr"] + 3)}


@expect("philox")
def _(i, s):
    offs = np.arange(256)
    return {"f_ptr": Exact(philox_rand(s["seed"], offs)), "i_ptr": Exact(philox_randint(s["seed"], offs))}


@expect("grid2d")
def _(i, s):
    py, px = np.meshgrid(np.arange(3), np.arange(5), indexing="ij")
    return {"out_ptr": Exact((px + 100 * py + 10000 * 5 + 1000000 * 3).astype(np.int32))}


@expect("grid3d")
def _(i, s):
    pz, py, px, lane = np.meshgrid(np.arange(4), np.arange(2), np.arange(3), np.arange(4), indexing="ij")
    return {"out_ptr": Exact((px + 10 * py + 100 * pz + 1000 * 24 + lane * 100000).astype(np.int32))}


@expect("map_elementwise")
def _(i, s):
    x, y = i["x_ptr"], i["y_ptr"]
    return {"out_ptr": Exact(np.where(x > y, x - y, (y - x) * (y - x)))}


@expect("block_ptr")
def _(i, s):
    y = i["x_ptr"] * np.float32(2) + np.float32(1)
    cnt = [3 * 16 * 32 - min(16, 40 - 16 * p) * 72 for p in range(3)]
    return {"y_ptr": Exact(y), "cnt_ptr": Exact(np.array(cnt, np.int32))}


@expect("tensor_desc")
def _(i, s):
    return {"b_ptr": Exact(i["a_ptr"] * np.float32(3) - np.float32(1))}


EXPECTED["tensor_desc_sm80"] = EXPECTED["tensor_desc"]


@expect("loop_heavy")
def _(i, s):
    v = i["x_ptr"].copy()
    acc = np.zeros_like(v)
    for _ in range(100):
        v = v * np.float32(0.999) + np.float32(0.001)
        acc = acc + np.where(v > 0.5, v, -v)
    return {"y_ptr": Exact(acc)}


@expect("reduce_heavy")
def _(i, s):
    x = i["x_ptr"].astype(np.float64)
    mag = np.abs(x).sum(axis=1)
    out = np.stack([x.sum(axis=1), x.max(axis=1), (x * x).sum(axis=1)], axis=1)

    def check(got):
        g = got.astype(np.float64)
        tol = np.stack([mag, np.zeros(16), (x * x).sum(axis=1)], axis=1) * 300 * 2.0 ** -24
        _report(np.abs(g - out) > tol, g, out, "out_ptr")
    return {"out_ptr": Custom(check)}


# Edge values (reference §5). Lanes whose GPU result is poison in LLVM (out-of-range float -> 8/16-bit
# int) are left to the GPU ground-truth test, which documents them.


@expect("edge_int")
def _(i, s):
    a, b = i["a_ptr"], i["b_ptr"]
    ua, ub = i["ua_ptr"], i["ub_ptr"]
    rows = [vec(lambda p, q: idiv(p, q)[0], a, b), vec(lambda p, q: idiv(p, q)[1], a, b),
            vec(lambda p, q: wrap(p * q), a, b), vec(lambda p, q: wrap(p + q), a, b), vec(lambda p: p >> 1, a),
            vec(lambda p: idiv(wrap(p + 1), 2)[0], a)]
    urows = [vec(lambda p, q: (p // q) if q else 0xFFFFFFFF, ua, ub, dtype=np.uint32),
             vec(lambda p, q: (p % q) if q else p, ua, ub, dtype=np.uint32)]
    return {"out_ptr": Exact(np.stack(rows)), "uout_ptr": Exact(np.stack(urows))}


@expect("edge_f2i")
def _(i, s):
    x = i["x_ptr"]
    X = x.astype(np.float64)
    i64 = np.array(sat_f2i(x, 64), np.int64)
    # PTX has no 8-bit registers: LLVM converts an i8 result with cvt.rzi.s16/.u16 (saturating at 16
    # bits), and storing the i8 writes the low byte. f.to(uint8).to(int32) reads the whole 16-bit
    # register on the GPU (256.0 -> 256, reference §5), which an i8 value cannot hold: only lanes whose
    # 16-bit result fits a byte are compared there.
    s16 = np.array(sat_f2i(x, 16), np.int64)
    u16 = np.array(sat_f2i(x, 16, signed=False), np.int64)
    return {"i32_ptr": Exact(np.array(sat_f2i(x, 32), np.int32)), "i64_ptr": Exact(i64),
            "i8_ptr": Exact((s16 & 0xFF).astype(np.uint8).view(np.int8)),
            "u8_ptr": Exact(u16.astype(np.int32)).where(u16 < 256),
            "i16_ptr": Exact(s16.astype(np.int16)),
            "u32_ptr": Exact(np.array(sat_f2i(x, 32, signed=False), np.uint32)),
            "t32_ptr": Exact(np.array([wrap(v) for v in i64], np.int32))}


@expect("edge_lowp")
def _(i, s):
    x = i["x_ptr"]
    # f32 -> fp8 saturates to the largest finite value, infinities included (cvt.rn.satfinite; measured
    # on the H200: 70000, 3e9 and +inf give 0x7B = 57344 in e5m2). NaN stays NaN.
    with np.errstate(invalid="ignore"):
        x5 = np.clip(x, np.float32(-57344), np.float32(57344))
        x4 = np.clip(x, np.float32(-448), np.float32(448))
    with np.errstate(over="ignore"):
        h16 = x.astype(np.float16)
    return {"b_ptr": Exact(fd.f32_to_bf16_bits(x), "bf16"), "h_ptr": Exact(h16),
            "hz_ptr": Exact(rtz_f16(x)), "e5_ptr": Exact(fd.f32_to_fp8_bits(x5, "f8e5"), "f8e5"),
            "e4_ptr": Exact(fd.f32_to_fp8_bits(x4, "f8e4nv"), "f8e4nv"),
            # rtz: finite overflow gives the largest finite value, but infinities stay infinite (H200).
            "e5z_ptr": Exact(rtz_fp8(np.where(np.isinf(x), x, x5), "f8e5"), "f8e5")}


@expect("edge_fp8_up")
def _(i, s):
    return {"o5_ptr": Exact(fd.fp8_bits_to_f32(i["e5_ptr"], "f8e5")),
            "o4_ptr": Exact(fd.fp8_bits_to_f32(i["e4_ptr"], "f8e4nv")),
            "oh_ptr": Exact(i["h_ptr"].astype(np.float32)), "ob_ptr": Exact(fd.bf16_bits_to_f32(i["b_ptr"]))}


@expect("edge_float")
def _(i, s):
    x, y = i["x_ptr"], i["y_ptr"]
    X, Y = x.astype(np.float64), y.astype(np.float64)
    with np.errstate(all="ignore"):
        rows = {
            0: Exact(_zmin(x, y, np.fmin(x, y))), 1: Exact(_zmax(x, y, np.fmax(x, y))),
            2: Exact(_zmin(x, y, np.minimum(x, y))), 3: Exact(_zmax(x, y, np.maximum(x, y))),
            4: Exact(gpu_frem(x, y)), 5: Exact(x * y), 6: Exact(x + y), 7: Exact(x / y),
            8: Ulp(X / Y, 2), 9: Exact(np.sqrt(np.abs(x))), 10: Exact(fma_exact(x, y, x)),
            # clamp(x, -1.0, 1.0) matches Triton's clip pattern, lowered on sm_90 to PTX
            # min.xorsign.abs(x, 1.0): magnitude min(|x|, 1) (a NaN operand ignored), sign of x xor sign
            # of 1.0. A (positive) NaN gives 1.0, -0.0 stays -0.0 (measured on the H200).
            11: Exact(np.copysign(np.fmin(np.abs(x), np.float32(1)), x)),
        }
    return {"out_ptr": rows}


def _zmin(x, y, r):
    # IEEE 754-2019 minimum/minimumNumber order -0 below +0 (the GPU does; numpy's fmin need not).
    both0 = (x == 0) & (y == 0)
    return np.where(both0, np.where(np.signbit(x) | np.signbit(y), np.float32(-0.0), np.float32(0.0)), r)


def _zmax(x, y, r):
    both0 = (x == 0) & (y == 0)
    return np.where(both0, np.where(np.signbit(x) & np.signbit(y), np.float32(-0.0), np.float32(0.0)), r)


def gpu_frem(x, y):
    """arith.remf as the GPU computes it (LLVM NVPTX frem lowering, measured on the H200):
    r = fma(-trunc(x / y), y, x) with an IEEE (div.rn) quotient, and r = x whenever |y| is infinite
    (llvm/lib/Target/NVPTX/NVPTXISelLowering.cpp, lowerFREM; so inf % inf is inf, not NaN). Unlike C
    fmod, -3e9 % 3 gives +0 (reference §5) and 3e38 % 10 gives -1.0141205e31 (the quotient is inexact)."""
    x, y = f32(x), f32(y)
    out = []
    with np.errstate(all="ignore"):
        q = np.trunc(x / y)
        for xi, yi, qi in zip(x.ravel(), y.ravel(), q.ravel()):
            if np.isinf(yi):
                out.append(xi)
            else:
                out.append(fma_exact(np.array([-qi], np.float32), np.array([yi], np.float32),
                                     np.array([xi], np.float32))[0])
    return np.array(out, np.float32).reshape(x.shape)


def _tf32_round(a, mode):
    b = f32(a).view(np.uint32).astype(np.uint64)
    if mode == "trunc":
        r = b & 0xFFFFE000
    elif mode == "rna":
        r = (b + 0x1000) & 0xFFFFE000
    else:  # rne
        r = (b + 0xFFF + ((b >> 13) & 1)) & 0xFFFFE000
    return r.astype(np.uint32).view(np.float32)


@expect("edge_tf32")
def _(i, s):
    a = i["a_ptr"]

    def tf32_row(got):
        got = got.reshape(32, 32)
        modes = [m for m in ("rne", "rna", "trunc") if np.array_equal(got.view(np.uint32),
                                                                     _tf32_round(a, m).view(np.uint32))]
        assert modes, "tf32 dot of a @ I is not a rounded to tf32 (RNE, RNA or truncation)"
        assert not np.array_equal(got, a), "tf32 dot did not round its inputs"
    A = a.astype(np.float64)
    mag = np.abs(A)
    return {"out_ptr": {0: Custom(tf32_row), 1: DotTol(A, mag, 2.0 ** -20), 2: Exact(a),
                        3: DotTol(A, mag, 2.0 ** -15)}}


# Fixtures only newer Triton can compile (tests/ttir/triton-3.9/).
@expect("new_ops")
def _(i, s):
    x, y = i["x_ptr"], i["y_ptr"]
    offs = np.arange(32)
    # tt.approx_divf: div.approx.f32 is within 2 ulp for |y| in [2^-126, 2^126] (TritonOps.td, 3.9).
    return {"q_ptr": Ulp(x.astype(np.float64) / y.astype(np.float64), 2),
            "ld_ptr": Exact(np.where(offs < 27, x, np.float32(7.0))),
            "st_ptr": Exact(np.where(offs % 3 != 0, x * np.float32(2.0), np.float32(-1.0)))}
