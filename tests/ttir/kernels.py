"""Triton kernels behind the TTIR fixture corpus (tests/ttir/*.ttir).

Each kernel is small but real, and together they cover every op family of reference §1-§2 and the test
kernels of its Appendix A. `FIXTURES` describes how each fixture is compiled and launched: kernel,
constexprs, grid, and the TTIR arguments in order (buffers with a deterministic generator, scalars with a
value). `generate.py` compiles them to TTIR without a GPU; `tests/gpu/make_ground_truth.py` runs the same
kernels on a GPU; `tests/python/expected.py` computes the expected outputs with numpy/torch.

Keep this file importable without a GPU: it only defines kernels and data.
"""
from __future__ import annotations

import numpy as np
import triton
import triton.language as tl
from triton.language.extra import libdevice

FIXTURES: list[dict] = []


def In(name, dtype, shape, gen="randn", **kw):
    return dict(name=name, kind="ptr", dtype=dtype, shape=list(shape), gen=gen, role="in", **kw)


def Out(name, dtype, shape, gen="zeros", **kw):
    return dict(name=name, kind="ptr", dtype=dtype, shape=list(shape), gen=gen, role="out", **kw)


def InOut(name, dtype, shape, gen="zeros", **kw):
    return dict(name=name, kind="ptr", dtype=dtype, shape=list(shape), gen=gen, role="inout", **kw)


def S(name, dtype, value):
    return dict(name=name, kind="scalar", dtype=dtype, value=value)


def register(name, fn, grid, args, const=None, targets=(90,), debug=False, source=False, num_warps=4,
             note=""):
    """Add a fixture. `targets` lists CUDA capabilities to emit TTIR for: the first one is the
    fixture `<name>.ttir`; others are `<name>_sm<cap>.ttir` variants with the same arguments."""
    FIXTURES.append(dict(name=name, fn=fn, grid=list(grid), args=args, const=dict(const or {}),
                         targets=list(targets), debug=debug, source=source, num_warps=num_warps,
                         note=note))


def f32_bits(values):
    """float values -> list of float32 bit patterns (for edge-value inputs that JSON cannot hold)."""
    return [int(b) for b in np.array(values, dtype=np.float32).view(np.uint32)]


# ----------------------------------------------------------------------------------------------------
# Elementwise basics


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


register("add", add_kernel, [32], [In("x_ptr", "f32", [4096]), In("y_ptr", "f32", [4096]),
                                   Out("out_ptr", "f32", [4096]), S("n", "i32", 4096)],
         const={"BLOCK": 128}, source=True)
# Masked tail: 1000 elements, 8 programs of 128 lanes; out has a sentinel past n that must survive.
register("add_tail", add_kernel, [8], [In("x_ptr", "f32", [1000]), In("y_ptr", "f32", [1000]),
                                       InOut("out_ptr", "f32", [1024], gen="full(-7)"),
                                       S("n", "i32", 1000)],
         const={"BLOCK": 128})


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(y_ptr + row * stride + cols, num / den, mask=mask)


register("softmax", softmax_kernel, [64], [In("x_ptr", "f32", [64, 100], gen="randn*3"),
                                            Out("y_ptr", "f32", [64, 100]), S("n_cols", "i32", 100),
                                            S("stride", "i32", 100)], const={"BLOCK": 128})


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, mean_ptr, rstd_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    y = xc * rstd * w + b
    tl.store(y_ptr + row * N + cols, y.to(tl.float16), mask=mask)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


register("layernorm", layernorm_kernel, [32],
         [In("x_ptr", "f16", [32, 200], gen="randn*2"), In("w_ptr", "f32", [200]), In("b_ptr", "f32", [200]),
          Out("y_ptr", "f16", [32, 200]), Out("mean_ptr", "f32", [32]), Out("rstd_ptr", "f32", [32]),
          S("N", "i32", 200), S("eps", "f32", 1e-5)], const={"BLOCK": 256})


# ----------------------------------------------------------------------------------------------------
# Dot


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        ka = k + rk
        a = tl.load(a_ptr + rm[:, None] * sam + ka[None, :] * sak,
                    mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ka[:, None] * sbk + rn[None, :] * sbn,
                    mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


_MM = dict(M=64, N=48, K=80)
register("matmul_f16", matmul_kernel, [2, 2],
         [In("a_ptr", "f16", [64, 80]), In("b_ptr", "f16", [80, 48]), Out("c_ptr", "f32", [64, 48]),
          S("M", "i32", 64), S("N", "i32", 48), S("K", "i32", 80), S("sam", "i32", 80), S("sak", "i32", 1),
          S("sbk", "i32", 48), S("sbn", "i32", 1), S("scm", "i32", 48), S("scn", "i32", 1)],
         const={"BM": 32, "BN": 32, "BK": 32}, source=True)


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               PREC: tl.constexpr, OUT_F16: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    if OUT_F16:
        c = tl.dot(a, b, out_dtype=tl.float16)
    else:
        c = tl.dot(a, b, input_precision=PREC)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


def _dot_args(dt, out, gen="randn"):
    return [In("a_ptr", dt, [32, 32], gen=gen), In("b_ptr", dt, [32, 32], gen=gen), Out("c_ptr", out, [32, 32])]


_D = dict(M=32, N=32, K=32, OUT_F16=False)
register("dot_f32_tf32", dot_kernel, [1], _dot_args("f32", "f32"), const=dict(_D, PREC="tf32"))
register("dot_f32_ieee", dot_kernel, [1], _dot_args("f32", "f32"), const=dict(_D, PREC="ieee"))
register("dot_f32_tf32x3", dot_kernel, [1], _dot_args("f32", "f32"), const=dict(_D, PREC="tf32x3"))
register("dot_i8", dot_kernel, [1], _dot_args("i8", "i32", gen="randint(-128,128)"),
         const=dict(_D, PREC="tf32"))
register("dot_f8e5", dot_kernel, [1], _dot_args("f8e5", "f32"), const=dict(_D, PREC="tf32"))
register("dot_f16_out_f16", dot_kernel, [1], _dot_args("f16", "f16", gen="uniform(-1,1)"),
         const=dict(_D, PREC="tf32", OUT_F16=True))


@triton.jit
def dot3d_kernel(a_ptr, b_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rb = tl.arange(0, B)
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rb[:, None, None] * (M * K) + rm[None, :, None] * K + rk[None, None, :])
    b = tl.load(b_ptr + rb[:, None, None] * (K * N) + rk[None, :, None] * N + rn[None, None, :])
    c = tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rb[:, None, None] * (M * N) + rm[None, :, None] * N + rn[None, None, :], c)


register("dot_3d", dot3d_kernel, [1], [In("a_ptr", "f32", [2, 16, 32]), In("b_ptr", "f32", [2, 32, 16]),
                                       Out("c_ptr", "f32", [2, 16, 16])],
         const=dict(B=2, M=16, N=16, K=32))


