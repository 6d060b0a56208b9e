"""NKI (AWS Neuron Kernel Interface, Beta 2) kernels on tilescope's engine, without Trainium or the
`nki` package.

    import tilescope.nki as nki
    import tilescope.nki.language as nl
    import tilescope.nki.isa as nisa

Under `tilescope sanitize -- python prog.py`, `import nki`, `import nki.language` and `import nki.isa`
give these modules (also when the real `nki` package is installed), so unmodified kernels run on the
CPU with the sanitizer, the race detector and the uninitialized-memory analysis. README, "NKI kernels".
"""
from __future__ import annotations

from . import isa, language, typing
from ._kernel import Kernel, NkiError, jit


def simulate(kernel, *args, **kwargs):
    """nki.simulate(kernel): a callable running `kernel` on tilescope (also `nki.simulate(kernel, *args)`)."""
    k = kernel if isinstance(kernel, Kernel) else jit(kernel)
    if args or kwargs:
        return k(*args, **kwargs)
    return k


__all__ = ["Kernel", "NkiError", "isa", "jit", "language", "simulate", "typing"]
