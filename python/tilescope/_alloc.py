"""The registry of the program's live allocations: the CPU memory a kernel may reach by address.

A pointer that a kernel makes from an integer (a ``data_ptr()`` stored in a pointer array, as in
Triton's grouped GEMM tutorial; ``tl.int_to_ptr``; ``tt.int_to_ptr`` in TTIR) is a valid pointer when
the address lies in a live allocation of the program: the engine then gives it that allocation's
provenance and checks it against its bounds like any other pointer (exec/memory.h,
``Memory::from_host``). An address in no live allocation is a wild pointer: reported, never
dereferenced.

What is registered (each entry holds a weak reference, so the registry never keeps memory alive and
an entry disappears when its owner is collected):

- every torch CPU tensor and numpy array passed to a launch (``note``),
- every torch CPU tensor whose ``data_ptr()`` the program reads: ``torch.Tensor.data_ptr`` is wrapped
  when tilescope installs (``install``). Any integer address the program got from torch therefore
  names a registered tensor, as long as that tensor is alive.

A tensor is registered as its whole storage (``untyped_storage()``: every byte its views can reach),
owned by the root of its views (``._base``), which every view keeps alive. A numpy array is
registered as its root array (``.base`` chain). torch's CPU allocator has no Python hook for
allocations, so memory that was never passed to a launch and whose address was never read through
``data_ptr()`` (``ndarray.ctypes.data`` of an array never launched, a ctypes buffer) is unknown.

Interface (for the launch path): ``note(obj, name)``, ``live() -> list[Allocation]``, ``buffers()``.
The uninitialized-memory tracking keeps its own store of the allocations it tracks (``_uninit.py``).
"""
from __future__ import annotations

import os
import sys
import threading
import weakref
from dataclasses import dataclass

__all__ = ["Allocation", "note", "live", "buffers", "install", "raw_data_ptr"]


@dataclass(frozen=True)
class Allocation:
    """One live allocation: ``host`` (address of byte 0), ``nbytes``, element ``dtype`` (Triton's
    name, e.g. "float16"), ``itemsize``, ``name`` (how findings name it) and its ``owner``."""

    host: int
    nbytes: int
    dtype: str
    itemsize: int
    name: str
    owner: object


_lock = threading.RLock()  # re-entrant: a weakref callback may run (GC) while it is held
_entries: dict[int, tuple] = {}  # id(owner) -> (weakref, host, nbytes, dtype, itemsize, name)
_original_data_ptr = None
_SKIP_DIRS: tuple[str, ...] = ()
# own_reads.on: the data_ptr() calls on this thread are tilescope's own, not the program's (Triton's
# binder reads each tensor argument's address for its alignment; the launch then notes the tensor
# under its argument's name), so the wrapper registers nothing.
own_reads = threading.local()


def raw_data_ptr(t) -> int:
    """``t.data_ptr()`` without registering ``t`` (for tilescope's own use; ``t`` may also be a storage
    or any object with ``data_ptr()``)."""
    torch = sys.modules.get("torch")
    if _original_data_ptr is not None and torch is not None and isinstance(t, torch.Tensor):
        return _original_data_ptr(t)
    return t.data_ptr()


def _dtype_name(dtype) -> str:
    """A torch or numpy dtype's name ("float32"); kept per dtype (a launch asks for each tensor's)."""
    try:
        return _dtype_names[dtype]
    except (KeyError, TypeError):  # not seen yet, or an unhashable dtype-like object
        name = str(dtype).split(".")[-1]
        try:
            _dtype_names[dtype] = name
        except TypeError:
            pass
        return name


_dtype_names: dict = {}  # dtype -> _dtype_name(dtype)


def _remove(key, ref):
    with _lock:
        if _entries.get(key, (None,))[0] is ref:
            del _entries[key]


def _put(owner, host: int, nbytes: int, dtype: str, itemsize: int, name) -> None:
    """Register `owner` (`name`: the text findings use, or a function giving it: made only for an
    allocation not registered yet, so a known one costs a dict lookup)."""
    key = id(owner)
    with _lock:
        old = _entries.get(key)
        if old is not None and old[0]() is owner and old[1] == host and old[2] == nbytes:
            return  # known: keep the name it was first seen under
    try:
        ref = weakref.ref(owner, lambda r, k=key: _remove(k, r))
    except TypeError:
        return  # an object that cannot be weakly referenced cannot be tracked
    if callable(name):
        name = name()
    with _lock:
        _entries[key] = (ref, host, nbytes, dtype, itemsize, name)


