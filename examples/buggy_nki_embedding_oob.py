"""BUGGY: an NKI embedding lookup (a gather of table rows by token id) that trusts its ids.

The kernel loads 128 token ids into SBUF and gathers their rows of the embedding table with one indirect
DMA (`table.ap(..., vector_offset=ids)`). The bug (line 27, marked `# BUG:`): padding tokens carry the id
-1 and two ids are past the vocabulary, and nothing clamps or masks them before the gather. On a Trainium
the DMA fails at run time (oob_mode.error, the default); tilescope reports the out-of-bounds rows, with
the element offsets they reached in 'table', and does not move them.

Run: tilescope sanitize -- python examples/buggy_nki_embedding_oob.py
"""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def embedding_kernel(table, ids):
    vocab, dim = table.shape
    n = ids.shape[0]
    out = nl.ndarray((n, dim), dtype=table.dtype, buffer=nl.shared_hbm)
    idx = nl.ndarray((n, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=ids.reshape((n, 1)))
    rows = nl.ndarray((n, dim), dtype=table.dtype, buffer=nl.sbuf)
    nisa.memset(dst=rows, value=0.0)
    # BUG: ids outside 0..vocab-1 (padding -1, and two past the end) are gathered as they are
    nisa.dma_copy(dst=rows, src=table.ap([[dim, n], [1, dim]], offset=0, vector_offset=idx))  # expect: out-of-bounds-load
    nisa.dma_copy(dst=out, src=rows)
    return out


def main():
    rng = np.random.default_rng(0)
    table = rng.standard_normal((1000, 64), dtype=np.float32)
    ids = rng.integers(0, 1000, size=128).astype(np.int32)
    ids[-8:] = -1  # padding
    ids[[5, 17]] = [1000, 1003]  # past the vocabulary
    y = embedding_kernel(table, ids)
    ok = np.array_equal(y[:5], table[ids[:5]])
    print("buggy_nki_embedding_oob: ran; the valid rows", "match" if ok else "DO NOT match", "numpy")


if __name__ == "__main__":
    main()
