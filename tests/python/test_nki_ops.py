"""nki.isa ops beyond the first slice, each against NumPy computing the documented semantics (the NKI API
reference, awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.isa.<op>.html), and
each documented constraint they check: the error names the op, the argument and the kernel's line.

Kernels mark the lines errors must name with a trailing `# @marker` comment.
"""
import os
import re

import ml_dtypes
import numpy as np
import pytest

import tilescope
import tilescope.nki as nki
import tilescope.nki.isa as nisa
import tilescope.nki.language as nl

BF16 = ml_dtypes.bfloat16
# A rule that depends on values (an index, an identity matrix) fails while the kernel runs, as an
# NkiError too (the same message: op, argument, line).
RUN_ERROR = nki.NkiError
FP32_MIN = np.float32(-3.4028235e38)
_SOURCE = open(__file__).read().splitlines()


def line(marker):
    """The line of this file ending with `# @marker`."""
    hits = [i + 1 for i, s in enumerate(_SOURCE) if s.rstrip().endswith(f"# @{marker}")]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def err(marker, op, *words):
    """The error of nki.isa.`op` at the line of `marker`, mentioning `words` in order."""
    name = re.escape(os.path.basename(__file__))
    return rf"(^|/){name}:{line(marker)}:\d+: nki\.isa\.{op}: .*" + ".*".join(re.escape(w) for w in words)


@pytest.fixture(autouse=True)
def _clean():
    """Every kernel here is correct: no findings (a false positive is a bug)."""
    tilescope.clear_findings()
    yield
    assert tilescope.findings() == []
    tilescope.clear_findings()


def rng(seed=0):
    return np.random.default_rng(seed)


def to_sbuf(src, dtype=None, buffer=nl.sbuf):
    """A new on-chip tile holding the HBM tensor `src` (converted to `dtype`), through SBUF for PSUM."""
    t = nl.ndarray(src.shape, dtype=dtype or src.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=src)
    if buffer == nl.psum:
        p = nl.ndarray(src.shape, dtype=dtype or src.dtype, buffer=nl.psum)
        nisa.tensor_copy(dst=p, src=t)
        return p
    return t


