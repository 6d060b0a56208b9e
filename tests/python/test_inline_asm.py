"""tl.inline_asm_elementwise (inline PTX) on tilescope's engine, through @tilescope.trace.

The first four kernels are Triton 3.6's own (python/test/unit/language/test_core.py: test_inline_asm,
test_inline_asm_packed, test_inline_asm_multiple_outputs, test_inline_asm_packed_multiple_outputs),
checked against the same numpy references that file uses. The conversion kernels are checked against
torch's round-to-nearest-even casts (bf16, f16, fp8 e4m3fn for in-range values) and, for
saturation, against the PTX ISA's satfinite rule (+-448 for e4m3, +-57344 for e5m2).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import tilescope


@tilescope.trace("sanitizer")
@triton.jit
def shf_kernel(X, Y, Z, n: tl.constexpr, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.load(Y + tl.arange(0, BLOCK))
    s = tl.full([BLOCK], n, tl.int32)
    z = tl.inline_asm_elementwise("shf.l.wrap.b32 $0, $1, $2, $3;", "=r,r, r, r", [x, y, s], dtype=tl.int32,
                                  is_pure=True, pack=1)
    tl.store(Z + tl.arange(0, BLOCK), z)


@tilescope.trace("sanitizer")
@triton.jit
def packed_kernel(X, Y, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.inline_asm_elementwise("and.b32 $0, $1, 0x1F1F1F1F; \
                                   shl.b32 $0, $0, 3;", "=r,r", [x], dtype=tl.int8, is_pure=True, pack=4)
    tl.store(Y + tl.arange(0, BLOCK), y)


@tilescope.trace("sanitizer")
@triton.jit
def two_outputs_kernel(A, B, C, D, BLOCK: tl.constexpr):
    a = tl.load(A + tl.arange(0, BLOCK))
    b = tl.load(B + tl.arange(0, BLOCK))
    (c, d) = tl.inline_asm_elementwise(
        asm="""
        sub.u32 $0, $2, $3;  // C = A - B
        sub.u32 $1, $3, $2;  // D = B - A
        """,
        constraints=("=r,=r,"
                     "r,r"),
        args=[a, b],
        dtype=(tl.uint32, tl.uint32),
        is_pure=True,
        pack=1,
    )
    tl.store(C + tl.arange(0, BLOCK), c)
    tl.store(D + tl.arange(0, BLOCK), d)


@tilescope.trace("sanitizer")
@triton.jit
def packed_two_outputs_kernel(A, B, C, D, BLOCK: tl.constexpr):
    a = tl.load(A + tl.arange(0, BLOCK))
    b = tl.load(B + tl.arange(0, BLOCK))
    (c, d) = tl.inline_asm_elementwise(
        asm="""
        {
            // Unpack `a` into `ai`.
            .reg .b8 tmp<4>;
            mov.b32 {tmp0, tmp1, tmp2, tmp3}, $8;
            cvt.u32.u8 $0, tmp0;
            cvt.u32.u8 $1, tmp1;
            cvt.u32.u8 $2, tmp2;
            cvt.u32.u8 $3, tmp3;
        }
        // Convert `ai` to float.
        cvt.rn.f32.s32 $4, $0;
        cvt.rn.f32.s32 $5, $1;
        cvt.rn.f32.s32 $6, $2;
        cvt.rn.f32.s32 $7, $3;
        // Take max of `ai` and `b`.
        max.f32 $4, $4, $9;
        max.f32 $5, $5, $10;
        max.f32 $6, $6, $11;
        max.f32 $7, $7, $12;
        """,
        constraints=("=r,=r,=r,=r,=r,=r,=r,=r,"
                     "r,r,r,r,r"),
        args=[a, b],
        dtype=(tl.int32, tl.float32),
        is_pure=True,
        pack=4,
    )
    tl.store(C + tl.arange(0, BLOCK), c)
    tl.store(D + tl.arange(0, BLOCK), d)


@tilescope.trace("sanitizer")
@triton.jit
def cvt_kernel(X, Y, BF, HF, E4, E5, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.load(Y + tl.arange(0, BLOCK))
    # the upper half (byte) holds the conversion of the first source operand
    bf = tl.inline_asm_elementwise("cvt.rn.bf16x2.f32 $0, $1, $2;", "=r,r,r", [x, y], dtype=tl.int32,
                                   is_pure=True, pack=1)
    hf = tl.inline_asm_elementwise("cvt.rn.f16x2.f32 $0, $1, $2;", "=r,r,r", [x, y], dtype=tl.int32,
                                   is_pure=True, pack=1)
    e4 = tl.inline_asm_elementwise("cvt.rn.satfinite.e4m3x2.f32 $0, $1, $2;", "=h,r,r", [x, y], dtype=tl.int16,
                                   is_pure=True, pack=1)
    e5 = tl.inline_asm_elementwise("cvt.rn.satfinite.e5m2x2.f32 $0, $1, $2;", "=h,r,r", [x, y], dtype=tl.int16,
                                   is_pure=True, pack=1)
    tl.store(BF + tl.arange(0, BLOCK), bf)
    tl.store(HF + tl.arange(0, BLOCK), hf)
    tl.store(E4 + tl.arange(0, BLOCK), e4)
    tl.store(E5 + tl.arange(0, BLOCK), e5)


@tilescope.trace("sanitizer")
@triton.jit
def unsupported_kernel(X, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.inline_asm_elementwise("ld.global.b8 $0, [$1];", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(X + tl.arange(0, BLOCK), y)


def u32(rs, n):
    return rs.randint(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32)


def test_shf_wrap():
    rs = np.random.RandomState(17)
    x, y = u32(rs, 128), u32(rs, 128)
    z = torch.zeros(128, dtype=torch.int32)
    shf_kernel[(1, )](torch.from_numpy(x.view(np.int32)), torch.from_numpy(y.view(np.int32)), z, 17, BLOCK=128)
    np.testing.assert_equal(z.numpy().view(np.uint32), (y << 17) | (x >> (32 - 17)))


def test_packed_int8():
    rs = np.random.RandomState(17)
    x = rs.randint(0, 256, size=512).astype(np.uint8)
    y = torch.zeros(512, dtype=torch.uint8)
    packed_kernel[(1, )](torch.from_numpy(x), y, BLOCK=512)
    np.testing.assert_equal(y.numpy(), (x << 3).astype(np.uint8))


def test_multiple_outputs():
    rs = np.random.RandomState(17)
    a, b = u32(rs, 512), u32(rs, 512)
    c, d = torch.zeros(512, dtype=torch.uint32), torch.zeros(512, dtype=torch.uint32)
    two_outputs_kernel[(1, )](torch.from_numpy(a), torch.from_numpy(b), c, d, BLOCK=512)
    np.testing.assert_equal(c.numpy(), a - b)
    np.testing.assert_equal(d.numpy(), b - a)


def test_packed_multiple_outputs():
    rs = np.random.RandomState(17)
    a = rs.randint(0, 256, size=512).astype(np.uint8)
    b = (rs.randn(512) * 200).astype(np.float32)
    c, d = torch.zeros(512, dtype=torch.int32), torch.zeros(512, dtype=torch.float32)
    packed_two_outputs_kernel[(1, )](torch.from_numpy(a), torch.from_numpy(b), c, d, BLOCK=512)
    np.testing.assert_equal(c.numpy(), a.astype(np.int32))
    np.testing.assert_equal(d.numpy(), np.maximum(a.astype(np.float32), b))


def bits(t, dtype, view):
    return t.to(dtype).view(view).numpy().astype(np.int64) & (0xFFFF if view == torch.int16 else 0xFF)


def test_conversions_round_to_nearest_even():
    n = 256
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, generator=g) * 10
    y = torch.randn(n, generator=g) * 0.01
    x[:4] = torch.tensor([1.00390625, 1.01171875, -0.0, 3.0e-39])  # ties to even, -0, a subnormal
    outs = [torch.zeros(n, dtype=torch.int32), torch.zeros(n, dtype=torch.int32),
            torch.zeros(n, dtype=torch.int16), torch.zeros(n, dtype=torch.int16)]
    cvt_kernel[(1, )](x, y, *outs, BLOCK=n)
    bf, hf = (o.numpy().astype(np.int64) & 0xFFFFFFFF for o in outs[:2])
    e4, e5 = (o.numpy().astype(np.int64) & 0xFFFF for o in outs[2:])
    np.testing.assert_equal(bf >> 16, bits(x, torch.bfloat16, torch.int16))
    np.testing.assert_equal(bf & 0xFFFF, bits(y, torch.bfloat16, torch.int16))
    np.testing.assert_equal(hf >> 16, bits(x, torch.float16, torch.int16))
    np.testing.assert_equal(hf & 0xFFFF, bits(y, torch.float16, torch.int16))
    # torch's fp8 casts are RTNE too; all of x and y lie inside the fp8 ranges here
    np.testing.assert_equal(e4 >> 8, bits(x, torch.float8_e4m3fn, torch.uint8))
    np.testing.assert_equal(e4 & 0xFF, bits(y, torch.float8_e4m3fn, torch.uint8))
    np.testing.assert_equal(e5 >> 8, bits(x, torch.float8_e5m2, torch.uint8))
    np.testing.assert_equal(e5 & 0xFF, bits(y, torch.float8_e5m2, torch.uint8))


def test_fp8_satfinite():
    x = torch.tensor([1000.0, float("inf"), float("nan"), -1e6], dtype=torch.float32)
    y = torch.tensor([-1000.0, float("-inf"), 0.0, 1e6], dtype=torch.float32)
    outs = [torch.zeros(4, dtype=torch.int32), torch.zeros(4, dtype=torch.int32),
            torch.zeros(4, dtype=torch.int16), torch.zeros(4, dtype=torch.int16)]
    cvt_kernel[(1, )](x, y, *outs, BLOCK=4)
    e4 = outs[2].numpy().astype(np.int64) & 0xFFFF
    e5 = outs[3].numpy().astype(np.int64) & 0xFFFF
    # e4m3: +-448 = 0x7e / 0xfe, NaN = 0x7f; e5m2: +-57344 = 0x7b / 0xfb, 0 = 0x00, and +-1000 is in
    # range: 1.953125 * 2^9 rounds to 2^10 = 0 11001 00 = 0x64 (0xe4 negative)
    np.testing.assert_equal(e4, [0x7EFE, 0x7EFE, 0x7F00, 0xFE7E])
    np.testing.assert_equal(e5, [0x64E4, 0x7BFB, 0x7F00, 0xFB7B])


def test_unsupported_instruction_is_a_located_error():
    x = torch.zeros(8, dtype=torch.int32)
    with pytest.raises(Exception, match=r"unsupported PTX instruction 'ld.global.b8'") as e:
        unsupported_kernel[(1, )](x, BLOCK=8)
    assert "test_inline_asm.py" in str(e.value) or "ttir" in str(e.value)


def test_gpu_ptx_truth():
    """Every case of tests/gpu/ptx_truth.py, bit for bit against the H200's outputs (ptx_truth.json)."""
    import json
    import os
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "gpu"))
    import ptx_truth
    with open(os.path.join(here, "..", "gpu", "data", "ptx_truth.json")) as f:
        truth = json.load(f)
    assert set(truth["cases"]) == set(ptx_truth.CASES)
    k = tilescope.trace("sanitizer")(ptx_truth.kernel())
    bad = {}
    for name, case in truth["cases"].items():
        assert "out" in case, (name, case.get("error"))
        assert case["asm"] == ptx_truth.CASES[name][1]
        got = ptx_truth.run_case(k, case["asm"], truth["inputs"][case["set"]], "cpu")
        if got != case["out"]:
            bad[name] = [(i, hex(g), hex(w)) for i, (g, w) in enumerate(zip(got, case["out"])) if g != w]
    assert not bad, bad