# ----------------------------------------------------------------------------------------------------
# Reductions and scans


@triton.jit
def row_reduce_kernel(x_ptr, sum_ptr, max_ptr, min_ptr, amax_ptr, amin_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
    tl.store(sum_ptr + row, tl.sum(x, axis=0))
    xm = tl.where(mask, x, -float("inf"))
    tl.store(max_ptr + row, tl.max(xm, axis=0))
    tl.store(amax_ptr + row, tl.argmax(xm, axis=0))
    xn = tl.where(mask, x, float("inf"))
    tl.store(min_ptr + row, tl.min(xn, axis=0))
    tl.store(amin_ptr + row, tl.argmin(xn, axis=0))


register("row_reduce", row_reduce_kernel, [16],
         [In("x_ptr", "f32", [16, 50]), Out("sum_ptr", "f32", [16]), Out("max_ptr", "f32", [16]),
          Out("min_ptr", "f32", [16]), Out("amax_ptr", "i32", [16]), Out("amin_ptr", "i32", [16]),
          S("N", "i32", 50)], const={"BLOCK": 64})


@triton.jit
def _mul_combine(a, b):
    return a * b


@triton.jit
def int_reduce_kernel(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr):
    # 2-D tile, reductions along both axes and a user combine function (tl.reduce).
    r = tl.arange(0, R)
    c = tl.arange(0, C)
    x = tl.load(x_ptr + r[:, None] * C + c[None, :])
    tl.store(out_ptr + 0 * R + r, tl.sum(x, axis=1))
    tl.store(out_ptr + 1 * R + r, tl.max(x, axis=1))
    tl.store(out_ptr + 2 * R + r, tl.min(x, axis=1))
    tl.store(out_ptr + 3 * R + r, tl.xor_sum(x, axis=1))
    tl.store(out_ptr + 4 * R + r, tl.reduce(x, 1, _mul_combine))
    tl.store(out_ptr + 5 * R + c, tl.sum(x, axis=0))
    tl.store(out_ptr + 6 * R + r, tl.argmax(x, axis=1))
    tl.store(out_ptr + 7 * R + r, tl.sum(x, axis=None) + r * 0)


register("int_reduce", int_reduce_kernel, [1], [In("x_ptr", "i32", [16, 16], gen="randint(-100000,100000)"),
                                                Out("out_ptr", "i32", [8, 16])], const=dict(R=16, C=16))


@triton.jit
def scan_kernel(x_ptr, xi_ptr, cs_ptr, cp_ptr, csi_ptr, cs0_ptr, R: tl.constexpr, C: tl.constexpr):
    r = tl.arange(0, R)
    c = tl.arange(0, C)
    idx = r[:, None] * C + c[None, :]
    x = tl.load(x_ptr + idx)
    xi = tl.load(xi_ptr + idx)
    tl.store(cs_ptr + idx, tl.cumsum(x, axis=1))
    tl.store(cp_ptr + idx, tl.cumprod(x, axis=1, reverse=True))
    tl.store(csi_ptr + idx, tl.cumsum(xi, axis=1, reverse=True))
    tl.store(cs0_ptr + idx, tl.cumsum(xi, axis=0))


register("scan", scan_kernel, [1], [In("x_ptr", "f32", [16, 16], gen="uniform(0.5,1.5)"),
                                    In("xi_ptr", "i32", [16, 16], gen="randint(-1000,1000)"),
                                    Out("cs_ptr", "f32", [16, 16]), Out("cp_ptr", "f32", [16, 16]),
                                    Out("csi_ptr", "i32", [16, 16]), Out("cs0_ptr", "i32", [16, 16])],
         const=dict(R=16, C=16))


@triton.jit
def histogram_kernel(x_ptr, hist_ptr, n, BLOCK: tl.constexpr, BINS: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    h = tl.histogram(x, BINS, mask=mask)
    tl.store(hist_ptr + tl.arange(0, BINS), h)


register("histogram", histogram_kernel, [1], [In("x_ptr", "i32", [256], gen="randint(0,16)"),
                                              Out("hist_ptr", "i32", [16]), S("n", "i32", 200)],
         const=dict(BLOCK=256, BINS=16))


# ----------------------------------------------------------------------------------------------------
# Shape manipulation


@triton.jit
def gather_kernel(src_ptr, idx_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr):
    r = tl.arange(0, R)
    c = tl.arange(0, C)
    offs = r[:, None] * C + c[None, :]
    src = tl.load(src_ptr + offs)
    idx = tl.load(idx_ptr + offs)
    tl.store(out_ptr + offs, tl.gather(src, idx, axis=1))


register("gather", gather_kernel, [1], [In("src_ptr", "f32", [16, 16]),
                                        In("idx_ptr", "i32", [16, 16], gen="randint(0,16)"),
                                        Out("out_ptr", "f32", [16, 16])], const=dict(R=16, C=16))


@triton.jit
def shape_kernel(x_ptr, y_ptr, t_ptr, j_ptr, p_ptr, s_ptr, r_ptr, cat_ptr):
    r16 = tl.arange(0, 16)
    c8 = tl.arange(0, 8)
    two = tl.arange(0, 2)
    c4 = tl.arange(0, 4)
    offs = r16[:, None] * 8 + c8[None, :]
    x = tl.load(x_ptr + offs)                    # 16x8
    y = tl.load(y_ptr + offs)                    # 16x8
    t = tl.trans(x)                              # 8x16
    tl.store(t_ptr + c8[:, None] * 16 + r16[None, :], t)
    j = tl.join(x, y)                            # 16x8x2
    o3 = r16[:, None, None] * 16 + c8[None, :, None] * 2 + two[None, None, :]
    tl.store(j_ptr + o3, j)
    p = tl.permute(j, (2, 0, 1))                 # 2x16x8
    tl.store(p_ptr + two[:, None, None] * 128 + r16[None, :, None] * 8 + c8[None, None, :], p)
    lo, hi = tl.split(tl.reshape(x, (16, 4, 2)))  # 16x4 each
    tl.store(s_ptr + r16[:, None] * 4 + c4[None, :], lo)
    tl.store(s_ptr + 64 + r16[:, None] * 4 + c4[None, :], hi)
    rs = tl.reshape(x, (8, 16))
    tl.store(r_ptr + c8[:, None] * 16 + r16[None, :], rs)
    cat = tl.cat(tl.reshape(x, (128,)), tl.reshape(y, (128,)), can_reorder=True)
    tl.store(cat_ptr + tl.arange(0, 256), cat)


register("shape_ops", shape_kernel, [1],
         [In("x_ptr", "f32", [16, 8]), In("y_ptr", "f32", [16, 8]), Out("t_ptr", "f32", [8, 16]),
          Out("j_ptr", "f32", [16, 8, 2]), Out("p_ptr", "f32", [2, 16, 8]), Out("s_ptr", "f32", [2, 16, 4]),
          Out("r_ptr", "f32", [8, 16]), Out("cat_ptr", "f32", [256])])


@triton.jit
def select_kernel(x_ptr, y_ptr, z_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    z = tl.load(z_ptr + offs)
    tl.store(out_ptr + 0 * BLOCK + offs, tl.where(x > y, x, y))
    tl.store(out_ptr + 1 * BLOCK + offs, tl.minimum(x, y))
    tl.store(out_ptr + 2 * BLOCK + offs, tl.maximum(x, y))
    tl.store(out_ptr + 3 * BLOCK + offs, tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL))
    tl.store(out_ptr + 4 * BLOCK + offs, tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL))
    tl.store(out_ptr + 5 * BLOCK + offs, tl.clamp(z, -0.5, 0.5))
    tl.store(out_ptr + 6 * BLOCK + offs, tl.where(z > 0, z, 0.0) + tl.where(x != x, 1.0, 0.0))


_NANS = ["nan", 1.0, -2.0, "nan", 0.5, -0.25, 3.0, "inf", -1.5, "-inf", 2.5, 7.0, -3.0, 0.75, 1.25, -8.0]
register("select", select_kernel, [1],
         [In("x_ptr", "f32", [128], gen="values", values=_NANS), In("y_ptr", "f32", [128]),
          In("z_ptr", "f32", [128]), Out("out_ptr", "f32", [7, 128])], const=dict(BLOCK=128))


# ----------------------------------------------------------------------------------------------------
# Math


@triton.jit
def math_kernel(x_ptr, y_ptr, z_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)   # positive
    y = tl.load(y_ptr + offs)   # positive
    z = tl.load(z_ptr + offs)   # signed
    tl.store(out_ptr + 0 * BLOCK + offs, tl.exp(z))
    tl.store(out_ptr + 1 * BLOCK + offs, tl.exp2(z))
    tl.store(out_ptr + 2 * BLOCK + offs, tl.log(x))
    tl.store(out_ptr + 3 * BLOCK + offs, tl.log2(x))
    tl.store(out_ptr + 4 * BLOCK + offs, tl.sqrt(x))
    tl.store(out_ptr + 5 * BLOCK + offs, tl.sqrt_rn(x))
    tl.store(out_ptr + 6 * BLOCK + offs, tl.div_rn(z, y))
    tl.store(out_ptr + 7 * BLOCK + offs, tl.rsqrt(x))
    tl.store(out_ptr + 8 * BLOCK + offs, tl.abs(z))
    tl.store(out_ptr + 9 * BLOCK + offs, tl.floor(z))
    tl.store(out_ptr + 10 * BLOCK + offs, tl.ceil(z))
    tl.store(out_ptr + 11 * BLOCK + offs, tl.erf(z))
    tl.store(out_ptr + 12 * BLOCK + offs, tl.fma(x, y, z))
    tl.store(out_ptr + 13 * BLOCK + offs, tl.sin(z))
    tl.store(out_ptr + 14 * BLOCK + offs, tl.cos(z))
    tl.store(out_ptr + 15 * BLOCK + offs, z / y)
    tl.store(out_ptr + 16 * BLOCK + offs, z % y)
    tl.store(out_ptr + 17 * BLOCK + offs, -z * x - y)


register("math", math_kernel, [1], [In("x_ptr", "f32", [256], gen="uniform(0.01,8)"),
                                    In("y_ptr", "f32", [256], gen="uniform(0.25,4)"),
                                    In("z_ptr", "f32", [256], gen="randn*3"),
                                    Out("out_ptr", "f32", [18, 256])], const=dict(BLOCK=256))


@triton.jit
def libdevice_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)   # in (-0.9, 0.9)
    y = tl.load(y_ptr + offs)   # in (0.5, 3)
    tl.store(out_ptr + 0 * BLOCK + offs, libdevice.tanh(x * 3))
    tl.store(out_ptr + 1 * BLOCK + offs, libdevice.pow(y, x * 4))
    tl.store(out_ptr + 2 * BLOCK + offs, libdevice.atan2(x, y))
    tl.store(out_ptr + 3 * BLOCK + offs, libdevice.expm1(x))
    tl.store(out_ptr + 4 * BLOCK + offs, libdevice.log1p(x))
    tl.store(out_ptr + 5 * BLOCK + offs, libdevice.cbrt(x))
    tl.store(out_ptr + 6 * BLOCK + offs, libdevice.asin(x))
    tl.store(out_ptr + 7 * BLOCK + offs, libdevice.atan(y))
    tl.store(out_ptr + 8 * BLOCK + offs, libdevice.sinh(x))
    tl.store(out_ptr + 9 * BLOCK + offs, libdevice.cosh(x))
    tl.store(out_ptr + 10 * BLOCK + offs, libdevice.erfc(x))
    tl.store(out_ptr + 11 * BLOCK + offs, libdevice.hypot(x, y))
    tl.store(out_ptr + 12 * BLOCK + offs, libdevice.trunc(y * 3 * x))
    tl.store(out_ptr + 13 * BLOCK + offs, libdevice.rint(y * 3 * x))
    tl.store(out_ptr + 14 * BLOCK + offs, libdevice.acos(x))
    tl.store(out_ptr + 15 * BLOCK + offs, libdevice.log10(y))