def to_hbm(t, dtype=None):
    """A new HBM output holding the on-chip tile `t` (PSUM through SBUF)."""
    if t.buffer == nl.psum:
        s = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=s, src=t)
        t = s
    out = nl.ndarray(t.shape, dtype=dtype or t.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


# ------------------------------------------------------------------------------------------------
# tensor_partition_reduce


@nki.jit
def partition_reduce_kernel(a, op, out_dtype):
    t = to_sbuf(a)
    r = nl.ndarray((1,) + tuple(a.shape[1:]), dtype=out_dtype, buffer=nl.sbuf)
    nisa.tensor_partition_reduce(dst=r, op=op, data=t)
    return to_hbm(r)


def test_partition_reduce_add_max_average():
    a = rng().integers(0, 1000, (128, 32, 4)).astype(np.float32)  # integers: every sum is exact in float32
    np.testing.assert_array_equal(partition_reduce_kernel(a, nl.add, nl.float32), a.sum(axis=0, keepdims=True))
    np.testing.assert_array_equal(partition_reduce_kernel(a, nl.maximum, nl.float32), a.max(axis=0, keepdims=True))
    got = partition_reduce_kernel(a, nl.average, nl.float32)
    np.testing.assert_allclose(got, a.sum(axis=0, keepdims=True) / np.float32(128), rtol=1e-7)


def test_partition_reduce_rounds_to_bf16_and_ors_bits():
    a = rng(1).integers(0, 1000, (128, 8)).astype(np.float32)
    got = partition_reduce_kernel(a, nl.add, nl.bfloat16)
    assert got.dtype == BF16
    np.testing.assert_array_equal(got, a.sum(axis=0, keepdims=True).astype(BF16))  # round to nearest even
    b = rng(2).integers(-2**31, 2**31 - 1, (64, 16), dtype=np.int64).astype(np.int32)
    np.testing.assert_array_equal(partition_reduce_kernel(b, nl.bitwise_or, nl.int32),
                                  np.bitwise_or.reduce(b, axis=0, keepdims=True))
    np.testing.assert_array_equal(partition_reduce_kernel(b, nl.bitwise_and, nl.int32),
                                  np.bitwise_and.reduce(b, axis=0, keepdims=True))


def test_partition_reduce_constraints():
    @nki.jit
    def two_rows(a):
        t = to_sbuf(a)
        r = nl.ndarray((2, 4), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_partition_reduce(dst=r, op=nl.add, data=t)  # @pr_rows

    @nki.jit
    def in_psum(a):
        t = to_sbuf(a, buffer=nl.psum)
        r = nl.ndarray((1, 4), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_partition_reduce(dst=r, op=nl.add, data=t)  # @pr_psum

    @nki.jit
    def bad_op(a, op):
        t = to_sbuf(a)
        r = nl.ndarray((1, 4), dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_partition_reduce(dst=r, op=op, data=t)  # @pr_op

    a = np.ones((8, 4), np.float32)
    with pytest.raises(nki.NkiError, match=err("pr_rows", "tensor_partition_reduce", "'dst'", "1 partition")):
        two_rows(a)
    with pytest.raises(nki.NkiError, match=err("pr_psum", "tensor_partition_reduce", "'data'", "psum", "sbuf")):
        in_psum(a)
    with pytest.raises(nki.NkiError, match=err("pr_op", "tensor_partition_reduce", "'op'", "nl.multiply")):
        bad_op(a, nl.multiply)
    with pytest.raises(nki.NkiError, match=err("pr_op", "tensor_partition_reduce", "integer", "'dst'")):
        bad_op(a, nl.bitwise_or)


# ------------------------------------------------------------------------------------------------
# tensor_tensor_scan


def scan_reference(d0, d1, initial, op0, op1, rev0=False, rev1=False):
    """The docs' loop, in float32: r[i] = op1(op0(d0[i], r[i-1]), d1[i]) (reverse flags swap operands)."""
    r = np.asarray(initial, np.float32).reshape(-1) * np.ones(d0.shape[0], np.float32)
    out = np.empty_like(d0)
    for i in range(d0.shape[1]):
        t = op0(r, d0[:, i]) if rev0 else op0(d0[:, i], r)
        r = (op1(d1[:, i], t) if rev1 else op1(t, d1[:, i])).astype(np.float32)
        out[:, i] = r
    return out


@nki.jit
def scan_kernel(d0, d1, init, op0, op1, rev0, rev1, psum1):
    a = to_sbuf(d0)
    b = to_sbuf(d1, buffer=nl.psum if psum1 else nl.sbuf)
    if isinstance(init, float):
        i0 = init
    else:
        i0 = to_sbuf(init)
    r = nl.ndarray(d0.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor_scan(dst=r, data0=a, data1=b, initial=i0, op0=op0, op1=op1, reverse0=rev0, reverse1=rev1)
    return to_hbm(r)


def test_scan_cumsum_and_reversed_operands():
    x = rng(3).standard_normal((16, 40)).astype(np.float32)
    ones = np.ones_like(x)
    got = scan_kernel(ones, x, 0.0, nl.multiply, nl.add, False, False, True)
    np.testing.assert_allclose(got, np.cumsum(x, axis=1, dtype=np.float32), rtol=1e-5, atol=1e-5)
    d0 = rng(4).uniform(0.5, 1.5, (16, 40)).astype(np.float32)
    init = rng(5).standard_normal((16, 1)).astype(np.float32)
    for rev0, rev1 in [(False, False), (True, False), (False, True), (True, True)]:
        got = scan_kernel(d0, x, init, nl.subtract, nl.multiply, rev0, rev1, False)
        ref = scan_reference(d0, x, init, np.subtract, np.multiply, rev0, rev1)
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_scan_constraints():
    @nki.jit
    def both_psum(a):
        x = to_sbuf(a, buffer=nl.psum)
        y = to_sbuf(a, buffer=nl.psum)
        r = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor_scan(dst=r, data0=x, data1=y, initial=0.0, op0=nl.add, op1=nl.add)  # @scan_psum

    @nki.jit
    def bitvec(a):
        x = to_sbuf(a)
        r = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor_scan(dst=r, data0=x, data1=x, initial=0, op0=nl.bitwise_and, op1=nl.add)  # @scan_bits

    @nki.jit
    def bad_initial(a):
        x = to_sbuf(a)
        r = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor_scan(dst=r, data0=x, data1=x, initial=x, op0=nl.add, op1=nl.add)  # @scan_init

    @nki.jit
    def mismatch(a, b):
        x, y = to_sbuf(a), to_sbuf(b)
        r = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor_scan(dst=r, data0=x, data1=y, initial=0.0, op0=nl.add, op1=nl.add)  # @scan_shape

    a = np.ones((8, 4), np.float32)
    with pytest.raises(nki.NkiError, match=err("scan_psum", "tensor_tensor_scan", "'data0' and 'data1'", "PSUM")):
        both_psum(a)
    with pytest.raises(nki.NkiError, match=err("scan_bits", "tensor_tensor_scan", "'op0'", "bitvec")):
        bitvec(a.astype(np.int32))
    with pytest.raises(nki.NkiError, match=err("scan_init", "tensor_tensor_scan", "'initial'", "Nx1")):
        bad_initial(a)
    with pytest.raises(nki.NkiError, match=err("scan_shape", "tensor_tensor_scan", "'data0'", "'data1'")):
        mismatch(a, np.ones((8, 5), np.float32))


# ------------------------------------------------------------------------------------------------
# scalar_tensor_tensor


@nki.jit
def stt_kernel(d, c, b, op0, op1, rev0, rev1, out_dtype):
    x = to_sbuf(d, buffer=nl.psum)
    y = to_sbuf(b)
    c0 = c if isinstance(c, float) else to_sbuf(c)
    r = nl.ndarray(d.shape, dtype=out_dtype, buffer=nl.sbuf)
    nisa.scalar_tensor_tensor(dst=r, data=x, op0=op0, operand0=c0, op1=op1, operand1=y, reverse0=rev0,
                              reverse1=rev1)
    return to_hbm(r)


def test_scalar_tensor_tensor():
    d = rng(6).standard_normal((32, 24)).astype(np.float32)
    b = rng(7).uniform(1, 2, (32, 24)).astype(np.float32)
    c = rng(8).standard_normal((32, 1)).astype(np.float32)
    for rev0, rev1 in [(False, False), (True, True), (True, False)]:
        t = (c - d) if rev0 else (d - c)
        ref = (b / t) if rev1 else (t / b)
        got = stt_kernel(d, c, b, nl.subtract, nl.divide, rev0, rev1, nl.float32)
        np.testing.assert_allclose(got, ref, rtol=1e-6)
    got = stt_kernel(d, 3.0, b, nl.multiply, nl.add, False, False, nl.bfloat16)
    np.testing.assert_array_equal(got, (d * np.float32(3) + b).astype(BF16))


def test_scalar_tensor_tensor_constraints():
    @nki.jit
    def both_psum(a):
        x = to_sbuf(a, buffer=nl.psum)
        y = to_sbuf(a, buffer=nl.psum)
        r = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(dst=r, data=x, op0=nl.add, operand0=1.0, op1=nl.add, operand1=y)  # @stt_psum

    @nki.jit
    def bad_operand1(a, b):
        x, y = to_sbuf(a), to_sbuf(b)
        r = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(dst=r, data=x, op0=nl.add, operand0=1.0, op1=nl.add, operand1=y)  # @stt_shape

    @nki.jit
    def bitvec(a):
        x = to_sbuf(a)
        r = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(dst=r, data=x, op0=nl.add, operand0=1, op1=nl.bitwise_or, operand1=x)  # @stt_op

    a = np.ones((8, 4), np.float32)
    with pytest.raises(nki.NkiError, match=err("stt_psum", "scalar_tensor_tensor", "'data' and 'operand1'", "PSUM")):
        both_psum(a)
    with pytest.raises(nki.NkiError, match=err("stt_shape", "scalar_tensor_tensor", "'operand1'")):
        bad_operand1(a, np.ones((8, 2), np.float32))
    with pytest.raises(nki.NkiError, match=err("stt_op", "scalar_tensor_tensor", "'op1'", "bitvec")):
        bitvec(a.astype(np.int32))


# ------------------------------------------------------------------------------------------------
# tensor_scalar_reduce


@nki.jit
def tsr_kernel(a, b):
    """Three tensor_scalar_reduce calls: a row sum of 2a, a negated row max of |a| (abs: a unary op0),
    and a running product over a and then b, started from reduce_init = 0.5."""
    x, y = to_sbuf(a), to_sbuf(b)
    P = a.shape[0]
    d1 = nl.ndarray(a.shape, dtype=nl.bfloat16, buffer=nl.sbuf)
    s = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_reduce(dst=d1, data=x, op0=nl.multiply, operand0=2.0, reduce_op=nl.add, reduce_res=s)
    d2 = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    m = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_reduce(dst=d2, data=x, op0=nl.abs, operand0=None, reduce_op=nl.maximum, reduce_res=m,
                              reduce_res_negate=True)
    d3 = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    pr = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_reduce(dst=d3, data=x, op0=nl.add, operand0=0.0, reduce_op=nl.multiply,
                              reduce_cmd=nisa.reduce_cmd.load_reduce, reduce_init=0.5)
    nisa.tensor_scalar_reduce(dst=d3, data=y, op0=nl.add, operand0=0.0, reduce_op=nl.multiply, reduce_res=pr,
                              reduce_cmd=nisa.reduce_cmd.reduce)
    return to_hbm(d1), to_hbm(s), to_hbm(m), to_hbm(pr)


def test_tensor_scalar_reduce():
    a = rng(9).uniform(-2, 2, (16, 10)).astype(np.float32)
    b = rng(10).uniform(0.5, 1.5, (16, 10)).astype(np.float32)
    d1, s, m, pr = tsr_kernel(a, b)
    np.testing.assert_array_equal(d1, (a * 2).astype(BF16))  # dst rounded to bf16
    np.testing.assert_allclose(s, (a * 2).sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-5)  # float32 sums
    np.testing.assert_array_equal(m, -np.abs(a).max(axis=1, keepdims=True))
    ref = np.float32(0.5) * np.prod(a, axis=1, keepdims=True) * np.prod(b, axis=1, keepdims=True)
    np.testing.assert_allclose(pr, ref, rtol=1e-5)


def test_tensor_scalar_reduce_constraints():
    @nki.jit
    def call(a, reduce_op=nl.add, reverse0=False, reduce_cmd=nisa.reduce_cmd.reset_reduce, reduce_init=None,
             res_free=1):
        x = to_sbuf(a)
        d = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        r = nl.ndarray((a.shape[0], res_free), dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar_reduce(dst=d, data=x, op0=nl.add, operand0=1.0, reduce_op=reduce_op, reduce_res=r,  # @tsr
                                  reverse0=reverse0, reduce_cmd=reduce_cmd, reduce_init=reduce_init)

    a = np.ones((8, 4), np.float32)
    with pytest.raises(nki.NkiError, match=err("tsr", "tensor_scalar_reduce", "'reverse0'", "not supported")):
        call(a, reverse0=True)
    with pytest.raises(nki.NkiError, match=err("tsr", "tensor_scalar_reduce", "'reduce_op'", "nl.subtract")):
        call(a, reduce_op=nl.subtract)
    with pytest.raises(nki.NkiError, match=err("tsr", "tensor_scalar_reduce", "'reduce_init'", "load_reduce")):
        call(a, reduce_init=1.0)
    with pytest.raises(nki.NkiError, match=err("tsr", "tensor_scalar_reduce", "'reduce_init'", "required")):
        call(a, reduce_cmd=nisa.reduce_cmd.load_reduce)
    with pytest.raises(nki.NkiError, match=err("tsr", "tensor_scalar_reduce", "'reduce_cmd'", "idle")):
        call(a, reduce_cmd=nisa.reduce_cmd.idle)
    with pytest.raises(nki.NkiError, match=err("tsr", "tensor_scalar_reduce", "'reduce_res'", "(8, 1)")):
        call(a, res_free=2)


# ------------------------------------------------------------------------------------------------
# tensor_copy_predicated


@nki.jit
def predicated_kernel(pred, src, old, reverse, psum_pred):
    p = to_sbuf(pred, buffer=nl.psum if psum_pred else nl.sbuf)
    d = to_sbuf(old)
    s = src if isinstance(src, float) else to_sbuf(src)
    nisa.tensor_copy_predicated(dst=d, src=s, predicate=p, reverse_pred=reverse)
    return to_hbm(d)


def test_tensor_copy_predicated():
    a = (rng(11).random((128, 64)) * 100).astype(np.float32)
    b = (rng(12).random((128, 64)) * 100).astype(np.float32)
    pred = np.less_equal(a, 30.0)  # bool_, as in AWS's example
    np.testing.assert_array_equal(predicated_kernel(pred, a, b, False, False), np.where(pred, a, b))
    p16 = pred.astype(np.uint16) * 7  # any nonzero value is true
    np.testing.assert_array_equal(predicated_kernel(p16, a, b, True, True), np.where(p16 != 0, b, a))
    np.testing.assert_array_equal(predicated_kernel(pred, -1.5, b, False, False), np.where(pred, np.float32(-1.5), b))


def test_tensor_copy_predicated_leaves_unselected_elements_unread():
    """dst is not read: elements the predicate skips may stay unwritten without an uninitialized read."""
    @nki.jit
    def kernel(pred, src):
        p, s = to_sbuf(pred), to_sbuf(src)
        d = nl.ndarray(src.shape, dtype=src.dtype, buffer=nl.sbuf)
        nisa.tensor_copy_predicated(dst=d, src=s, predicate=p)
        out = nl.ndarray((src.shape[0], 1), dtype=src.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=d[:, 0:1])
        return out

    pred = np.zeros((4, 8), np.uint8)
    pred[:, 0] = 1
    src = np.arange(32, dtype=np.float32).reshape(4, 8)
    np.testing.assert_array_equal(kernel(pred, src), src[:, :1])


def test_tensor_copy_predicated_constraints():
    @nki.jit
    def call(pred, src, dst_dtype, psum):
        p = to_sbuf(pred, buffer=nl.psum if psum else nl.sbuf)
        s = to_sbuf(src, buffer=nl.psum if psum else nl.sbuf)
        d = nl.ndarray(src.shape, dtype=dst_dtype, buffer=nl.sbuf)
        nisa.tensor_copy_predicated(dst=d, src=s, predicate=p)  # @tcp

    a = np.ones((8, 4), np.float32)
    with pytest.raises(nki.NkiError, match=err("tcp", "tensor_copy_predicated", "'predicate'", "float32", "uint8")):
        call(a, a, nl.float32, False)
    with pytest.raises(nki.NkiError, match=err("tcp", "tensor_copy_predicated", "'src'", "'dst'", "same dtype")):
        call(a.astype(np.uint8), a, nl.bfloat16, False)
    with pytest.raises(nki.NkiError, match=err("tcp", "tensor_copy_predicated", "'src' and 'predicate'", "PSUM")):
        call(a.astype(np.uint32), a, nl.float32, True)


# ------------------------------------------------------------------------------------------------
# affine_select


@nki.jit
def causal_kernel(x, offset, out_dtype):
    t = to_sbuf(x)
    d = nl.ndarray(x.shape, dtype=out_dtype, buffer=nl.sbuf)
    nisa.affine_select(dst=d, pattern=[[-1, x.shape[1]]], channel_multiplier=1, on_true_tile=t,
                       on_false_value=-9984.0, cmp_op=nl.greater_equal, offset=offset)
    return to_hbm(d)


def test_affine_select_causal_mask():
    x = rng(13).standard_normal((64, 96)).astype(np.float32)
    p, f = np.meshgrid(np.arange(64), np.arange(96), indexing="ij")
    for off in (0, 5, -7):
        ref = np.where(off + p - f >= 0, x, np.float32(-9984.0))
        np.testing.assert_array_equal(causal_kernel(x, off, nl.float32), ref)
    np.testing.assert_array_equal(causal_kernel(x, 0, nl.bfloat16), np.where(p - f >= 0, x, -9984.0).astype(BF16))


def test_affine_select_multi_level_pattern_and_020_order():
    @nki.jit
    def kernel(x):
        t = to_sbuf(x)
        d = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        # NKI 0.2.0's positional order: (dst, pattern, offset, channel_multiplier, on_true_tile, on_false_value, cmp_op)
        nisa.affine_select(d, [[2, 4], [-1, 6]], 3, -1, t, 0.0, nl.less)
        return to_hbm(d)

    x = rng(14).standard_normal((8, 24)).astype(np.float32)
    c, w, z = np.meshgrid(np.arange(8), np.arange(4), np.arange(6), indexing="ij")
    a = (3 - c + 2 * w - z).reshape(8, 24)
    np.testing.assert_array_equal(kernel(x), np.where(a < 0, x, np.float32(0)))


def test_affine_select_constraints():
    @nki.jit
    def call(x, pattern, cmp, psum):
        t = to_sbuf(x)
        d = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.psum if psum else nl.sbuf)
        nisa.affine_select(dst=d, pattern=pattern, channel_multiplier=1, on_true_tile=t, on_false_value=0.0,  # @as
                           cmp_op=cmp)

    x = np.ones((8, 4), np.float32)
    with pytest.raises(nki.NkiError, match=err("as", "affine_select", "'dst'", "psum", "sbuf")):
        call(x, [[1, 4]], nl.equal, True)
    with pytest.raises(nki.NkiError, match=err("as", "affine_select", "'pattern'", "6 elements", "4")):
        call(x, [[1, 6]], nl.equal, False)
    with pytest.raises(nki.NkiError, match=err("as", "affine_select", "'cmp_op'", "nl.add")):
        call(x, [[1, 4]], nl.add, False)


# ------------------------------------------------------------------------------------------------
# range_select (NeuronCore-v3+)


@nki.jit
def range_select_kernel(x, b0, b1, start, out_dtype):
    t, lo, hi = to_sbuf(x), to_sbuf(b0), to_sbuf(b1)
    d = nl.ndarray(x.shape, dtype=out_dtype, buffer=nl.sbuf)
    r = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.range_select(dst=d, on_true_tile=t, comp_op0=nl.greater_equal, comp_op1=nl.less, bound0=lo, bound1=hi,
                      reduce_res=r, range_start=start)
    return to_hbm(d), to_hbm(r)


def test_range_select_matches_the_docs_numpy():
    x = rng(15).random((128, 200)).astype(np.float32)
    b0 = rng(16).integers(0, 100, (128, 1)).astype(np.float32)
    b1 = b0 + rng(17).integers(1, 100, (128, 1)).astype(np.float32)
    idx = 32 + np.arange(200, dtype=np.float32)
    mask = np.greater_equal(idx, b0) & np.less(idx, b1)
    sel = np.where(mask, x, FP32_MIN)
    d, r = range_select_kernel(x, b0, b1, 32, nl.float32)
    np.testing.assert_array_equal(d, sel)
    np.testing.assert_array_equal(r, sel.max(axis=1, keepdims=True))
    d, r = range_select_kernel(x, b0, b1, 32, nl.bfloat16)
    np.testing.assert_array_equal(d, sel.astype(BF16))  # FP32_MIN becomes -inf in bf16
    assert np.isneginf(d.astype(np.float32)[~mask]).all()
    np.testing.assert_array_equal(r, sel.max(axis=1, keepdims=True))  # the float32 reduce_res keeps FP32_MIN


def test_range_select_chains_the_accumulator():
    @nki.jit
    def kernel(x, b0, b1):
        t, lo, hi = to_sbuf(x), to_sbuf(b0), to_sbuf(b1)
        d = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        r = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.range_select(dst=d, on_true_tile=t, comp_op0=nl.greater_equal, comp_op1=nl.less, bound0=lo, bound1=hi,
                          range_start=0)
        nisa.range_select(dst=d, on_true_tile=t, comp_op0=nl.greater_equal, comp_op1=nl.less, bound0=lo, bound1=hi,
                          reduce_cmd=nisa.reduce_cmd.reduce, reduce_res=r, range_start=64)
        return to_hbm(r)

    x = rng(18).random((16, 64)).astype(np.float32)
    b0 = np.full((16, 1), 40, np.float32)
    b1 = np.full((16, 1), 80, np.float32)
    first = np.where((np.arange(64) >= 40) & (np.arange(64) < 80), x, FP32_MIN)
    second = np.where((64 + np.arange(64) >= 40) & (64 + np.arange(64) < 80), x, FP32_MIN)
    np.testing.assert_array_equal(kernel(x, b0, b1), np.maximum(first.max(axis=1), second.max(axis=1))[:, None])


def test_range_select_constraints():
    def make(target):
        @nki.jit(platform_target=target)
        def call(x, b, op0=nl.less, off=float(FP32_MIN), rop=nl.maximum, start=0):
            t, lo = to_sbuf(x), to_sbuf(b)
            d = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
            nisa.range_select(dst=d, on_true_tile=t, comp_op0=op0, comp_op1=nl.less, bound0=lo, bound1=lo,  # @rs
                              reduce_op=rop, on_false_value=off, range_start=start)
        return call

    x, b = np.ones((8, 4), np.float32), np.ones((8, 1), np.float32)
    with pytest.raises(nki.NkiError, match=err("rs", "range_select", "NeuronCore-v3", "trn1")):
        make("trn1")(x, b)
    call = make("trn2")
    with pytest.raises(nki.NkiError, match=err("rs", "range_select", "'on_false_value'", "FP32_MIN")):
        call(x, b, off=0.0)
    with pytest.raises(nki.NkiError, match=err("rs", "range_select", "'comp_op0'", "nl.not_equal")):
        call(x, b, op0=nl.not_equal)
    with pytest.raises(nki.NkiError, match=err("rs", "range_select", "'bound0'", "bfloat16", "float32")):
        call(x, b.astype(BF16))
    with pytest.raises(nki.NkiError, match=err("rs", "range_select", "'reduce_op'", "nl.add")):
        call(x, b, rop=nl.add)
    with pytest.raises(nki.NkiError, match=err("rs", "range_select", "'on_true_tile'", "int32", "float")):
        call(x.astype(np.int32), b)
    with pytest.raises(nki.NkiError, match=err("rs", "range_select", "range_start", "2^24")):
        call(x, b, start=2**24 - 2)


# ------------------------------------------------------------------------------------------------
# select_reduce


@nki.jit
def select_reduce_kernel(pred, x, off, reverse, cmd):
    p, t = to_sbuf(pred), to_sbuf(x, buffer=nl.psum)
    o = off if isinstance(off, float) else to_sbuf(off)
    d = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    r = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.select_reduce(dst=d, predicate=p, on_true=t, on_false=o, reduce_res=r, reduce_cmd=cmd, reverse_pred=reverse)
    return to_hbm(d), to_hbm(r)


def test_select_reduce():
    x = (rng(19).random((128, 96)) * 100).astype(np.float32)
    off = (rng(20).random((128, 1)) * 100).astype(np.float32)
    pred = rng(21).integers(0, 2, (128, 96)).astype(np.bool_)
    d, r = select_reduce_kernel(pred, x, off, False, nisa.reduce_cmd.reset_reduce)
    ref = np.where(pred, x, off)
    np.testing.assert_array_equal(d, ref)
    np.testing.assert_array_equal(r, ref.max(axis=1, keepdims=True))
    p8 = pred.astype(np.int8)
    d, _ = select_reduce_kernel(p8, x, float(FP32_MIN), True, nisa.reduce_cmd.reset_reduce)
    np.testing.assert_array_equal(d, np.where(~pred, x, FP32_MIN))


def test_select_reduce_constraints():
    @nki.jit
    def call(pred, x, res_free=1, rop=nl.maximum, psum=False):
        p = to_sbuf(pred, buffer=nl.psum if psum else nl.sbuf)
        t = to_sbuf(x, buffer=nl.psum if psum else nl.sbuf)
        d = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        r = nl.ndarray((x.shape[0], res_free), dtype=nl.float32, buffer=nl.sbuf)
        nisa.select_reduce(dst=d, predicate=p, on_true=t, on_false=0.0, reduce_res=r, reduce_op=rop)  # @sr

    x, p = np.ones((8, 4), np.float32), np.ones((8, 4), np.uint8)
    with pytest.raises(nki.NkiError, match=err("sr", "select_reduce", "'on_true'", "int32")):
        call(p, x.astype(np.int32))
    with pytest.raises(nki.NkiError, match=err("sr", "select_reduce", "'predicate'", "float32", "int8")):
        call(x, x)
    with pytest.raises(nki.NkiError, match=err("sr", "select_reduce", "'on_true' and 'predicate'", "PSUM")):
        call(p.astype(np.uint16), x, psum=True)
    with pytest.raises(nki.NkiError, match=err("sr", "select_reduce", "'reduce_res'", "(8, 1)")):
        call(p, x, res_free=2)
    with pytest.raises(nki.NkiError, match=err("sr", "select_reduce", "'reduce_op'", "nl.add")):
        call(p, x, rop=nl.add)


# ------------------------------------------------------------------------------------------------
# exponential (NeuronCore-v4)


@nki.jit(platform_target="trn3")
def exponential_kernel(x, m, out_dtype):
    t, mt = to_sbuf(x), to_sbuf(m)
    d = nl.ndarray(x.shape, dtype=out_dtype, buffer=nl.sbuf)
    s = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.exponential(dst=d, src=t, max_value=mt, reduce_cmd=nisa.reduce_cmd.reset_reduce)
    nisa.exponential(dst=d, src=t, max_value=mt, reduce_res=s, reduce_cmd=nisa.reduce_cmd.load_reduce,
                     reduce_init=1.0)
    return to_hbm(d), to_hbm(s)


def test_exponential():
    x = rng(22).standard_normal((32, 50)).astype(np.float32) * 3
    m = x.max(axis=1, keepdims=True)
    e = np.exp(x - m)
    d, s = exponential_kernel(x, m, nl.float32)
    np.testing.assert_allclose(d, e, rtol=2e-7)
    np.testing.assert_allclose(s, 1 + e.sum(axis=1, keepdims=True), rtol=1e-5)  # load_reduce from 1.0
    d, _ = exponential_kernel(x, m, nl.bfloat16)
    assert d.dtype == BF16
    np.testing.assert_allclose(d.astype(np.float32), e.astype(BF16).astype(np.float32), rtol=2**-8)


def test_exponential_constraints():
    def make(target):
        @nki.jit(platform_target=target)
        def call(x, out_dtype=nl.float32, init=0.0):
            t = to_sbuf(x)
            d = nl.ndarray(x.shape, dtype=out_dtype, buffer=nl.sbuf)
            nisa.exponential(dst=d, src=t, reduce_init=init)  # @exp
        return call

    x = np.ones((8, 4), np.float32)
    with pytest.raises(nki.NkiError, match=err("exp", "exponential", "NeuronCore-v4", "trn2")):
        make("trn2")(x)
    call = make("trn3")
    with pytest.raises(nki.NkiError, match=err("exp", "exponential", "'reduce_init'", "load_reduce")):
        call(x, init=1.0)
    with pytest.raises(nki.NkiError, match=err("exp", "exponential", "'dst'", "uint32")):
        call(x, out_dtype=nl.uint32)
    with pytest.raises(nki.NkiError, match=err("exp", "exponential", "'dst'", "more than 4 dimensions")):
        call(np.ones((8, 1, 2, 1, 2), np.float32))


# ------------------------------------------------------------------------------------------------
# dma_transpose


def test_dma_transpose_2d_3d_4d():
    @nki.jit
    def t2(a, via_sbuf, mode):
        src = to_sbuf(a) if via_sbuf else a
        d = nl.ndarray((a.shape[1], a.shape[0]), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_transpose(dst=d, src=src, dge_mode=mode)
        return to_hbm(d)

    @nki.jit
    def tn(a, axes):
        d = nl.ndarray(tuple(a.shape[i] for i in axes), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_transpose(dst=d, src=a, axes=axes)
        return to_hbm(d)

    a = (rng(23).random((16, 128)) * 100).astype(np.float16)  # AWS's example
    for via_sbuf in (False, True):
        for mode in (nisa.dge_mode.unknown, nisa.dge_mode.hwdge):
            np.testing.assert_array_equal(t2(a, via_sbuf, mode), a.T)
    b = rng(24).standard_normal((4, 6, 8)).astype(BF16)
    np.testing.assert_array_equal(tn(b, (2, 1, 0)), np.transpose(b, (2, 1, 0)))
    c = np.arange(2 * 3 * 4 * 5, dtype=np.int16).reshape(2, 3, 4, 5)
    np.testing.assert_array_equal(tn(c, (3, 1, 2, 0)), np.transpose(c, (3, 1, 2, 0)))


def test_dma_transpose_constraints():
    def make(target):
        @nki.jit(platform_target=target)
        def call(a, shape, axes=None, mode=nisa.dge_mode.unknown, buffer=nl.sbuf, priority=None):
            d = nl.ndarray(shape, dtype=a.dtype, buffer=buffer)
            nisa.dma_transpose(dst=d, src=a, axes=axes, dge_mode=mode, priority=priority)  # @dt
        return call

    call = make("trn2")
    a = np.ones((16, 32), np.float16)
    with pytest.raises(nki.NkiError, match=err("dt", "dma_transpose", "'src'", "float32", "2-byte")):
        call(a.astype(np.float32), (32, 16))
    with pytest.raises(nki.NkiError, match=err("dt", "dma_transpose", "'axes'", "0, 1")):
        call(a, (32, 16), axes=(0, 1))
    with pytest.raises(nki.NkiError, match=err("dt", "dma_transpose", "'dst'", "16x32", "transposed")):
        call(a, (16, 32))
    with pytest.raises(nki.NkiError, match=err("dt", "dma_transpose", "'dst'", "psum", "sbuf")):
        call(a, (32, 16), buffer=nl.psum)
    with pytest.raises(nki.NkiError, match=err("dt", "dma_transpose", "hwdge", "16 rows")):
        call(np.ones((32, 16), np.float16), (16, 32), mode=nisa.dge_mode.hwdge)
    with pytest.raises(nki.NkiError, match=err("dt", "dma_transpose", "hwdge", "src.shape[0] (3)", "1, 2, 4, 8 or 16")):
        call(np.ones((3, 8, 4), np.float16), (4, 8, 3), mode=nisa.dge_mode.hwdge)
    with pytest.raises(nki.NkiError, match=err("dt", "dma_transpose", "hwdge", "NeuronCore-v3")):
        make("trn1")(a, (32, 16), mode=nisa.dge_mode.hwdge)
    with pytest.raises(nki.NkiError, match=err("dt", "dma_transpose", "NeuronCore-v4")):
        call(a, (32, 16), priority=1)


# ------------------------------------------------------------------------------------------------
# bn_stats / bn_aggr


@nki.jit
def bn_kernel(x):
    P, F = x.shape
    t = to_sbuf(x)
    n = (F + 511) // 512
    stats = nl.ndarray((P, 6 * n), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(n):
        nisa.bn_stats(dst=stats[:, i * 6:(i + 1) * 6], data=t[:, i * 512:min(F, (i + 1) * 512)])
    mv = nl.ndarray((P, 2), dtype=nl.float32, buffer=nl.sbuf)
    nisa.bn_aggr(dst=mv, data=stats)
    return to_hbm(stats), to_hbm(mv)


def test_bn_stats_even_odd_statistics():
    x = rng(25).standard_normal((8, 7)).astype(np.float32) * 10 + 3
    stats, mv = bn_kernel(x)
    for half, row in ((0, stats[:, :3]), (1, stats[:, 3:6])):
        s = x[:, half::2].astype(np.float64)
        ref = np.stack([np.full(8, s.shape[1]), s.mean(axis=1), s.var(axis=1) * s.shape[1]], axis=1)
        np.testing.assert_allclose(row, ref, rtol=1e-5)
    np.testing.assert_allclose(mv[:, 0], x.astype(np.float64).mean(axis=1), rtol=1e-5)
    np.testing.assert_allclose(mv[:, 1], x.astype(np.float64).var(axis=1), rtol=1e-5)


def test_bn_aggr_over_several_bn_stats():
    x = rng(26).random((128, 1100)).astype(np.float32) * 100  # three bn_stats: 512 + 512 + 76
    _, mv = bn_kernel(x)
    np.testing.assert_allclose(mv[:, 0], x.astype(np.float64).mean(axis=1), rtol=1e-5)
    np.testing.assert_allclose(mv[:, 1], x.astype(np.float64).var(axis=1), rtol=1e-4)


def test_bn_constraints():
    @nki.jit
    def stats(x, free):
        t = to_sbuf(x)
        s = nl.ndarray((x.shape[0], free), dtype=nl.float32, buffer=nl.sbuf)
        nisa.bn_stats(dst=s, data=t)  # @bns

    @nki.jit
    def aggr(x, free):
        t = to_sbuf(x)
        s = nl.ndarray((x.shape[0], free), dtype=nl.float32, buffer=nl.sbuf)
        nisa.bn_aggr(dst=s, data=t)  # @bna

    with pytest.raises(nki.NkiError, match=err("bns", "bn_stats", "'data'", "513", "512")):
        stats(np.ones((4, 513), np.float32), 6)
    with pytest.raises(nki.NkiError, match=err("bns", "bn_stats", "'dst'", "6 elements")):
        stats(np.ones((4, 8), np.float32), 5)
    with pytest.raises(nki.NkiError, match=err("bna", "bn_aggr", "'data'", "multiple of 3")):
        aggr(np.ones((4, 7), np.float32), 2)
    with pytest.raises(nki.NkiError, match=err("bna", "bn_aggr", "'dst'", "2 elements")):
        aggr(np.ones((4, 6), np.float32), 3)


# ------------------------------------------------------------------------------------------------
# max8 / nc_find_index8 / nc_match_replace8


@nki.jit
def top8_kernel(x, idx_dtype):
    t = to_sbuf(x)
    P = x.shape[0]
    m = nl.ndarray((P, 8), dtype=x.dtype, buffer=nl.sbuf)
    nisa.max8(dst=m, src=t)
    i = nl.ndarray((P, 8), dtype=idx_dtype, buffer=nl.sbuf)
    nisa.nc_find_index8(dst=i, data=t, vals=m)
    return to_hbm(m), to_hbm(i)


def test_max8_and_find_index8():
    x = rng(27).permutation(32 * 128).reshape(32, 128).astype(np.float32)  # distinct values
    m, i = top8_kernel(x, nl.uint32)
    order = np.argsort(-x, axis=1)[:, :8]
    np.testing.assert_array_equal(m, np.take_along_axis(x, order, axis=1))
    assert i.dtype == np.uint32
    np.testing.assert_array_equal(i, order)
    y = rng(28).standard_normal((4, 2, 10)).astype(np.float32)  # a 3-D source, bf16 values
    m, i = top8_kernel(y.astype(BF16), nl.uint16)
    flat = y.astype(BF16).astype(np.float32).reshape(4, 20)
    np.testing.assert_array_equal(m.astype(np.float32), -np.sort(-flat, axis=1)[:, :8])


def test_find_index8_duplicates_and_missing_values():
    @nki.jit
    def kernel(data, vals, idx_dtype):
        t, v = to_sbuf(data), to_sbuf(vals)
        i = nl.ndarray((data.shape[0], 8), dtype=idx_dtype, buffer=nl.sbuf)
        nisa.nc_find_index8(dst=i, data=t, vals=v)
        return to_hbm(i)

    data = np.array([[5, 1, 5, 2, 5, 3, 4, 6, 7, 8]], np.float32)
    vals = np.array([[5, 5, 9, 1, 5, 5, 2, 3]], np.float32)
    # equal vals take successive occurrences in ascending order; a value not found gives all ones
    np.testing.assert_array_equal(kernel(data, vals, nl.uint32),
                                  [[0, 2, 0xFFFFFFFF, 1, 4, 0xFFFFFFFF, 3, 5]])
    np.testing.assert_array_equal(kernel(data, vals, nl.uint16), [[0, 2, 0xFFFF, 1, 4, 0xFFFF, 3, 5]])


def test_match_replace8_docs_example_and_random():
    @nki.jit
    def kernel(data, vals, imm):
        t, v = to_sbuf(data), to_sbuf(vals)
        d = nl.ndarray(data.shape, dtype=data.dtype, buffer=nl.sbuf)
        i = nl.ndarray((data.shape[0], 8), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.nc_match_replace8(dst=d, data=t, vals=v, imm=imm, dst_idx=i)
        return to_hbm(d), to_hbm(i)

    data = np.array([[1, 2, 3, 4, 8, 8, 8, 8, 8, 8, 8]], np.float32)
    vals = np.array([[3, 8, 8, 8, 8, 8, 8, 8]], np.float32)
    d, i = kernel(data, vals, -1.0)
    np.testing.assert_array_equal(i, [[2, 10, 9, 8, 7, 6, 5, 4]])  # the docs' example
    np.testing.assert_array_equal(d, [[1, 2, -1, 4, -1, -1, -1, -1, -1, -1, -1]])
    x = rng(29).random((128, 4, 4)).astype(np.float32)
    flat = x.reshape(128, 16)
    top = -np.sort(-flat, axis=1)[:, :8]
    d, i = kernel(x, top, float("-inf"))
    ref_idx = np.argsort(-flat, axis=1)[:, :8]  # distinct values: each val's only occurrence
    np.testing.assert_array_equal(i, ref_idx)
    ref = flat.copy()
    np.put_along_axis(ref, ref_idx, -np.inf, axis=1)
    np.testing.assert_array_equal(d, ref.reshape(x.shape))


def test_top8_constraints():
    @nki.jit
    def mx(x, dst_free):
        t = to_sbuf(x)
        m = nl.ndarray((x.shape[0], dst_free), dtype=x.dtype, buffer=nl.sbuf)
        nisa.max8(dst=m, src=t)  # @max8

    @nki.jit
    def find(x, vals, idx_dtype):
        t, v = to_sbuf(x), to_sbuf(vals)
        i = nl.ndarray((x.shape[0], 8), dtype=idx_dtype, buffer=nl.sbuf)
        nisa.nc_find_index8(dst=i, data=t, vals=v)  # @fi8

    @nki.jit
    def replace(x, vals, idx_dtype):
        t, v = to_sbuf(x), to_sbuf(vals)
        d = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        i = nl.ndarray((x.shape[0], 8), dtype=idx_dtype, buffer=nl.sbuf)
        nisa.nc_match_replace8(dst=d, data=t, vals=v, imm=0.0, dst_idx=i)  # @mr8

    with pytest.raises(nki.NkiError, match=err("max8", "max8", "'src'", "7 elements", "8 to 16384")):
        mx(np.ones((4, 7), np.float32), 8)
    with pytest.raises(nki.NkiError, match=err("max8", "max8", "'dst'", "8 elements")):
        mx(np.ones((4, 16), np.float32), 4)
    with pytest.raises(nki.NkiError, match=err("max8", "max8", "'src'", "more than 5 dimensions")):
        mx(np.ones((4, 2, 2, 2, 2, 2), np.float32), 8)
    v8 = np.ones((4, 8), np.float32)
    with pytest.raises(nki.NkiError, match=err("fi8", "nc_find_index8", "'dst'", "float32", "uint16, uint32")):
        find(np.ones((4, 16), np.float32), v8, nl.float32)
    with pytest.raises(nki.NkiError, match=err("fi8", "nc_find_index8", "'vals'", "8 elements")):
        find(np.ones((4, 16), np.float32), np.ones((4, 7), np.float32), nl.uint32)
    with pytest.raises(nki.NkiError, match=err("mr8", "nc_match_replace8", "'data'", "16385", "16384")):
        replace(np.ones((1, 16385), np.float32), np.ones((1, 8), np.float32), nl.uint32)
    with pytest.raises(nki.NkiError, match=err("mr8", "nc_match_replace8", "'dst_idx'", "integer")):
        replace(np.ones((4, 16), np.float32), v8, nl.float32)


# ------------------------------------------------------------------------------------------------
# local_gather


@nki.jit
def local_gather_kernel(src, index, n, valid):
    s, ix = to_sbuf(src), to_sbuf(index)
    d = nl.ndarray((src.shape[0], valid * n), dtype=src.dtype, buffer=nl.sbuf)
    nisa.local_gather(dst=d, src_buffer=s, index=ix, num_elem_per_idx=n, num_valid_indices=valid)  # @lg
    return to_hbm(d)


def test_local_gather_matches_aws_numpy_reference():
    # AWS's example (test_nki_isa_local_gather.py): src (128, 512, 4), 16x4 indices replicated over the 8
    # GpSimd cores, scaled to element offsets by num_elem_per_idx, 64 valid indices per core.
    src = (rng(30).random((128, 512, 4)) * 100).astype(np.float32)
    index_per_core = rng(31).integers(0, 512, (16, 4)).astype(np.uint16)
    index = np.tile(index_per_core, (8, 1))
    out = local_gather_kernel(src.reshape(128, 2048), index * 4, 4, 64)
    ref = np.empty((128, 64, 4), np.float32)
    for core in range(8):
        rows = slice(16 * core, 16 * core + 16)
        indices_1d = index[rows].flatten(order="F")[:64]
        ref[rows] = np.take(src[rows], indices_1d, axis=1)
    np.testing.assert_array_equal(out, ref.reshape(128, 256))


def test_local_gather_per_core_indices_and_default_count():
    @nki.jit
    def kernel(src, index):
        s, ix = to_sbuf(src), to_sbuf(index)
        d = nl.ndarray((src.shape[0], index.shape[1] * 16), dtype=src.dtype, buffer=nl.sbuf)
        nisa.local_gather(dst=d, src_buffer=s, index=ix)
        return to_hbm(d)

    src = np.arange(32 * 20, dtype=np.int16).reshape(32, 20)
    index = rng(32).integers(0, 20, (32, 2)).astype(np.uint16)
    ref = np.empty((32, 32), np.int16)
    for core in range(2):
        rows = slice(16 * core, 16 * core + 16)
        ref[rows] = src[rows][:, index[rows].flatten(order="F")]
    np.testing.assert_array_equal(kernel(src, index), ref)


def test_local_gather_constraints():
    src, idx = np.ones((16, 64), np.float32), np.zeros((16, 2), np.uint16)
    with pytest.raises(nki.NkiError, match=err("lg", "local_gather", "'index'", "uint32", "uint16")):
        local_gather_kernel(src, idx.astype(np.uint32), 1, 32)
    with pytest.raises(nki.NkiError, match=err("lg", "local_gather", "'num_elem_per_idx'", "3")):
        local_gather_kernel(src, idx, 3, 32)
    with pytest.raises(nki.NkiError, match=err("lg", "local_gather", "'src_buffer'", "'index'", "multiple of 16")):
        local_gather_kernel(np.ones((8, 64), np.float32), np.zeros((8, 2), np.uint16), 1, 16)
    with pytest.raises(nki.NkiError, match=err("lg", "local_gather", "'num_valid_indices'", "33", "32")):
        local_gather_kernel(src, idx, 1, 33)
    bad = idx.copy()
    bad[3, 1] = 62  # 62 + 4 elements pass the 64 of a row
    with pytest.raises(RUN_ERROR, match=err("lg", "local_gather", "index 62", "past")):
        local_gather_kernel(src, bad, 4, 32)


# ------------------------------------------------------------------------------------------------
# nc_matmul: tiling mode, double_row, is_transpose, NeuronCore-v4 sizes


def matmul_kernel(target, **kw):
    @nki.jit(platform_target=target)
    def kernel(aT, b, out_dtype=nl.float32):
        st, mv = to_sbuf(aT), to_sbuf(b)
        acc = nl.ndarray((aT.shape[-1], b.shape[-1]), dtype=out_dtype, buffer=nl.psum)
        nisa.nc_matmul(dst=acc, stationary=st, moving=mv, **kw)  # @mm
        return to_hbm(acc)
    return kernel


def test_matmul_tiling_mode_changes_no_value():
    aT = rng(33).standard_normal((64, 100)).astype(np.float32)
    b = rng(34).standard_normal((64, 300)).astype(np.float32)
    got = matmul_kernel("trn2", tile_position=(64, 0), tile_size=(64, 128))(aT, b)
    np.testing.assert_allclose(got, aT.T.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    a2 = aT[:32, :32].copy()
    got = matmul_kernel("trn2", tile_position=(96, 32), tile_size=(32, 32))(a2, b[:32])
    np.testing.assert_allclose(got, a2.T.astype(np.float64) @ b[:32], rtol=1e-4, atol=1e-4)


def test_matmul_tiling_constraints():
    a, b = np.ones((64, 64), np.float32), np.ones((64, 8), np.float32)
    with pytest.raises(nki.NkiError, match=err("mm", "nc_matmul", "'tile_position' and 'tile_size'", "both")):
        matmul_kernel("trn2", tile_size=(64, 128))(a, b)
    with pytest.raises(nki.NkiError, match=err("mm", "nc_matmul", "'tile_size'", "32", "NeuronCore-v3")):
        matmul_kernel("trn1", tile_position=(0, 0), tile_size=(32, 128))(a[:32], b[:32])
    with pytest.raises(nki.NkiError, match=err("mm", "nc_matmul", "'tile_position'", "32", "multiple", "64")):
        matmul_kernel("trn2", tile_position=(32, 0), tile_size=(64, 128))(a, b)
    with pytest.raises(nki.NkiError, match=err("mm", "nc_matmul", "'tile_size'", "48")):
        matmul_kernel("trn2", tile_position=(0, 0), tile_size=(48, 128))(a, b)
    with pytest.raises(nki.NkiError, match=err("mm", "nc_matmul", "'stationary'", "64 partitions", "at most 32")):
        matmul_kernel("trn2", tile_position=(0, 0), tile_size=(32, 128))(a, b)
    with pytest.raises(nki.NkiError, match=err("mm", "nc_matmul", "'stationary'", "64 elements", "at most 32")):
        matmul_kernel("trn2", tile_position=(0, 0), tile_size=(64, 32))(a, b)


def test_matmul_double_row_fp8():
    st = rng(35).standard_normal((128, 2, 16)).astype(ml_dtypes.float8_e5m2)
    mv = rng(36).standard_normal((128, 2, 40)).astype(ml_dtypes.float8_e5m2)
    got = matmul_kernel("trn2", perf_mode=nisa.matmul_perf_mode.double_row)(st, mv)
    ref = np.einsum("pjm,pjn->mn", st.astype(np.float64), mv.astype(np.float64))
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-4)
    with pytest.raises(nki.NkiError, match=err("mm", "nc_matmul", "double_row", "NeuronCore-v3")):
        matmul_kernel("trn1", perf_mode=nisa.matmul_perf_mode.double_row)(st, mv)
    with pytest.raises(nki.NkiError, match=err("mm", "nc_matmul", "'stationary'", "bfloat16", "double_row")):
        matmul_kernel("trn2", perf_mode=nisa.matmul_perf_mode.double_row)(st.astype(BF16), mv.astype(BF16))
    with pytest.raises(nki.NkiError, match=err("mm", "nc_matmul", "double_row", "column tiling")):
        matmul_kernel("trn2", perf_mode=nisa.matmul_perf_mode.double_row, tile_position=(0, 0),
                      tile_size=(128, 64))(st, mv)


def test_matmul_is_transpose_is_bit_accurate_from_v3():
    data = rng(37).standard_normal((32, 48)).astype(BF16)
    data[3, 5], data[7, 0] = np.nan, np.inf
    eye = np.eye(32, dtype=BF16)
    got = matmul_kernel("trn2", is_transpose=True)(data, eye, out_dtype=nl.bfloat16)
    np.testing.assert_array_equal(got.view(np.uint16), data.T.view(np.uint16))
    # NeuronCore-v2: the flag only labels the instruction; an ordinary matmul spreads the NaN along its row
    got = matmul_kernel("trn1", is_transpose=True)(data, eye)
    assert np.isnan(got[5]).all() and np.isnan(got[:, 3]).sum() >= 1
    keep = np.ones(48, bool)
    keep[[0, 5]] = False
    np.testing.assert_array_equal(got[keep], data.T.astype(np.float32)[keep])


def test_matmul_is_transpose_constraints():
    data, eye = np.ones((32, 48), BF16), np.eye(32, dtype=BF16)
    with pytest.raises(nki.NkiError, match=err("mm", "nc_matmul", "is_transpose", "'moving'", "[32, 32]")):
        matmul_kernel("trn2", is_transpose=True)(data, np.ones((32, 16), BF16))
    with pytest.raises(nki.NkiError, match=err("mm", "nc_matmul", "'dst'", "float16", "bfloat16")):
        matmul_kernel("trn2", is_transpose=True)(data, eye, out_dtype=nl.float16)
    not_eye = eye.copy()
    not_eye[2, 3] = 1
    with pytest.raises(RUN_ERROR, match=err("mm", "nc_matmul", "identity", "[2, 3]")):
        matmul_kernel("trn2", is_transpose=True)(data, not_eye)


def test_matmul_moving_free_size_per_version():
    aT = rng(38).standard_normal((32, 16)).astype(np.float32)
    b = rng(39).standard_normal((32, 1024)).astype(np.float32)
    got = matmul_kernel("trn3")(aT, b)
    np.testing.assert_allclose(got, aT.T.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    with pytest.raises(nki.NkiError, match=err("mm", "nc_matmul", "'moving'", "1024", "at most 512")):
        matmul_kernel("trn2")(aT, b)
    with pytest.raises(nki.NkiError, match=err("mm", "nc_matmul", "'stationary'", "float8_e4m3fn")):
        matmul_kernel("trn2")(aT.astype(ml_dtypes.float8_e4m3fn), b[:, :8].astype(ml_dtypes.float8_e4m3fn))


# ------------------------------------------------------------------------------------------------
# Fixes to the first slice's ops


def test_tensor_scalar_reverse_flags_and_bitvec():
    @nki.jit
    def arith(x, c, rev0, rev1):
        t, ct = to_sbuf(x), to_sbuf(c)
        d = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=d, data=t, op0=nl.subtract, operand0=ct, reverse0=rev0, op1=nl.divide, operand1=4.0,
                           reverse1=rev1)
        return to_hbm(d)

    @nki.jit
    def bits(x, c):
        t, ct = to_sbuf(x), to_sbuf(c)
        d = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=d, data=t, op0=nl.bitwise_and, operand0=ct, op1=nl.left_shift, operand1=3)
        return to_hbm(d)

    x = rng(40).uniform(1, 2, (8, 6)).astype(np.float32)
    c = rng(41).uniform(3, 4, (8, 1)).astype(np.float32)
    for rev0, rev1 in [(False, False), (True, False), (False, True), (True, True)]:
        t = (c - x) if rev0 else (x - c)
        ref = (np.float32(4) / t) if rev1 else (t / np.float32(4))
        np.testing.assert_allclose(arith(x, c, rev0, rev1), ref, rtol=1e-6)
    xi = rng(42).integers(0, 2**20, (8, 6)).astype(np.int32)
    ci = rng(43).integers(0, 2**20, (8, 1)).astype(np.int32)
    np.testing.assert_array_equal(bits(xi, ci), (xi & ci) << 3)


def test_tensor_scalar_constraints():
    def make(target):
        @nki.jit(platform_target=target)
        def call(x, c, op0=nl.multiply, op1=None, operand1=None, engine=nisa.engine.unknown):
            t = to_sbuf(x)
            ct = c if isinstance(c, (float, int)) or c is None else to_sbuf(c)
            d = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
            nisa.tensor_scalar(dst=d, data=t, op0=op0, operand0=ct, op1=op1, operand1=operand1, engine=engine)  # @ts
        return call

    call = make("trn2")
    x = np.ones((8, 4), np.float32)
    with pytest.raises(nki.NkiError, match=err("ts", "tensor_scalar", "'op0'", "'op1'", "both be arithmetic or both")):
        call(x.astype(np.int32), 1, op0=nl.bitwise_and, op1=nl.add, operand1=1)
    with pytest.raises(nki.NkiError, match=err("ts", "tensor_scalar", "bitvec", "integer tiles", "'dst'", "float32")):
        call(x, 1, op0=nl.bitwise_and)
    with pytest.raises(nki.NkiError, match=err("ts", "tensor_scalar", "'operand0'", "bfloat16", "float32")):
        call(x, np.ones((8, 1), BF16))
    with pytest.raises(nki.NkiError, match=err("ts", "tensor_scalar", "'operand0'", "None or 0", "nl.abs")):
        call(x, 2.0, op0=nl.abs)
    with pytest.raises(nki.NkiError, match=err("ts", "tensor_scalar", "'operand1'", "None", "'op1'")):
        call(x, 2.0, operand1=1.0)
    with pytest.raises(nki.NkiError, match=err("ts", "tensor_scalar", "Scalar engine of trn2", "nl.subtract")):
        call(x, 2.0, op0=nl.subtract, engine=nisa.engine.scalar)
    with pytest.raises(nki.NkiError, match=err("ts", "tensor_scalar", "GpSimd", "nl.rsqrt")):
        call(x, 2.0, engine=nisa.engine.gpsimd)
    make("trn2")(x, 2.0, op1=nl.add, operand1=1.0, engine=nisa.engine.scalar)  # (multiply, add) is fine


def test_activation_bias_rules():
    def make(target):
        @nki.jit(platform_target=target)
        def call(x, bias, op=nl.exp, bias_dtype=None):
            t = to_sbuf(x)
            b = bias if isinstance(bias, float) else to_sbuf(bias, dtype=bias_dtype)
            d = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=d, op=op, data=t, bias=b, scale=2.0)  # @act
            return to_hbm(d)
        return call

    x = rng(44).standard_normal((8, 4)).astype(np.float32)
    np.testing.assert_allclose(make("trn2")(x, 0.5), np.exp(x * 2 + np.float32(0.5)), rtol=1e-6)  # v3: scalar bias
    with pytest.raises(nki.NkiError, match=err("act", "activation", "'bias'", "8x2", "Nx1")):
        make("trn2")(x, np.ones((8, 2), np.float32))
    with pytest.raises(nki.NkiError, match=err("act", "activation", "'bias'", "Nx1 tile on NeuronCore-v2")):
        make("trn1")(x, 0.5)
    with pytest.raises(nki.NkiError, match=err("act", "activation", "nl.reciprocal", "no bias", "NeuronCore-v2")):
        make("trn1")(x, np.ones((8, 1), np.float32), op=nl.reciprocal)
    with pytest.raises(nki.NkiError, match=err("act", "activation", "'bias'", "tfloat32")):
        make("trn2")(x, np.ones((8, 1), np.float32), bias_dtype=nl.tfloat32)


def test_tensor_copy_and_memset_engines():
    def make(target):
        @nki.jit(platform_target=target)
        def copy(x, engine, psum):
            t = to_sbuf(x, buffer=nl.psum if psum else nl.sbuf)
            d = nl.ndarray(x.shape, dtype=nl.bfloat16, buffer=nl.sbuf)
            nisa.tensor_copy(dst=d, src=t, engine=engine)  # @tc
            return to_hbm(d)
        return copy

    x = rng(45).standard_normal((8, 4)).astype(np.float32)
    np.testing.assert_array_equal(make("trn2")(x, nisa.engine.scalar, True), x.astype(BF16))
    with pytest.raises(nki.NkiError, match=err("tc", "tensor_copy", "Scalar engine", "NeuronCore-v2", "nl.copy")):
        make("trn1")(x, nisa.engine.scalar, False)
    with pytest.raises(nki.NkiError, match=err("tc", "tensor_copy", "GpSimd", "PSUM")):
        make("trn2")(x, nisa.engine.gpsimd, True)

    @nki.jit
    def fill(engine):
        d = nl.ndarray((8, 4), dtype=nl.float32, buffer=nl.psum)
        nisa.memset(dst=d, value=1.0, engine=engine)  # @ms

    with pytest.raises(nki.NkiError, match=err("ms", "memset", "GpSimd", "PSUM")):
        fill(nisa.engine.gpsimd)
    with pytest.raises(nki.NkiError, match=err("ms", "memset", "'engine'", "tensor")):
        fill(nisa.engine.tensor)


# ------------------------------------------------------------------------------------------------
# The remaining documented rules, one error each


def test_more_constraints_vector_ops():
    @nki.jit
    def stt(a):
        x = to_sbuf(a)
        r = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(dst=r, data=x, op0=nl.abs, operand0=2.0, op1=nl.add, operand1=x)  # @stt_unary

    @nki.jit(platform_target="trn2")
    def rs(a, b, res_free=1, cmd=nisa.reduce_cmd.reset_reduce, start=0):
        t, lo = to_sbuf(a), to_sbuf(b)
        d = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        r = nl.ndarray((a.shape[0], res_free), dtype=nl.float32, buffer=nl.sbuf)
        nisa.range_select(dst=d, on_true_tile=t, comp_op0=nl.less, comp_op1=nl.less, bound0=lo, bound1=lo,  # @rs2
                          reduce_res=r, reduce_cmd=cmd, range_start=start)

    @nki.jit
    def sr(a, p, res_dtype=nl.float32, cmd=nisa.reduce_cmd.idle):
        t, pt = to_sbuf(a), to_sbuf(p)
        d = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        r = nl.ndarray((a.shape[0], 1), dtype=res_dtype, buffer=nl.sbuf)
        nisa.select_reduce(dst=d, predicate=pt, on_true=t, on_false=0.0, reduce_res=r, reduce_cmd=cmd)  # @sr2

    x, b = np.ones((8, 4), np.float32), np.ones((8, 1), np.float32)
    with pytest.raises(nki.NkiError, match=err("stt_unary", "scalar_tensor_tensor", "'operand0'", "None or 0")):
        stt(x)
    with pytest.raises(nki.NkiError, match=err("rs2", "range_select", "'reduce_res'", "(8, 1)")):
        rs(x, b, res_free=2)
    with pytest.raises(nki.NkiError, match=err("rs2", "range_select", "'reduce_cmd'", "load_reduce")):
        rs(x, b, cmd=nisa.reduce_cmd.load_reduce)
    with pytest.raises(nki.NkiError, match=err("rs2", "range_select", "'range_start'", "integer")):
        rs(x, b, start=0.5)
    p = np.ones((8, 4), np.uint8)
    with pytest.raises(nki.NkiError, match=err("sr2", "select_reduce", "'reduce_res'", "int32", "float")):
        sr(x, p, res_dtype=nl.int32)
    with pytest.raises(nki.NkiError, match=err("sr2", "select_reduce", "'reduce_cmd'", "load_reduce")):
        sr(x, p, cmd=nisa.reduce_cmd.load_reduce)


def test_more_constraints_exponential():
    @nki.jit(platform_target="trn3")
    def call(a, m, src_dtype=nl.float32, res_dtype=nl.float32, init=0.0):
        t = to_sbuf(a, dtype=src_dtype)
        mv = m if isinstance(m, float) else to_sbuf(m)
        iv = init if isinstance(init, float) else to_sbuf(init)
        d = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        r = nl.ndarray((a.shape[0], 1), dtype=res_dtype, buffer=nl.sbuf)
        nisa.exponential(dst=d, src=t, max_value=mv, reduce_res=r, reduce_cmd=nisa.reduce_cmd.load_reduce,  # @exp2
                         reduce_init=iv)

    x, col = np.ones((8, 4), np.float32), np.ones((8, 1), np.float32)
    with pytest.raises(nki.NkiError, match=err("exp2", "exponential", "'src'", "tfloat32")):
        call(x, 0.0, src_dtype=nl.tfloat32)
    with pytest.raises(nki.NkiError, match=err("exp2", "exponential", "'reduce_res'", "int32")):
        call(x, 0.0, res_dtype=nl.int32)
    with pytest.raises(nki.NkiError, match=err("exp2", "exponential", "'max_value'", "bfloat16", "float32")):
        call(x, col.astype(BF16))
    with pytest.raises(nki.NkiError, match=err("exp2", "exponential", "'reduce_init'", "bfloat16", "float32")):
        call(x, 0.0, init=col.astype(BF16))


def test_more_constraints_dma_transpose_and_local_gather():
    @nki.jit(platform_target="trn2")
    def dt(a, shape, dst_dtype=None, mode=nisa.dge_mode.unknown, oob=nisa.oob_mode.error):
        d = nl.ndarray(shape, dtype=dst_dtype or a.dtype, buffer=nl.sbuf)
        nisa.dma_transpose(dst=d, src=a, dge_mode=mode, oob_mode=oob)  # @dt2

    a = np.ones((16, 32), np.float16)
    with pytest.raises(nki.NkiError, match=err("dt2", "dma_transpose", "'dst'", "bfloat16", "'src'", "float16")):
        dt(a, (32, 16), dst_dtype=nl.bfloat16)
    with pytest.raises(nki.NkiError, match=err("dt2", "dma_transpose", "swdge", "vector_offset")):
        dt(a, (32, 16), mode=nisa.dge_mode.swdge)
    with pytest.raises(nki.NkiError, match=err("dt2", "dma_transpose", "oob_mode.skip", "indirect")):
        dt(a, (32, 16), oob=nisa.oob_mode.skip)
    with pytest.raises(nki.NkiError, match=err("dt2", "dma_transpose", "'src'", "2 to 4 dimensions")):
        dt(np.ones((2, 2, 2, 2, 2), np.float16), (2, 2, 2, 2, 2))

    @nki.jit
    def lg(src, index, dst_free, dst_dtype=None, valid=None):
        s, ix = to_sbuf(src), to_sbuf(index)
        d = nl.ndarray((src.shape[0], dst_free), dtype=dst_dtype or src.dtype, buffer=nl.sbuf)
        nisa.local_gather(dst=d, src_buffer=s, index=ix, num_valid_indices=valid)  # @lg2

    src, idx = np.ones((16, 64), np.float32), np.zeros((16, 2), np.uint16)
    with pytest.raises(nki.NkiError, match=err("lg2", "local_gather", "'dst'", "bfloat16", "'src_buffer'")):
        lg(src, idx, 32, dst_dtype=nl.bfloat16)
    with pytest.raises(nki.NkiError, match=err("lg2", "local_gather", "'dst'", "32 elements")):
        lg(src, idx, 31)
    with pytest.raises(nki.NkiError, match=err("lg2", "local_gather", "4097", "at most 4096")):
        lg(src, np.zeros((16, 257), np.uint16), 4097, valid=4097)


def test_more_constraints_first_slice_ops():
    @nki.jit
    def ts(a, c, engine):
        t = to_sbuf(a)
        ct = to_sbuf(c) if not isinstance(c, int) else c
        d = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=d, data=t, op0=nl.bitwise_or, operand0=ct, engine=engine)  # @ts2

    @nki.jit
    def act(a, s):
        t, st = to_sbuf(a), to_sbuf(s)
        d = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.activation(dst=d, op=nl.exp, data=t, scale=st)  # @act2

    @nki.jit
    def tc(a):
        t = to_sbuf(a)
        d = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=d, src=t, engine=nisa.engine.tensor)  # @tc2

    xi = np.ones((8, 4), np.int32)
    with pytest.raises(nki.NkiError, match=err("ts2", "tensor_scalar", "bitvec", "Vector engine only")):
        ts(xi, 1, nisa.engine.scalar)
    with pytest.raises(nki.NkiError, match=err("ts2", "tensor_scalar", "integer operands", "'operand0'", "float32")):
        ts(xi, np.ones((8, 1), np.float32), nisa.engine.unknown)
    with pytest.raises(nki.NkiError, match=err("act2", "activation", "'scale'", "bfloat16", "float32")):
        act(np.ones((8, 4), np.float32), np.ones((8, 1), BF16))
    with pytest.raises(nki.NkiError, match=err("tc2", "tensor_copy", "'engine'", "tensor")):
        tc(np.ones((8, 4), np.float32))


def test_more_constraints_top8_and_matmul():
    @nki.jit
    def find(x, vals):
        t, v = to_sbuf(x), to_sbuf(vals)
        i = nl.ndarray((x.shape[0], 8), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.nc_find_index8(dst=i, data=t, vals=v)  # @fi8b

    with pytest.raises(nki.NkiError, match=err("fi8b", "nc_find_index8", "'data'", "more than 5 dimensions")):
        find(np.ones((4, 2, 2, 2, 2, 2), np.float32), np.ones((4, 8), np.float32))
    with pytest.raises(nki.NkiError, match=err("fi8b", "nc_find_index8", "'vals'", "more than 3 dimensions")):
        find(np.ones((4, 16), np.float32), np.ones((4, 2, 2, 2), np.float32))
    e4 = np.ones((32, 16), np.float32)
    with pytest.raises(nki.NkiError, match=err("mm_mixed", "nc_matmul", "float8_e4m3", "float8_e4m3fn", "mixed")):
        @nki.jit(platform_target="trn3")
        def mixed(a, b):
            st = to_sbuf(a, dtype=nl.float8_e4m3)
            mv = to_sbuf(b, dtype=nl.float8_e4m3fn)
            acc = nl.ndarray((16, 16), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=acc, stationary=st, moving=mv)  # @mm_mixed
        mixed(e4, e4)