def _is_numpy(x) -> bool:
    """Whether x is a numpy.ndarray itself (not a subclass such as a memmap), without importing numpy."""
    np = sys.modules.get("numpy")
    return np is not None and type(x) is np.ndarray


def note(obj, name) -> None:
    """Register the torch CPU tensor or numpy array ``obj`` (a view registers its root) as ``name`` (a
    string, or a function returning it: called only when ``obj`` is not registered yet). Other objects
    (CUDA or meta tensors, scalars) are ignored."""
    if _is_numpy(obj):
        root = obj
        while _is_numpy(getattr(root, "base", None)):
            root = root.base
        _put(root, int(root.ctypes.data), int(root.nbytes), _dtype_name(root.dtype), int(root.itemsize), name)
        return
    dev = getattr(obj, "device", None)
    if dev is None or getattr(dev, "type", None) != "cpu" or not hasattr(obj, "untyped_storage"):
        return
    root = obj
    while getattr(root, "_base", None) is not None:
        root = root._base
    try:
        storage = obj.untyped_storage()
        host = int(storage.data_ptr())
        nbytes = int(storage.nbytes())
    except (RuntimeError, NotImplementedError):  # a tensor without storage (sparse, functional)
        return
    if host == 0:
        return
    _put(root, host, nbytes, _dtype_name(obj.dtype), int(obj.element_size()), name)


def live() -> list[Allocation]:
    """The registered allocations whose owners are alive, oldest first."""
    with _lock:
        items = list(_entries.values())
    out = []
    for ref, host, nbytes, dtype, itemsize, name in items:
        owner = ref()
        if owner is not None:
            out.append(Allocation(host, nbytes, dtype, itemsize, name, owner))
    return out


def buffers() -> list:
    """``live()`` as ``_native.Buffer`` objects (a 1-D view of the whole allocation), for a launch."""
    from . import _native

    out = []
    for a in live():
        n = a.nbytes // a.itemsize if a.itemsize else a.nbytes
        try:
            out.append(_native.Buffer(a.name, a.dtype, a.host, a.nbytes, [n], [1]))
        except (ValueError, TypeError, _native.TilescopeError):
            out.append(_native.Buffer(a.name, "uint8", a.host, a.nbytes, [a.nbytes], [1]))
    return out


def _caller(frame) -> str:
    """``file:line`` of the first frame outside tilescope, Triton and torch."""
    while frame is not None and frame.f_code.co_filename.startswith(_SKIP_DIRS):
        frame = frame.f_back
    if frame is None:
        return "?"
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"


def install() -> None:
    """Wrap ``torch.Tensor.data_ptr`` so that every tensor whose address the program reads is
    registered. Idempotent; does nothing when torch is not imported."""
    global _original_data_ptr, _SKIP_DIRS
    torch = sys.modules.get("torch")
    if torch is None or _original_data_ptr is not None:
        return
    original = torch.Tensor.data_ptr
    _original_data_ptr = original
    dirs = [os.path.dirname(os.path.abspath(__file__))]
    for mod in ("triton", "torch"):
        m = sys.modules.get(mod)
        if m is not None and getattr(m, "__file__", None):
            dirs.append(os.path.dirname(os.path.abspath(m.__file__)))
    _SKIP_DIRS = tuple(d + os.sep for d in dirs)

    def data_ptr(self):
        p = original(self)
        if p and not getattr(own_reads, "on", False):
            try:
                if self.device.type == "cpu":
                    frame = sys._getframe(1)
                    note(self, lambda: f"tensor {_dtype_name(self.dtype)}{list(self.shape)} "
                                       f"(data_ptr() at {_caller(frame)})")
            except Exception:  # a tensor subclass without storage: the program's call must not fail
                pass
        return p

    data_ptr.__doc__ = original.__doc__
    data_ptr.__wrapped__ = original
    torch.Tensor.data_ptr = data_ptr