register("libdevice", libdevice_kernel, [1], [In("x_ptr", "f32", [128], gen="uniform(-0.9,0.9)"),
                                              In("y_ptr", "f32", [128], gen="uniform(0.5,3)"),
                                              Out("out_ptr", "f32", [16, 128])], const=dict(BLOCK=128))


# ----------------------------------------------------------------------------------------------------
# Integers


@triton.jit
def int_signed_kernel(a_ptr, b_ptr, s_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)   # nonzero
    s = tl.load(s_ptr + offs)   # 0..31
    tl.store(out_ptr + 0 * BLOCK + offs, a // b)
    tl.store(out_ptr + 1 * BLOCK + offs, a % b)
    tl.store(out_ptr + 2 * BLOCK + offs, a >> s)
    tl.store(out_ptr + 3 * BLOCK + offs, a << s)
    tl.store(out_ptr + 4 * BLOCK + offs, a & b)
    tl.store(out_ptr + 5 * BLOCK + offs, a | b)
    tl.store(out_ptr + 6 * BLOCK + offs, a ^ b)
    tl.store(out_ptr + 7 * BLOCK + offs, ~a)
    tl.store(out_ptr + 8 * BLOCK + offs, tl.cdiv(a, b))
    tl.store(out_ptr + 9 * BLOCK + offs, a * b)
    tl.store(out_ptr + 10 * BLOCK + offs, a + b * 65536)
    tl.store(out_ptr + 11 * BLOCK + offs, tl.abs(a))
    tl.store(out_ptr + 12 * BLOCK + offs, tl.minimum(a, b))
    tl.store(out_ptr + 13 * BLOCK + offs, tl.maximum(a, b))
    tl.store(out_ptr + 14 * BLOCK + offs, (a < b).to(tl.int32) + (a == b).to(tl.int32) * 2)
    tl.store(out_ptr + 15 * BLOCK + offs, a - b)


register("int_signed", int_signed_kernel, [1],
         [In("a_ptr", "i32", [128], gen="randint(-2000000000,2000000000)"),
          In("b_ptr", "i32", [128], gen="values",
             values=[1, -1, 7, -7, 3, 100000, -65536, 2, 13, -5, 2147483647, -2147483648, 31, -1000, 9, 65535]),
          In("s_ptr", "i32", [128], gen="randint(0,32)"), Out("out_ptr", "i32", [16, 128])],
         const=dict(BLOCK=128))


@triton.jit
def int_unsigned_kernel(a_ptr, b_ptr, s_ptr, out_ptr, f_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)   # nonzero
    s = tl.load(s_ptr + offs)
    tl.store(out_ptr + 0 * BLOCK + offs, a // b)
    tl.store(out_ptr + 1 * BLOCK + offs, a % b)
    tl.store(out_ptr + 2 * BLOCK + offs, a >> s)
    tl.store(out_ptr + 3 * BLOCK + offs, tl.umulhi(a, b))
    tl.store(out_ptr + 4 * BLOCK + offs, tl.maximum(a, b))
    tl.store(out_ptr + 5 * BLOCK + offs, tl.minimum(a, b))
    tl.store(out_ptr + 6 * BLOCK + offs, (a < b).to(tl.uint32))
    tl.store(out_ptr + 7 * BLOCK + offs, tl.cdiv(a, b))
    tl.store(f_ptr + offs, a.to(tl.float32))


register("int_unsigned", int_unsigned_kernel, [1],
         [In("a_ptr", "u32", [128], gen="randint(0,4294967296)"),
          In("b_ptr", "u32", [128], gen="values",
             values=[1, 4294967295, 7, 2147483648, 3, 100000, 65536, 2, 13, 5, 2147483647, 4000000000, 31, 1000]),
          In("s_ptr", "u32", [128], gen="randint(0,32)"), Out("out_ptr", "u32", [8, 128]),
          Out("f_ptr", "f32", [128])], const=dict(BLOCK=128))


@triton.jit
def i64_kernel(x_ptr, y_ptr, out_ptr, stride, BLOCK: tl.constexpr):
    # i64 offsets: the row offset is computed in int64 (pid.to(int64) * stride).
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * stride + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, cache_modifier=".cg")
    y = tl.load(y_ptr + offs, eviction_policy="evict_last") + tl.load(y_ptr + offs, volatile=True) * 0
    big = x.to(tl.int64) * 3000000000 + y
    tl.store(out_ptr + offs, big // 7 - (big >> 3) + (big % 1000003), cache_modifier=".cs")


register("i64_offsets", i64_kernel, [4], [In("x_ptr", "i32", [4, 64], gen="randint(-100000,100000)"),
                                          In("y_ptr", "i64", [4, 64], gen="randint(-4000000000000,4000000000000)"),
                                          Out("out_ptr", "i64", [4, 64]), S("stride", "i64", 64)],
         const=dict(BLOCK=64))


# ----------------------------------------------------------------------------------------------------
# Casts


@triton.jit
def cast_kernel(x_ptr, h_ptr, b_ptr, e5_ptr, e4_ptr, hz_ptr, i8_ptr, i32_ptr, i64_ptr, bits_ptr, back_ptr,
                BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    h = x.to(tl.float16)
    tl.store(h_ptr + offs, h)
    bf = x.to(tl.bfloat16)
    tl.store(b_ptr + offs, bf)
    e5 = x.to(tl.float8e5)
    tl.store(e5_ptr + offs, e5)
    e4 = x.to(tl.float8e4nv)
    tl.store(e4_ptr + offs, e4)
    tl.store(hz_ptr + offs, x.to(tl.float16, fp_downcast_rounding="rtz"))
    tl.store(i8_ptr + offs, (x * 0.25).to(tl.int8))
    tl.store(i32_ptr + offs, (x * 1000.0).to(tl.int32))
    tl.store(i64_ptr + offs, (x * 1e7).to(tl.int64))
    tl.store(bits_ptr + offs, x.to(tl.int32, bitcast=True) ^ 0x55)
    # widen back: f16/bf16/fp8 -> f32 and int -> float, summed row by row
    tl.store(back_ptr + 0 * BLOCK + offs, h.to(tl.float32))
    tl.store(back_ptr + 1 * BLOCK + offs, bf.to(tl.float32))
    tl.store(back_ptr + 2 * BLOCK + offs, e5.to(tl.float32))
    tl.store(back_ptr + 3 * BLOCK + offs, e4.to(tl.float32))
    tl.store(back_ptr + 4 * BLOCK + offs, (x * 1000.0).to(tl.int32).to(tl.float32))
    tl.store(back_ptr + 5 * BLOCK + offs, (x.to(tl.int32, bitcast=True) & 0x7FFFFFFF).to(tl.float32, bitcast=True))


register("casts", cast_kernel, [1],
         [In("x_ptr", "f32", [256], gen="randn*60"), Out("h_ptr", "f16", [256]), Out("b_ptr", "bf16", [256]),
          Out("e5_ptr", "f8e5", [256]), Out("e4_ptr", "f8e4nv", [256]), Out("hz_ptr", "f16", [256]),
          Out("i8_ptr", "i8", [256]), Out("i32_ptr", "i32", [256]), Out("i64_ptr", "i64", [256]),
          Out("bits_ptr", "i32", [256]), Out("back_ptr", "f32", [6, 256])], const=dict(BLOCK=256))


# ----------------------------------------------------------------------------------------------------
# Atomics


@triton.jit
def atomics_kernel(x_ptr, xi_ptr, cnt_ptr, fsum_ptr, fmax_ptr, imin_ptr, umax_ptr, xchg_ptr, bits_ptr,
                   BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)          # f32, small integers in floats (exact sums)
    xi = tl.load(xi_ptr + offs)        # i32
    bucket = offs % 8
    tl.atomic_add(cnt_ptr + bucket * 0, 1)
    tl.atomic_add(fsum_ptr + bucket, x, sem="release", scope="sys")
    tl.atomic_max(fmax_ptr + bucket, x * 0.5)
    tl.atomic_min(imin_ptr + bucket, xi, sem="relaxed", scope="cta")
    tl.atomic_max(umax_ptr + bucket, xi.to(tl.uint32, bitcast=True))
    tl.atomic_xchg(xchg_ptr + pid, pid + 1)
    tl.atomic_and(bits_ptr + 0 + bucket * 0, xi | 0x10000)
    tl.atomic_or(bits_ptr + 1 + bucket * 0, xi & 0x0F0F)
    tl.atomic_xor(bits_ptr + 2 + bucket * 0, xi)


register("atomics", atomics_kernel, [8],
         [In("x_ptr", "f32", [256], gen="randint(-50,50)"), In("xi_ptr", "i32", [256], gen="randint(-1000000,1000000)"),
          InOut("cnt_ptr", "i32", [1]), InOut("fsum_ptr", "f32", [8]), InOut("fmax_ptr", "f32", [8], gen="full(-1000)"),
          InOut("imin_ptr", "i32", [8], gen="full(2147483647)"), InOut("umax_ptr", "u32", [8]),
          InOut("xchg_ptr", "i32", [8], gen="full(-1)"),
          InOut("bits_ptr", "i32", [3], gen="values", values=[-1, 0, 0x12345678])],
         const=dict(BLOCK=32))


@triton.jit
def lock_counter_kernel(lock_ptr, count_ptr, order_ptr, ITERS: tl.constexpr):
    # A counter protected by a spin lock built with atomic_cas, incremented by every program.
    pid = tl.program_id(0)
    for i in range(ITERS):
        while tl.atomic_cas(lock_ptr, 0, 1) == 1:
            pass
        c = tl.load(count_ptr, volatile=True)
        tl.store(count_ptr, c + 1)
        tl.store(order_ptr + c, pid)
        tl.atomic_xchg(lock_ptr, 0)


register("lock_counter", lock_counter_kernel, [64],
         [InOut("lock_ptr", "i32", [1]), InOut("count_ptr", "i32", [1]), Out("order_ptr", "i32", [256], gen="full(-1)")],
         const=dict(ITERS=4))


# ----------------------------------------------------------------------------------------------------
# Control flow


@triton.jit
def early_return_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid * BLOCK >= n:
        return
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, x * 2.0 + tl.num_programs(0))


register("early_return", early_return_kernel, [8], [In("x_ptr", "f32", [256]),
                                                     InOut("y_ptr", "f32", [256], gen="full(-1)"),
                                                     S("n", "i32", 160)], const=dict(BLOCK=32))


@triton.jit(noinline=True)
def _scale_first(ptr, i, s):
    # noinline helpers take scalars only; this one stays a tt.func private plus tt.call.
    v = tl.load(ptr + i)
    tl.store(ptr + i, v * s + 1.0)


@triton.jit
def noinline_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, x)
    _scale_first(y_ptr, pid * BLOCK + 1, pid.to(tl.float32) + 0.5)


register("noinline_call", noinline_kernel, [4], [In("x_ptr", "f32", [128]), Out("y_ptr", "f32", [128])],
         const=dict(BLOCK=32))


@triton.jit
def _clip_step(i, lim):
    if i > lim:
        return lim * 2
    return i


@triton.jit
def loop_ret_kernel(out_ptr, n, lim):
    # A helper with an early return called inside a loop stays a tt.call (reference §0.3).
    acc = 0
    for i in range(n):
        acc += _clip_step(i, lim)
    tl.store(out_ptr + tl.program_id(0), acc + tl.program_id(0))


register("loop_ret", loop_ret_kernel, [4], [Out("out_ptr", "i32", [4]), S("n", "i32", 50), S("lim", "i32", 20)])


@triton.jit
def collatz_kernel(x_ptr, out_ptr):
    # while loop with a data-dependent trip count and scalar if/else (scf.while, scf.if).
    pid = tl.program_id(0)
    v = tl.load(x_ptr + pid)
    steps = 0
    while v != 1:
        if v % 2 == 0:
            v = v // 2
        else:
            v = 3 * v + 1
        steps += 1
    tl.store(out_ptr + pid, steps)


register("while_loop", collatz_kernel, [32], [In("x_ptr", "i32", [32], gen="randint(1,2000)"),
                                               Out("out_ptr", "i32", [32])])


@triton.jit
def if_else_kernel(x_ptr, flag_ptr, y_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    f = tl.load(flag_ptr + pid)
    x = tl.load(x_ptr + offs)
    if f > 0:
        y = x * 2.0
    else:
        y = tl.sum(x, axis=0) - x
    tl.store(y_ptr + offs, y)


register("if_else", if_else_kernel, [8], [In("x_ptr", "f32", [128], gen="randint(-20,20)"),
                                          In("flag_ptr", "i32", [8], gen="values", values=[1, 0, -3, 5, 1, 1, 0, 2]),
                                          Out("y_ptr", "f32", [128])], const=dict(BLOCK=16))


@triton.jit
def static_loop_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # tl.range with pipelining/unroll hints, static_range and a ternary with a tensor condition.
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    tl.assume(n > 0)
    offs = tl.max_contiguous(tl.multiple_of(offs, 8), 8)
    for i in tl.range(0, n, 1, num_stages=2, loop_unroll_factor=2):
        acc += tl.load(x_ptr + i * BLOCK + offs)
    tl.debug_barrier()
    for j in tl.static_range(3):
        acc = acc * 0.5 + j
    acc = tl.where(acc > 0, acc, -acc) if BLOCK > 8 else acc
    tl.store(y_ptr + offs, acc)


register("static_loop", static_loop_kernel, [1], [In("x_ptr", "f32", [7, 32], gen="randint(-8,8)"),
                                                  Out("y_ptr", "f32", [32]), S("n", "i32", 7)],
         const=dict(BLOCK=32))


@triton.jit
def print_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.device_print("xval", x)
    tl.device_print("xhex", x, hex=True)
    tl.store(y_ptr + offs, x + 1)


register("device_print", print_kernel, [1], [In("x_ptr", "i32", [8], gen="values",
                                                values=[0, 1, 2, 3, 42, -5, 255, 1000]),
                                             Out("y_ptr", "i32", [8])], const=dict(BLOCK=8))


@triton.jit
def assert_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.device_assert(x >= 0, "x must be non-negative")
    tl.store(y_ptr + offs, x + 3)


register("device_assert", assert_kernel, [2], [In("x_ptr", "i32", [64], gen="randint(0,1000)"),
                                                Out("y_ptr", "i32", [64])], const=dict(BLOCK=32), debug=True)
# Same kernel, an input that violates the assertion at index 37.
register("device_assert_fail", assert_kernel, [2],
         [In("x_ptr", "i32", [64], gen="values", values=[1] * 37 + [-4] + [2] * 26), Out("y_ptr", "i32", [64])],
         const=dict(BLOCK=32), debug=True)


@triton.jit
def philox_kernel(f_ptr, i_ptr, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(f_ptr + offs, tl.rand(seed, offs))
    tl.store(i_ptr + offs, tl.randint(seed, offs))


register("philox", philox_kernel, [4], [Out("f_ptr", "f32", [256]), Out("i_ptr", "i32", [256]),
                                        S("seed", "i32", 1234567)], const=dict(BLOCK=64))


# ----------------------------------------------------------------------------------------------------
# Grids


@triton.jit
def grid2d_kernel(out_ptr):
    px = tl.program_id(0)
    py = tl.program_id(1)
    nx = tl.num_programs(0)
    ny = tl.num_programs(1)
    tl.store(out_ptr + py * nx + px, px + 100 * py + 10000 * nx + 1000000 * ny)


register("grid2d", grid2d_kernel, [5, 3], [Out("out_ptr", "i32", [3, 5])])


@triton.jit
def grid3d_kernel(out_ptr, BLOCK: tl.constexpr):
    px = tl.program_id(0)
    py = tl.program_id(1)
    pz = tl.program_id(2)
    nx = tl.num_programs(0)
    ny = tl.num_programs(1)
    nz = tl.num_programs(2)
    lin = (pz * ny + py) * nx + px
    offs = lin * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, px + 10 * py + 100 * pz + 1000 * (nx * ny * nz) + tl.arange(0, BLOCK) * 100000)


register("grid3d", grid3d_kernel, [3, 2, 4], [Out("out_ptr", "i32", [4, 2, 3, 4])], const=dict(BLOCK=4))


# ----------------------------------------------------------------------------------------------------
# map_elementwise


@triton.jit
def _absdiff_or_sq(x, y):
    if x > y:
        return x - y
    else:
        return (y - x) * (y - x)


@triton.jit
def map_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, tl.map_elementwise(_absdiff_or_sq, x, y))


register("map_elementwise", map_kernel, [1], [In("x_ptr", "f32", [64], gen="randint(-10,10)"),
                                              In("y_ptr", "f32", [64], gen="randint(-10,10)"),
                                              Out("out_ptr", "f32", [64])], const=dict(BLOCK=64))


# ----------------------------------------------------------------------------------------------------
# Block pointers and tensor descriptors


@triton.jit
def block_ptr_kernel(x_ptr, y_ptr, cnt_ptr, M, N, sm, sn, BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    p = tl.make_block_ptr(x_ptr, shape=(M, N), strides=(sm, sn), offsets=(pid * BM, 0),
                          block_shape=(BM, BN), order=(1, 0))
    q = tl.make_block_ptr(y_ptr, shape=(M, N), strides=(sm, sn), offsets=(pid * BM, 0),
                          block_shape=(BM, BN), order=(1, 0))
    nans = 0
    for j in range(0, N, BN):
        v = tl.load(p, boundary_check=(0, 1), padding_option="nan")
        nans += tl.sum(tl.where(v != v, 1, 0))
        tl.store(q, v * 2.0 + 1.0, boundary_check=(0, 1))
        p = tl.advance(p, (0, BN))
        q = tl.advance(q, (0, BN))
    tl.store(cnt_ptr + pid, nans)


register("block_ptr", block_ptr_kernel, [3],
         [In("x_ptr", "f32", [40, 72]), Out("y_ptr", "f32", [40, 72]), Out("cnt_ptr", "i32", [3]),
          S("M", "i32", 40), S("N", "i32", 72), S("sm", "i32", 72), S("sn", "i32", 1)],
         const=dict(BM=16, BN=32), source=True)


@triton.jit
def tensor_desc_kernel(a_ptr, b_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    da = tl.make_tensor_descriptor(a_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    db = tl.make_tensor_descriptor(b_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    v = da.load([pid_m * BM, pid_n * BN])
    db.store([pid_m * BM, pid_n * BN], v * 3.0 - 1.0)


register("tensor_desc", tensor_desc_kernel, [3, 2],
         [In("a_ptr", "f32", [40, 48]), Out("b_ptr", "f32", [40, 48]), S("M", "i32", 40), S("N", "i32", 48)],
         const=dict(BM=16, BN=32), targets=(90, 80), source=True)


# ----------------------------------------------------------------------------------------------------
# Edge values (reference §5): the GPU ground-truth corpus. Expected values in the Python tests come
# from the measured table where it gives them; the rest is checked against the GPU ground truth only.


@triton.jit
def edge_int_kernel(a_ptr, b_ptr, ua_ptr, ub_ptr, out_ptr, uout_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    ua = tl.load(ua_ptr + offs)
    ub = tl.load(ub_ptr + offs)
    tl.store(out_ptr + 0 * BLOCK + offs, a // b)
    tl.store(out_ptr + 1 * BLOCK + offs, a % b)
    tl.store(out_ptr + 2 * BLOCK + offs, a * b)
    tl.store(out_ptr + 3 * BLOCK + offs, a + b)
    tl.store(out_ptr + 4 * BLOCK + offs, a >> 1)
    tl.store(out_ptr + 5 * BLOCK + offs, tl.cdiv(a, 2))
    tl.store(uout_ptr + 0 * BLOCK + offs, ua // ub)
    tl.store(uout_ptr + 1 * BLOCK + offs, ua % ub)


_IMIN, _IMAX = -2147483648, 2147483647
register("edge_int", edge_int_kernel, [1],
         [In("a_ptr", "i32", [16], gen="values", values=[-7, 7, 5, 5, _IMIN, _IMIN, 1000000, 7, _IMAX, -7, 0, -1, 9, _IMIN, -9, 3]),
          In("b_ptr", "i32", [16], gen="values", values=[2, -2, 0, 0, -1, -1, 1000000, _IMAX, 1, 2, 0, 0, -3, 1, 4, -1]),
          In("ua_ptr", "u32", [16], gen="values", values=[7, 4294967295, 5, 0, 2147483648, 100, 3, 1, 9, 10, 11, 12, 13, 14, 15, 16]),
          In("ub_ptr", "u32", [16], gen="values", values=[2, 3, 0, 0, 4294967295, 7, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0]),
          Out("out_ptr", "i32", [6, 16]), Out("uout_ptr", "u32", [2, 16])], const=dict(BLOCK=16))


@triton.jit
def edge_f2i_kernel(x_ptr, i32_ptr, i64_ptr, i8_ptr, u8_ptr, i16_ptr, u32_ptr, t32_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(i32_ptr + offs, x.to(tl.int32))
    tl.store(i64_ptr + offs, x.to(tl.int64))
    tl.store(i8_ptr + offs, x.to(tl.int8))
    tl.store(u8_ptr + offs, x.to(tl.uint8).to(tl.int32))
    tl.store(i16_ptr + offs, x.to(tl.int16))
    tl.store(u32_ptr + offs, x.to(tl.uint32))
    tl.store(t32_ptr + offs, x.to(tl.int64).to(tl.int32))


_F2I = [3e9, -3e9, "nan", "inf", "-inf", 1.5, -1.5, 2.5, -2.5, 255.7, 256.0, 65504.0, -1.0, -128.5, 127.9, 1e20,
        -1e20, 4294967296.0, 2147483520.0, -2147483648.0, 0.0, -0.0, 1e-40, 32767.9, -32769.0, 100.99, 3e38,
        -3e38, 0.999, -0.999, 9.2e18, -9.3e18]
register("edge_f2i", edge_f2i_kernel, [1],
         [In("x_ptr", "f32", [32], gen="bits", bits=f32_bits([float(v) for v in _F2I])),
          Out("i32_ptr", "i32", [32]), Out("i64_ptr", "i64", [32]), Out("i8_ptr", "i8", [32]),
          Out("u8_ptr", "i32", [32]), Out("i16_ptr", "i16", [32]), Out("u32_ptr", "u32", [32]),
          Out("t32_ptr", "i32", [32])], const=dict(BLOCK=32))


@triton.jit
def edge_lowp_kernel(x_ptr, b_ptr, h_ptr, hz_ptr, e5_ptr, e4_ptr, e5z_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(b_ptr + offs, x.to(tl.bfloat16))
    tl.store(h_ptr + offs, x.to(tl.float16))
    tl.store(hz_ptr + offs, x.to(tl.float16, fp_downcast_rounding="rtz"))
    tl.store(e5_ptr + offs, x.to(tl.float8e5))
    tl.store(e4_ptr + offs, x.to(tl.float8e4nv))
    tl.store(e5z_ptr + offs, x.to(tl.float8e5, fp_downcast_rounding="rtz"))


_LOWP = [255.7, 0.1, 65504.0, 70000.0, 3e9, -3e9, 1e-8, "nan", "inf", "-inf", -0.0, 65520.0, 65519.0, 1e-5, 6e-8, 3e-8,
         448.0, 464.0, 500.0, -1000.0, 57344.0, 61440.0, 1e5, 1.5e-5, 0.001953125, 1.0009765625, 1.00048828125,
         -1.00146484375, 2.0 ** -14, 2.0 ** -24, 2.0 ** -25, 2.0 ** -26, 1.1754942e-38, 1e-45, 3.3895314e38, -3.4e38,
         2.0 ** -16, 2.0 ** -17, 2.0 ** -9, 2.0 ** -10, 0.0625 * 1.0625, 240.0, 248.0, 0.01171875, 0.013671875, 1.125, 1.0625, 1.1875,
         -0.3, 3.14159265, 1e10, -1e-10, 2.5, 3.5, 1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -9, 7.0, 9.0, 17.0, 33.0,
         1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11, 2049.0, 4097.0]
register("edge_lowp", edge_lowp_kernel, [1],
         [In("x_ptr", "f32", [64], gen="bits", bits=f32_bits([float(v) for v in _LOWP])),
          Out("b_ptr", "bf16", [64]), Out("h_ptr", "f16", [64]), Out("hz_ptr", "f16", [64]),
          Out("e5_ptr", "f8e5", [64]), Out("e4_ptr", "f8e4nv", [64]), Out("e5z_ptr", "f8e5", [64])],
         const=dict(BLOCK=64))


@triton.jit
def edge_fp8_up_kernel(e5_ptr, e4_ptr, h_ptr, b_ptr, o5_ptr, o4_ptr, oh_ptr, ob_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    e5 = tl.load(e5_ptr + offs)
    e4 = tl.load(e4_ptr + offs)
    tl.store(o5_ptr + offs, e5.to(tl.float32))
    tl.store(o4_ptr + offs, e4.to(tl.float32))
    tl.store(oh_ptr + offs, tl.load(h_ptr + offs).to(tl.float32))
    tl.store(ob_ptr + offs, tl.load(b_ptr + offs).to(tl.float32))


register("edge_fp8_up", edge_fp8_up_kernel, [1],
         [In("e5_ptr", "f8e5", [256], gen="arange_bits"), In("e4_ptr", "f8e4nv", [256], gen="arange_bits"),
          In("h_ptr", "f16", [256], gen="bits", bits=[0x0000, 0x0001, 0x03FF, 0x0400, 0x3C00, 0x7BFF, 0x7C00, 0xFC00,
                                                      0x7E00, 0x8001, 0x3555, 0xC000, 0x7C01, 0x0200, 0x8400, 0x5640]),
          In("b_ptr", "bf16", [256], gen="bits", bits=[0x0000, 0x0001, 0x007F, 0x0080, 0x3F80, 0x7F7F, 0x7F80, 0xFF80,
                                                       0x7FC0, 0x8001, 0x3EAB, 0xC000, 0x7F81, 0x4049, 0x8080, 0x1234]),
          Out("o5_ptr", "f32", [256]), Out("o4_ptr", "f32", [256]), Out("oh_ptr", "f32", [256]),
          Out("ob_ptr", "f32", [256])], const=dict(BLOCK=256))


@triton.jit
def edge_float_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + 0 * BLOCK + offs, tl.minimum(x, y))
    tl.store(out_ptr + 1 * BLOCK + offs, tl.maximum(x, y))
    tl.store(out_ptr + 2 * BLOCK + offs, tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL))
    tl.store(out_ptr + 3 * BLOCK + offs, tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL))
    tl.store(out_ptr + 4 * BLOCK + offs, x % y)
    tl.store(out_ptr + 5 * BLOCK + offs, x * y)
    tl.store(out_ptr + 6 * BLOCK + offs, x + y)
    tl.store(out_ptr + 7 * BLOCK + offs, tl.div_rn(x, y))
    tl.store(out_ptr + 8 * BLOCK + offs, x / y)
    tl.store(out_ptr + 9 * BLOCK + offs, tl.sqrt_rn(tl.abs(x)))
    tl.store(out_ptr + 10 * BLOCK + offs, tl.fma(x, y, x))
    tl.store(out_ptr + 11 * BLOCK + offs, tl.clamp(x, -1.0, 1.0))


_EX = ["nan", 0.0, "nan", -0.0, 1.0, -3e9, -1.5, 5.0, "inf", 1e-45, 1e-40, -1e-39, 1.17549435e-38, 3e38, 0.0, 7.0,
       -7.5, "-inf", 2.0, 0.1, 1e-38, -0.0, 6.0, 1.0]
_EY = [0.0, "nan", "nan", 0.0, "nan", 3.0, 3.0, -3.0, 2.0, 2.0, 1e-3, 0.5, 0.5, 10.0, 0.0, 0.0,
       "inf", 5.0, "-inf", 3.0, 1e-7, 0.0, -4.0, 3.0]
register("edge_float", edge_float_kernel, [1],
         [In("x_ptr", "f32", [32], gen="bits", bits=f32_bits([float(v) for v in _EX + _EX[:8]])),
          In("y_ptr", "f32", [32], gen="bits", bits=f32_bits([float(v) for v in _EY + _EY[:8]])),
          Out("out_ptr", "f32", [12, 32])], const=dict(BLOCK=32))


@triton.jit
def edge_tf32_kernel(a_ptr, eye_ptr, out_ptr, N: tl.constexpr):
    # a @ I shows how the GPU rounds each f32 input to tf32 (and what the 3-pass emulation keeps).
    r = tl.arange(0, N)
    offs = r[:, None] * N + r[None, :]
    a = tl.load(a_ptr + offs)
    e = tl.load(eye_ptr + offs)
    tl.store(out_ptr + 0 * N * N + offs, tl.dot(a, e, input_precision="tf32"))
    tl.store(out_ptr + 1 * N * N + offs, tl.dot(a, e, input_precision="tf32x3"))
    tl.store(out_ptr + 2 * N * N + offs, tl.dot(a, e, input_precision="ieee"))
    tl.store(out_ptr + 3 * N * N + offs, tl.dot(a, e, input_precision="bf16x3"))


_TF = [1.0 + 2.0 ** -11, 1.0 + 2.0 ** -12, 1.0 + 3 * 2.0 ** -12, 1.0 + 2.0 ** -10 + 2.0 ** -11, -(1.0 + 2.0 ** -11),
       1.0 + 2.0 ** -11 + 2.0 ** -20, 3.14159265, -2.71828183, 1e-3, 0.1, 1.0 - 2.0 ** -24, 2.0 ** 100 * 1.00048828125,
       1e-30, 5.0, -0.333333343, 7.00390625]
register("edge_tf32", edge_tf32_kernel, [1],
         [In("a_ptr", "f32", [32, 32], gen="bits", bits=f32_bits(_TF)), In("eye_ptr", "f32", [32, 32], gen="eye"),
          Out("out_ptr", "f32", [4, 32, 32])], const=dict(N=32))


# ----------------------------------------------------------------------------------------------------
# Benchmark-shaped kernels (small fixture sizes; bench/run.py compiles them at benchmark sizes)


@triton.jit
def loop_heavy_kernel(x_ptr, y_ptr, ITERS: tl.constexpr, BLOCK: tl.constexpr):
    # Many small iterations on a tiny tile: measures per-op dispatch cost.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(ITERS):
        v = v * 0.999 + 0.001
        acc += tl.where(v > 0.5, v, -v)
    tl.store(y_ptr + offs, acc)


register("loop_heavy", loop_heavy_kernel, [4], [In("x_ptr", "f32", [64], gen="uniform(0,1)"),
                                                Out("y_ptr", "f32", [64])], const=dict(ITERS=100, BLOCK=16))


@triton.jit
def reduce_heavy_kernel(x_ptr, out_ptr, N, BR: tl.constexpr, BC: tl.constexpr):
    # Column-tile loop with several reductions per tile: row sum, row max, sum of squares.
    rows = tl.program_id(0) * BR + tl.arange(0, BR)
    cols = tl.arange(0, BC)
    s = tl.zeros((BR,), dtype=tl.float32)
    m = tl.full((BR,), -float("inf"), dtype=tl.float32)
    q = tl.zeros((BR,), dtype=tl.float32)
    for c0 in range(0, N, BC):
        x = tl.load(x_ptr + rows[:, None] * N + (c0 + cols)[None, :])
        s += tl.sum(x, axis=1)
        m = tl.maximum(m, tl.max(x, axis=1))
        q += tl.sum(x * x, axis=1)
    tl.store(out_ptr + rows * 3 + 0, s)
    tl.store(out_ptr + rows * 3 + 1, m)
    tl.store(out_ptr + rows * 3 + 2, q)


register("reduce_heavy", reduce_heavy_kernel, [2], [In("x_ptr", "f32", [16, 256]), Out("out_ptr", "f32", [16, 3]),
                                                    S("N", "i32", 256)], const=dict(BR=8, BC=64))


@triton.jit
def inline_asm_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    # Inline PTX cannot run on the CPU: tilescope must refuse it with a located message.
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(y_ptr + offs, y)


register("inline_asm", inline_asm_kernel, [1], [In("x_ptr", "i32", [32], gen="arange"), Out("y_ptr", "i32", [32])],
         const=dict(BLOCK=32), note="mov.b32 through the inline PTX evaluator (README, Inline PTX): y = x")


# ----------------------------------------------------------------------------------------------------
# Kernels that need a newer Triton. Defined at the end of the file so that adding them moves no line
# of the kernels above (their TTIR locations, and so the committed corpus, stay the same).
# Fixtures whose kernels use API that the installed Triton lacks are kept out of FIXTURES (so that
# every user of FIXTURES, such as the GPU ground-truth script, sees only kernels that compile);
# generate.py lists them as skipped for that version.
NOT_AVAILABLE: list[dict] = []


def _triton_version() -> tuple[int, int]:
    return tuple(int(x) for x in triton.__version__.split(".")[:2])


def register_newer(min_triton, name, fn, grid, args, **kw):
    """register() for a kernel that needs Triton >= min_triton (major, minor)."""
    if _triton_version() < tuple(min_triton):
        NOT_AVAILABLE.append(dict(name=name, why_not=f"needs triton >= {min_triton[0]}.{min_triton[1]} "
                                                     f"({kw.get('note', '')})"))
        return
    register(name, fn, grid, args, **kw)


try:  # grid dependency control helpers; in 3.9 they print tt.grid_dependency_* (inline PTX before)
    from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait
except ImportError:  # older Triton: the kernel using them is not registered there
    gdc_launch_dependents = gdc_wait = None


# ----------------------------------------------------------------------------------------------------
# Ops that only newer Triton prints (TritonOps.td of the 3.9.0 wheel): tt.approx_divf
# (tl.fdiv(approx=True)), tt.atomic_load / tt.atomic_store, tt.grid_dependency_wait /
# tt.grid_dependency_launch_dependents (tl.extra.cuda.gdc_*, inline PTX before), tt.atomic_poll.


@triton.jit
def new_ops_kernel(x_ptr, y_ptr, q_ptr, ld_ptr, st_ptr, BLOCK: tl.constexpr):
    gdc_wait()
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(q_ptr + offs, tl.fdiv(x, y, approx=True))
    m = offs < BLOCK - 5
    a = tl.atomic_load(x_ptr + offs, mask=m, sem="relaxed")
    tl.store(ld_ptr + offs, tl.where(m, a, 7.0))
    tl.atomic_store(st_ptr + offs, x * 2.0, mask=offs % 3 != 0)
    gdc_launch_dependents()


register_newer((3, 9), "new_ops", new_ops_kernel, [1], [In("x_ptr", "f32", [32]), In("y_ptr", "f32", [32], gen="uniform(0.5,4)"),
                                          Out("q_ptr", "f32", [32]), Out("ld_ptr", "f32", [32]),
                                          InOut("st_ptr", "f32", [32], gen="full(-1)")],
         const=dict(BLOCK=32),
         note="tl.fdiv(approx=True), tl.atomic_load/atomic_store, gdc_wait/gdc_launch_dependents")


@triton.jit
def atomic_poll_kernel(flag_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    ok = tl.atomic_poll(flag_ptr + offs, 1, timeout_ns=0)
    tl.store(out_ptr + offs, ok.to(tl.int32))


register_newer((3, 9), "atomic_poll", atomic_poll_kernel, [1], [In("flag_ptr", "i32", [8], gen="ones"), Out("out_ptr", "i32", [8])],
         const=dict(BLOCK=8),
         note="tl.atomic_poll; expected to fail: unsupported op tt.atomic_poll")


def by_name() -> dict[str, dict]:
    return {f["name"]: f for f in FIXTURES}
