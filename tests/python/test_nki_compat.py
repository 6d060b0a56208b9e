"""NKI 0.2.0 idioms that later versions dropped, still accepted: the memory-region keywords `sbuf`, `psum`,
`hbm` (bare names in a kernel: the 0.2.0 quickstart's "'sbuf' is a keyword in NKI")."""
from __future__ import annotations

import builtins

import numpy as np
import pytest

import tilescope.nki as nki
import tilescope.nki.isa as nisa
import tilescope.nki.language as nl


@nki.jit
def add_with_region_views(a, b):
    c = hbm.view(dtype=a.dtype, shape=a.shape)  # noqa: F821 (a keyword of NKI 0.2.0)
    ta = sbuf.view(dtype=a.dtype, shape=a.shape)  # noqa: F821
    nisa.dma_copy(dst=ta, src=a)
    tb = sbuf.view(dtype=b.dtype, shape=b.shape)  # noqa: F821
    nisa.dma_copy(dst=tb, src=b)
    acc = psum.view(dtype=nl.float32, shape=(a.shape[1], b.shape[1]))  # noqa: F821
    nisa.nc_matmul(dst=acc, stationary=ta, moving=tb)
    r = sbuf.view(dtype=nl.float32, shape=(a.shape[1], b.shape[1]))  # noqa: F821
    nisa.tensor_copy(dst=r, src=acc)
    nisa.dma_copy(dst=c, src=r)
    return c


def test_region_keywords_view_tensors_in_their_memory():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 64), dtype=np.float32)
    b = rng.standard_normal((64, 64), dtype=np.float32)
    c = add_with_region_views(a, b)
    assert np.allclose(c, a.T @ b, rtol=1e-4, atol=1e-4)
    # Only while a kernel runs, and a module's own name of the same spelling wins.
    assert not hasattr(builtins, "sbuf")


sbuf_rows = 7  # a module global called like a keyword's attribute: untouched


@nki.jit
def explicit_placement(a):
    t = sbuf[0:32, 0:128]  # noqa: F821
    return t


def test_explicit_placement_is_refused_plainly():
    with pytest.raises(nki.NkiError, match=r"sbuf\[\.\.\.\]: sub-regions \(explicit memory placement\) are not "
                                           r"modelled"):
        explicit_placement(np.zeros((4, 4), dtype=np.float32))
    assert sbuf_rows == 7


# ------------------------------------------------------------------------------------------------
# Private HBM, read-only arrays, what a kernel returns (found by a new user).

@nki.jit
def through_private_scratch(x):
    n, d = x.shape
    out = nl.ndarray((n, d), dtype=x.dtype, buffer=nl.shared_hbm)
    rows = n // nl.num_programs()
    p = nl.program_id(0)
    t = nl.ndarray((rows, d), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[p * rows:(p + 1) * rows])
    scratch = nl.ndarray((rows, d), dtype=x.dtype, buffer=nl.private_hbm)  # each program's own
    nisa.dma_copy(dst=scratch, src=t)
    u = nl.ndarray((rows, d), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=u, src=scratch)
    nisa.dma_copy(dst=out[p * rows:(p + 1) * rows], src=u)
    return out


def test_private_hbm_is_each_programs_own_no_race():
    import tilescope

    tilescope.clear_findings()
    x = np.arange(64 * 8, dtype=np.float32).reshape(64, 8)
    y = through_private_scratch[4](x)
    assert np.array_equal(y, x) and tilescope.findings() == []


@nki.jit
def copy_into(x, out):
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=out, src=t)


def test_writing_a_read_only_array_is_an_error_at_the_call():
    x = np.ones((4, 4), dtype=np.float32)
    out = np.zeros((4, 4), dtype=np.float32)
    out.setflags(write=False)
    with pytest.raises(nki.NkiError, match=r"nki.isa.dma_copy: argument 'dst' writes 'out', a read-only array"):
        copy_into(x, out)
    assert not out.any()


@nki.jit
def returns_views(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=out, src=t)
    return {"tail": out[1:], "col": out[:, 2], "all": out}


def test_a_returned_view_is_that_view_of_the_output():
    x = np.arange(6 * 5, dtype=np.float32).reshape(6, 5)
    r = returns_views(x)
    assert set(r) == {"tail", "col", "all"}
    assert np.array_equal(r["tail"], x[1:]) and np.array_equal(r["col"], x[:, 2]) and np.array_equal(r["all"], x)


def test_names_tilescope_lacks_say_so():
    with pytest.raises(AttributeError, match=r"nki.language.cos is not modelled by tilescope"):
        nl.cos  # noqa: B018
    with pytest.raises(AttributeError, match=r"nki.isa.rand is not modelled by tilescope"):
        nisa.rand  # noqa: B018


@nki.jit(platform_target="trn2")
def matmul_into(a, b, lo):
    at = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=at, src=a)
    bt = nl.ndarray((128, 512), dtype=b.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=bt, src=b)
    acc = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc[:, lo:lo + 512], stationary=at, moving=bt)


def test_a_matmul_result_stays_in_one_psum_bank():
    a = np.ones((128, 128), dtype=np.float32)
    b = np.ones((128, 512), dtype=np.float32)
    matmul_into(a, b, 512)  # bytes 2048..4095: the second bank
    with pytest.raises(nki.NkiError, match=r"nki.isa.nc_matmul: 'dst' covers bytes 1024..3071 of each PSUM "
                                           r"partition, across the 2 KiB bank boundary at 2048"):
        matmul_into(a, b, 256)
