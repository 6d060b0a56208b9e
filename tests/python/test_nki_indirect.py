"""Runtime offsets in NKI access patterns: `.ap(vector_offset=)` gathers and scatters rows of an HBM tensor
through dma_copy (indirect DMA), `.ap(scalar_offset=)` moves a view by a value read when the instruction
runs (the NKI access-pattern guide; isa/dma_copy's oob_mode). Expected values are numpy's fancy indexing."""
from __future__ import annotations

import numpy as np
import pytest

import tilescope
import tilescope.nki as nki
import tilescope.nki.isa as nisa
import tilescope.nki.language as nl


@pytest.fixture(autouse=True)
def _clear():
    tilescope.clear_findings()
    yield
    tilescope.clear_findings()


def run(kernel, *args):
    """`kernel(*args)` (NKI kernels always run under the sanitizer); returns (output, its findings)."""
    tilescope.clear_findings()
    out = kernel(*args)
    return out, tilescope.findings()


@nki.jit
def gather_rows(table, ids, skip):
    n = ids.shape[0]
    _, d = table.shape
    out = nl.ndarray((n, d), dtype=table.dtype, buffer=nl.shared_hbm)
    idx = nl.ndarray((n, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=ids.reshape((n, 1)))
    t = nl.ndarray((n, d), dtype=table.dtype, buffer=nl.sbuf)
    nisa.memset(dst=t, value=-1.0)
    nisa.dma_copy(dst=t, src=table.ap([[d, n], [1, d]], offset=0, vector_offset=idx),
                  oob_mode=nisa.oob_mode.skip if skip else nisa.oob_mode.error)
    nisa.dma_copy(dst=out, src=t)
    return out


def test_a_gather_of_rows_is_numpys_fancy_indexing():
    rng = np.random.default_rng(1)
    table = rng.standard_normal((50, 24), dtype=np.float32)
    ids = rng.integers(0, 50, size=96).astype(np.int32)
    y, f = run(gather_rows, table, ids, False)
    assert np.array_equal(y, table[ids]) and f == []


def test_rows_outside_the_table_are_an_out_of_bounds_finding_naming_it():
    table = np.arange(10 * 8, dtype=np.float32).reshape(10, 8)
    ids = np.array([3, 12, 9, -1], dtype=np.int32)
    y, f = run(gather_rows, table, ids, False)
    (oob,) = [x for x in f if x["kind"] == "out-of-bounds-load"]
    assert oob["buffer"]["name"] == "table"
    # Row 12 is elements 96..103, row -1 elements -8..-1 of the 80-element table.
    assert (oob["offsets"]["min"], oob["offsets"]["max"]) == (-8, 103)
    assert oob["lanes"] == {"count": 16, "first": [8, 9, 10, 11, 12]} and oob["op"] == "nki.isa.dma_copy"
    assert oob["file"] == __file__ and oob["line"] == gather_rows.fn.__code__.co_firstlineno + 9
    assert "vector_offset" in oob["hint"] and "oob_mode" in oob["hint"]
    # The rows in the table are copied; the others are not moved (the tile keeps its memset value).
    assert np.array_equal(y[[0, 2]], table[[3, 9]]) and (y[[1, 3]] == -1).all()


def test_oob_mode_skip_drops_those_rows_without_a_finding():
    table = np.arange(10 * 8, dtype=np.float32).reshape(10, 8)
    ids = np.array([3, 12, 9, -1], dtype=np.int32)
    y, f = run(gather_rows, table, ids, True)
    assert f == []
    assert np.array_equal(y[[0, 2]], table[[3, 9]]) and (y[[1, 3]] == -1).all()


@nki.jit
def scatter_rows(x, ids, out):
    n, d = x.shape
    idx = nl.ndarray((n, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=ids.reshape((n, 1)))
    t = nl.ndarray((n, d), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=out.ap([[d, n], [1, d]], offset=0, vector_offset=idx), src=t)


def test_a_scatter_of_rows():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((16, 8), dtype=np.float32)
    ids = rng.permutation(40)[:16].astype(np.int32)
    out = np.zeros((40, 8), dtype=np.float32)
    _, f = run(scatter_rows, x, ids, out)
    want = np.zeros((40, 8), dtype=np.float32)
    want[ids] = x
    assert np.array_equal(out, want) and f == []
    out = np.zeros((40, 8), dtype=np.float32)
    _, f = run(scatter_rows, x, np.where(np.arange(16) == 5, 40, ids).astype(np.int32), out)
    (oob,) = f
    assert oob["kind"] == "out-of-bounds-store" and oob["buffer"]["name"] == "out"
    assert (oob["offsets"]["min"], oob["offsets"]["max"]) == (320, 327)


@nki.jit
def shifted_copy(x, k):
    p, f = x.shape
    out = nl.ndarray((p, 4), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((p, f), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    kk = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=kk, src=k)
    r = nl.ndarray((p, 4), dtype=x.dtype, buffer=nl.sbuf)
    # Columns k..k+3 of every partition: the offset moves by k elements of the last dimension.
    nisa.tensor_copy(dst=r, src=t.ap([[f, p], [1, 4]], offset=0, scalar_offset=kk, indirect_dim=1))
    nisa.dma_copy(dst=out, src=r)
    return out


def test_a_scalar_offset_read_when_the_copy_runs():
    x = np.arange(8 * 16, dtype=np.float32).reshape(8, 16)
    for k in (0, 5, 12):
        y, f = run(shifted_copy, x, np.array([[k]], dtype=np.int32))
        assert np.array_equal(y, x[:, k:k + 4]) and f == [], k


def test_rules_of_dynamic_offsets_are_errors_at_the_call():
    table = np.zeros((10, 8), dtype=np.float32)

    @nki.jit
    def float_index(table):
        idx = nl.ndarray((4, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=idx, value=0.0)
        t = nl.ndarray((4, 8), dtype=table.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=table.ap([[8, 4], [1, 8]], offset=0, vector_offset=idx))
        return t

    with pytest.raises(nki.NkiError, match=r"nki.isa.dma_copy: argument 'src': the vector_offset must be of an "
                                           r"integer dtype \(int32, uint32\), not float32"):
        float_index(table)

    @nki.jit
    def on_an_alu_op(table):
        idx = nl.ndarray((4, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.memset(dst=idx, value=0)
        t = nl.ndarray((4, 8), dtype=table.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=table[0:4])
        nisa.tensor_tensor(dst=t, data1=t, data2=t.ap([[8, 4], [1, 8]], offset=0, scalar_offset=idx[0:1]),
                           op=nl.add)
        return t

    with pytest.raises(nki.NkiError, match="dynamic offsets .* are taken by dma_copy and tensor_copy only"):
        on_an_alu_op(table)

    @nki.jit
    def wrong_rows(table):
        idx = nl.ndarray((2, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.memset(dst=idx, value=0)
        t = nl.ndarray((4, 8), dtype=table.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=table.ap([[8, 4], [1, 8]], offset=0, vector_offset=idx))
        return t

    with pytest.raises(nki.NkiError, match=r"the vector_offset must be a \[4, 1\] tile, not \[2, 1\]"):
        wrong_rows(table)
