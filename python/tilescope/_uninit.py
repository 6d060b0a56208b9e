"""Tracking of memory the program allocates uninitialized, for the ``uninit`` analysis.

``torch.empty``, ``torch.empty_like``, ``torch.empty_strided``, ``Tensor.new_empty`` and
``numpy.empty`` / ``numpy.empty_like`` are wrapped (``install``): the memory each returns (a CPU
tensor's storage; a numpy array of plain numbers) is registered with the native Definedness store
(include/tilescope/analysis/uninit.h), which fills it with a sentinel pattern (legal: its contents
are unspecified) and keeps a bit per byte. Kernel stores and atomics define bytes; any host write is
seen by comparing the memory with the sentinel when a kernel reads bytes nothing in a kernel wrote. A
weak-reference finalizer on the allocation's owner (the tensor, the root array) forgets it when it is
freed, so the store never outlives the memory it describes.

On by default wherever tilescope captures launches; off with ``TILESCOPE_UNINIT=0`` (``tilescope
sanitize --no-uninit``), or per kernel with ``@tilescope.trace("sanitizer", uninit=False)``.
Allocations made before tilescope installs (or through a name bound before it, ``from torch import
empty``) are not tracked: their reads are never reported.
"""
from __future__ import annotations

import functools
import os
import sys
import weakref

__all__ = ["enabled", "install"]

enabled = os.environ.get("TILESCOPE_UNINIT", "1").strip() not in ("0", "false", "no", "off")

_patched: set[str] = set()  # the modules whose functions are wrapped
_SKIP: tuple[str, ...] = ()
_PLAIN_KINDS = frozenset("biufc")  # numpy dtype kinds of plain numbers (no objects, no structured data)


def _site(frame) -> tuple[str, int]:
    """(file, line) of the first frame outside tilescope, torch and numpy."""
    while frame is not None and frame.f_code.co_filename.startswith(_SKIP):
        frame = frame.f_back
    if frame is None:
        return "?", 0
    f = frame.f_code.co_filename
    return (f if f.startswith("<") else os.path.abspath(f)), frame.f_lineno


def _track(host: int, nbytes: int, owner, call: str, int_bytes: bool) -> None:
    """int_bytes: 1-byte integer data (int8, uint8, bool), filled with the sentinel made for it."""
    from . import _native

    file, line = _site(sys._getframe(2))
    ident = _native.uninit_track(host, nbytes, call, file, line, int_bytes)
    if ident:
        weakref.finalize(owner, _native.uninit_forget, ident)


def _track_tensor(t, call: str) -> None:
    try:
        torch = sys.modules["torch"]
        if (t.device.type != "cpu" or t.layout != torch.strided or t.is_quantized or t._base is not None
                or type(t) not in (torch.Tensor, torch.nn.Parameter)):
            return
        storage = t.untyped_storage()
        host, nbytes = int(storage.data_ptr()), int(storage.nbytes())
        int_bytes = t.element_size() == 1 and not t.dtype.is_floating_point
    except Exception:  # a tensor without ordinary storage: never tracked
        return
    if host and nbytes:
        _track(host, nbytes, t, call, int_bytes)


def _track_array(a, call: str) -> None:
    try:
        if (type(a).__module__ != "numpy" or type(a).__name__ != "ndarray" or a.base is not None
                or a.dtype.kind not in _PLAIN_KINDS or not a.flags.writeable or not a.flags.owndata):
            return
        host, nbytes = int(a.ctypes.data), int(a.nbytes)
        int_bytes = a.dtype.itemsize == 1 and a.dtype.kind in "biu"
    except Exception:
        return
    if host and nbytes:
        _track(host, nbytes, a, call, int_bytes)


def _wrap(fn, track, call):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        out = fn(*args, **kwargs)
        if "out" not in kwargs:  # `out=` resizes an existing tensor: not a new allocation
            track(out, call)
        return out

    wrapper.__wrapped__ = fn
    return wrapper


def install() -> None:
    """Wrap the allocation functions of torch and numpy, each once it is imported. Idempotent and
    cheap (the launch path calls it too); does nothing when tracking is off."""
    global _SKIP
    if not enabled or len(_patched) == 2:
        return
    mods = {name: sys.modules.get(name) for name in ("torch", "numpy")}
    dirs = [os.path.dirname(os.path.abspath(__file__))]
    for m in mods.values():
        if m is not None and getattr(m, "__file__", None):
            dirs.append(os.path.dirname(os.path.abspath(m.__file__)))
    _SKIP = tuple(d + os.sep for d in dirs)
    torch, np = mods["torch"], mods["numpy"]
    if torch is not None and "torch" not in _patched:
        _patched.add("torch")
        for name in ("empty", "empty_like", "empty_strided"):
            setattr(torch, name, _wrap(getattr(torch, name), _track_tensor, f"torch.{name}"))
        torch.Tensor.new_empty = _wrap(torch.Tensor.new_empty, _track_tensor, "Tensor.new_empty")
    if np is not None and "numpy" not in _patched:
        _patched.add("numpy")
        for name in ("empty", "empty_like"):
            setattr(np, name, _wrap(getattr(np, name), _track_array, f"numpy.{name}"))