@tilescope.trace("sanitizer")
@triton.jit
def fp8e4b15_kernel(X, A, F, BLOCK: tl.constexpr):
    # As Triton's test_abs_fp8 / test_dot_max_num_imprecise_acc use float8e4b15: tl.abs clears the sign bit,
    # .to(tl.float32) goes through Triton's inline-PTX conversion (language/extra/cuda/utils.py).
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    tl.store(A + offs, tl.abs(x))
    tl.store(F + offs, x.to(tl.float32))


def test_float8e4b15_buffers_are_bytes():
    # float8e4b15 has no MLIR type (TTIR carries it as i8); before the fix its buffers were rejected:
    # "argument 'X': unknown dtype 'fp8e4b15'".
    bits = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    absolute = torch.zeros(256, dtype=torch.uint8)
    as_f32 = torch.zeros(256, dtype=torch.float32)
    tilescope.clear_findings()
    fp8e4b15_kernel[(1,)](triton.reinterpret(bits, tl.float8e4b15), triton.reinterpret(absolute, tl.float8e4b15),
                          as_f32, BLOCK=256)
    assert tilescope.findings() == []
    b = bits.numpy().astype(np.int64)
    assert (absolute.numpy() == (b & 0x7F)).all()
    # e4m3 with exponent bias 15 and no special values: 2^(e-15) * (1 + m/8), subnormals 2^-14 * m/8
    e, m, sign = (b >> 3) & 0xF, b & 7, np.where(b & 0x80, -1.0, 1.0)
    expected = sign * np.where(e > 0, 2.0 ** (e - 15) * (1 + m / 8), 2.0 ** -14 * (m / 8))
    np.testing.assert_array_equal(as_f32.numpy(), expected.astype(np.float32))
