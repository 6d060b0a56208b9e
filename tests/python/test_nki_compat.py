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
