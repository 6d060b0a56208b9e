"""The NKI front end: `nki.jit` kernels specialized in Python, run in C++ (tilescope/nki/nki.h).

The NKI compiler specializes a kernel by running its Python code: loops and `if`s are Python's,
`nl.program_id()` is a compile-time integer, and only `nki.isa` calls become instructions (NKI language
guide, "compilation model"). tilescope does the same: the kernel's Python runs once per SPMD program,
each operation is checked in C++ when it is called (a broken constraint raises `NkiError` at the
kernel's line) and appended to that program, and then every program runs on tilescope's engine under the
sanitizer, the race detector and the uninitialized-memory analysis. HBM tensors are the caller's arrays
(numpy or torch CPU, zero-copy); kernel outputs (`nl.ndarray(..., buffer=nl.shared_hbm)`) are returned as
arrays of the caller's kind.
"""
from __future__ import annotations

import builtins
import contextlib
import functools
import inspect
import itertools
import os
import re
import sys
import threading

_HERE = os.path.dirname(os.path.abspath(__file__))
_PKG = os.path.dirname(_HERE)


class NkiError(Exception):
    """An NKI kernel broke a documented constraint, or tilescope cannot run it (the message names the
    kernel's file and line, the op, the argument and the rule)."""


_current = threading.local()


def current() -> "_Trace":
    t = getattr(_current, "trace", None)
    if t is None:
        raise NkiError("this nki.language / nki.isa call is only valid inside an @nki.jit kernel being called")
    return t


_INSIDE: dict = {}   # file name -> whether it is tilescope's own
_COLUMNS: dict = {}  # (code, instruction offset) -> the call's column


def user_location() -> tuple[str, int, int]:
    """(file, line, column) of the innermost frame outside tilescope's own package (cached per call site:
    kernels make this call once per instruction)."""
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        f = code.co_filename
        inside = _INSIDE.get(f)
        if inside is None:
            inside = _INSIDE[f] = os.path.abspath(f).startswith(_PKG + os.sep)
        if not inside:
            key = (code, frame.f_lasti)
            col = _COLUMNS.get(key)
            if col is None:
                col = 0
                try:  # Python 3.11+: the call's column, a 0-based offset as Triton records it (PyLoc)
                    pos = next(itertools.islice(code.co_positions(), frame.f_lasti // 2, None))
                    col = pos[2] or 0
                except Exception:
                    pass
                _COLUMNS[key] = col
            return f, frame.f_lineno, col
        frame = frame.f_back
    return "", 0, 0


def located(message: str) -> NkiError:
    """An NkiError at the kernel's line: "file:line:col: message"."""
    file, line, col = user_location()
    return NkiError(f"{file}:{line}:{col}: {message}" if file else message)


def native_call(fn, *args, **kwargs):
    """Calls into the native module, turning its errors into NkiError (with the location it names)."""
    from .. import _native

    try:
        return fn(*args, **kwargs)
    except _native.TilescopeError as e:
        raise NkiError(str(e)) from None


# ------------------------------------------------------------------------------------------------
# Dtypes: NKI's are strings in Beta 2 (nl.bfloat16 == "bfloat16").

_NUMPY_NAMES = {"float32": "float32", "float16": "float16", "bfloat16": "bfloat16", "int8": "int8",
                "int16": "int16", "int32": "int32", "uint8": "uint8", "uint16": "uint16", "uint32": "uint32",
                "bool": "bool_", "bool_": "bool_", "float8_e4m3": "float8_e4m3", "float8_e4m3fn": "float8_e4m3fn",
                "float8_e5m2": "float8_e5m2", "tfloat32": "tfloat32"}


def dtype_name(dt) -> str:
    """NKI's name of a dtype given as an NKI string, a numpy / ml_dtypes dtype or a torch dtype."""
    if isinstance(dt, str):
        n = dt
    else:
        n = str(dt)
        if n.startswith("torch."):
            n = n[len("torch."):]
        elif not isinstance(dt, type):
            n = getattr(dt, "name", n)
        else:
            import numpy as np
            n = np.dtype(dt).name
    n = {"float": "float32", "half": "float16", "float8_e4m3fnuz": "float8_e4m3"}.get(n, n)
    if n not in _NUMPY_NAMES:
        raise located(f"unsupported NKI dtype {dt!r} (float32, tfloat32, bfloat16, float16, float8_e4m3, "
                      "float8_e5m2, int8, int16, int32, uint8, uint16, uint32, bool_)")
    return _NUMPY_NAMES[n]


def numpy_dtype(name: str):
    import numpy as np

    if name in ("bfloat16", "float8_e4m3", "float8_e4m3fn", "float8_e5m2"):
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, {"float8_e4m3": "float8_e4m3fn"}.get(name, name)))
    if name == "tfloat32":
        return np.dtype("float32")
    return np.dtype(name)


# ------------------------------------------------------------------------------------------------
# Tensors and access patterns


class ds:
    """nl.ds(start, size): a dynamic slice of `size` elements from `start` (nki.language.ds)."""

    def __init__(self, start, size):
        self.start, self.size = int(start), int(size)

    def __repr__(self):
        return f"ds({self.start}, {self.size})"


class Tensor:
    """An NKI tensor or a tile of one: `shape`, `dtype` (NKI's name), `buffer` (nl.sbuf, nl.psum,
    nl.shared_hbm, ...) and an access pattern into its tensor. Indexing with ints, slices (step >= 1),
    `nl.ds` and `...` gives tiles; an int index drops its dimension."""

    def __init__(self, trace, tid, dtype, buffer, offset, shape, strides, name="", dynamic=None):
        self._trace, self._tid, self.dtype, self.buffer = trace, tid, dtype, buffer
        self._offset, self.shape, self._strides, self.name = offset, tuple(shape), tuple(strides), name
        self._dynamic = dynamic  # (vector_offset, scalar_offset, indirect_dim) of an .ap() with runtime offsets

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def strides(self):
        """Element strides of the view (language guide, "Anatomy of a tensor")."""
        return self._strides

    @property
    def offset(self):
        """The view's first element, in elements from the start of its storage."""
        return self._offset

    @property
    def size(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    def __repr__(self):
        return f"<nki tensor {self.name or '?'} {self.dtype}[{', '.join(map(str, self.shape))}] in {self.buffer}>"

    def _view(self):
        from .. import _native

        if self._dynamic is None:
            return _native.NkiView(self._tid, self._offset, list(self.shape), list(self._strides))
        vec, sca, dim = self._dynamic
        return _native.NkiView(self._tid, self._offset, list(self.shape), list(self._strides),
                               vec._view() if vec is not None else None, sca._view() if sca is not None else None, dim)

    def __getitem__(self, index):
        if self._dynamic is not None:
            raise located(f"index {self!r} before .ap() with dynamic offsets, not after")
        if not isinstance(index, tuple):
            index = (index,)
        if any(i is Ellipsis for i in index):
            k = index.index(Ellipsis)
            fill = len(self.shape) - (len(index) - 1)
            index = index[:k] + (slice(None),) * fill + index[k + 1:]
        if len(index) > len(self.shape):
            raise located(f"{len(index)} indices for a tensor of {len(self.shape)} dimensions ({self!r})")
        # NKI's rule (language guide, "Indexing"): an integer drops its dimension, except on an on-chip
        # tile, which keeps its partition dimension (size 1) and at least two dimensions (the last
        # integer-indexed free dimension stays, of size 1).
        on_chip = self.buffer in ("sbuf", "psum")
        last_int = None
        offset, shape, strides = self._offset, [], []
        for d, i in enumerate(index):
            n, s = self.shape[d], self._strides[d]
            if isinstance(i, ds):
                start, size, step = i.start, i.size, 1
            elif isinstance(i, slice):
                start, stop, step = i.start, i.stop, 1 if i.step is None else i.step
                if step < 1:
                    raise located(f"dimension {d}: a slice step must be positive, not {step}")
                start = 0 if start is None else int(start)
                stop = n if stop is None else int(stop)
                if start < 0:
                    start += n
                if stop < 0:
                    stop += n
                size = max(0, -(-(stop - start) // step))
            else:
                try:
                    j = int(i)
                except TypeError:
                    raise located(f"dimension {d}: cannot index with {i!r} (ints, slices, nl.ds)") from None
                if j < 0:
                    j += n
                if not 0 <= j < n:
                    raise located(f"dimension {d}: index {int(i)} is outside 0..{n - 1} of {self!r}")
                offset += j * s
                if on_chip and d == 0:  # an on-chip tile keeps its partition dimension, of size 1
                    shape.append(1)
                    strides.append(s)
                elif on_chip:
                    last_int = (len(shape), s)
                continue
            if start < 0 or start + (size - 1) * step >= n and size > 0:
                raise located(f"dimension {d}: elements {start}..{start + (size - 1) * step} are outside "
                               f"0..{n - 1} of {self!r}")
            offset += start * s
            shape.append(size)
            strides.append(s * step)
        for d in range(len(index), len(self.shape)):
            shape.append(self.shape[d])
            strides.append(self._strides[d])
        if on_chip and len(shape) < 2 and last_int is not None:
            shape.insert(last_int[0], 1)
            strides.insert(last_int[0], last_int[1])
        return Tensor(self._trace, self._tid, self.dtype, self.buffer, offset, shape, strides, self.name)

    def ap(self, pattern, offset=None, scalar_offset=None, vector_offset=None, indirect_dim=0, dtype=None):
        """An explicit access pattern over the tensor's storage (language guide, "View methods"):
        `pattern` = [[stride, count], ...] (outermost first; on chip the first pair is the partition
        dimension), in elements, from `offset` (default: this view's own offset). The result's shape is
        the counts. Runtime offsets, read when the instruction runs (dma_copy and tensor_copy take them):
        `vector_offset`, a [P, 1] int32 / uint32 SBUF tile, starts row i of an HBM tensor's view at
        idx[i] * (the elements of one step of dim 0) (indirect DMA: a gather or a scatter of rows);
        `scalar_offset`, a [1, 1] integer SBUF tile, adds its value times the elements of one step of
        `indirect_dim`. Elements moved outside the tensor are out-of-bounds findings (dma_copy's
        oob_mode=skip drops them). A dtype that reinterprets the tensor is not modelled yet."""
        dynamic = None
        if scalar_offset is not None or vector_offset is not None:
            for what, t in (("vector_offset", vector_offset), ("scalar_offset", scalar_offset)):
                if t is not None and not isinstance(t, Tensor):
                    raise located(f"ap(): {what} must be an integer tile in SBUF (a register is not modelled), "
                                  f"not {t!r}")
            dynamic = (vector_offset, scalar_offset, int(indirect_dim))
        if dtype is not None and dtype_name(dtype) != self.dtype:
            raise located("ap(): a dtype that reinterprets the tensor is not supported by tilescope yet")
        try:
            pairs = [(int(st), int(n)) for st, n in pattern]
        except (TypeError, ValueError):
            raise located(f"ap(): the pattern must be a list of [stride, count] pairs, not {pattern!r}") from None
        if not pairs or any(n < 1 for _, n in pairs):
            raise located(f"ap(): every count of the pattern must be positive ({pattern!r})")
        base = self._offset if offset is None else int(offset)
        return Tensor(self._trace, self._tid, self.dtype, self.buffer, base, [n for _, n in pairs],
                      [st for st, _ in pairs], self.name, dynamic)

    def reshape(self, shape):
        """The same elements with another shape (row-major); the tile must be contiguous."""
        if self._dynamic is not None:
            raise located(f"reshape {self!r} before .ap() with dynamic offsets, not after")
        shape = tuple(int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        n = 1
        for s in shape:
            n *= s
        m = 1
        for s in self.shape:
            m *= s
        if n != m:
            raise located(f"cannot reshape {self!r} ({m} elements) to {shape} ({n} elements)")
        if self.buffer in ("sbuf", "psum") and (not shape or shape[0] != self.shape[0]):
            raise located(f"cannot reshape the on-chip tensor {self!r} to {shape}: the partition dimension (dim 0, "
                          f"{self.shape[0]}) must stay as it is (moving data across partitions takes an instruction)")
        expect = 1
        for s, st in zip(reversed(self.shape), reversed(self._strides)):
            if s != 1 and st != expect:
                raise located(f"reshape of a tile that is not contiguous ({self!r})")
            expect *= s
        strides, acc = [], 1
        for s in reversed(shape):
            strides.append(acc)
            acc *= s
        return Tensor(self._trace, self._tid, self.dtype, self.buffer, self._offset, shape, strides[::-1], self.name)

    # View methods of NKI 0.5.0 (nki.language.NkiTensor, API reference): each returns a new view of the
    # same storage, built at specialization time. On-chip tensors keep their partition dim at dim 0.

    def _with(self, shape, strides, offset=None):
        if self._dynamic is not None:
            raise located(f"take views of {self!r} before .ap() with dynamic offsets, not after")
        return Tensor(self._trace, self._tid, self.dtype, self.buffer, self._offset if offset is None else offset,
                      shape, strides, self.name)

    def _dim(self, method, dim, extra=0):
        """`dim` normalized (negative from the end) against ndim + extra, or a located error."""
        n = self.ndim + extra
        d = int(dim)
        if d < 0:
            d += n
        if not 0 <= d < n:
            raise located(f"{method}(): dimension {dim} is outside the {n} dimensions of {self!r}")
        return d

    def _not_partition(self, method, d, what="dim"):
        if d == 0 and self.buffer in ("sbuf", "psum"):
            raise located(f"{method}(): {what} 0 is the partition dimension of the on-chip tensor {self!r}; "
                          "a view cannot change it")

    def is_contiguous(self):
        """Whether the view covers its storage densely in row-major order (the partition dim of an on-chip
        tensor is not counted: partitions are separate memories)."""
        expect = 1
        first = 1 if self.buffer in ("sbuf", "psum") else 0
        for n, st in zip(reversed(self.shape[first:]), reversed(self._strides[first:])):
            if n != 1 and st != expect:
                return False
            expect *= n
        return True

    def is_indirect(self):
        """Whether the view uses runtime (dynamic) addressing: an .ap() with vector_offset / scalar_offset."""
        return self._dynamic is not None

    def get_pattern(self):
        """The view as [[stride, count], ...], the format .ap() takes."""
        return [[st, n] for st, n in zip(self._strides, self.shape)]

    def permute(self, dims):
        """The dims reordered (dims a permutation of range(ndim); on chip dims[0] is 0)."""
        dims = [int(d) for d in dims]
        if sorted(dims) != list(range(self.ndim)):
            raise located(f"permute(): {tuple(dims)} is not a permutation of the {self.ndim} dimensions of {self!r}")
        if dims[0] != 0 and self.buffer in ("sbuf", "psum"):
            raise located(f"permute(): dims[0] must be 0 on the on-chip tensor {self!r} (its partition dimension "
                          f"stays first), not {dims[0]}")
        return self._with([self.shape[d] for d in dims], [self._strides[d] for d in dims])

    def broadcast(self, dim, size):
        """A size-1 dim repeated `size` times (stride 0); not the partition dim of an on-chip tensor."""
        d = self._dim("broadcast", dim)
        self._not_partition("broadcast", d)
        if self.shape[d] != 1:
            raise located(f"broadcast(): dimension {d} of {self!r} has size {self.shape[d]}; only a size-1 "
                          "dimension can be broadcast")
        if int(size) < 1:
            raise located(f"broadcast(): the size must be positive, not {size}")
        shape, strides = list(self.shape), list(self._strides)
        shape[d], strides[d] = int(size), 0
        return self._with(shape, strides)

    def expand_dim(self, dim):
        """A new size-1 dim at position `dim` (not 0 on chip)."""
        d = self._dim("expand_dim", dim, extra=1)
        self._not_partition("expand_dim", d)
        shape, strides = list(self.shape), list(self._strides)
        shape.insert(d, 1)
        strides.insert(d, strides[d] * shape[d + 1] if d < len(self.shape) else 1)
        return self._with(shape, strides)

    def squeeze_dim(self, dim):
        """The size-1 dim `dim` removed (not 0 on chip)."""
        d = self._dim("squeeze_dim", dim)
        self._not_partition("squeeze_dim", d)
        if self.shape[d] != 1:
            raise located(f"squeeze_dim(): dimension {d} of {self!r} has size {self.shape[d]}, not 1")
        return self._with(self.shape[:d] + self.shape[d + 1:], self._strides[:d] + self._strides[d + 1:])

    def reshape_dim(self, dim, shape):
        """Dim `dim` split into `shape` (its product; one -1 is inferred); not dim 0 on chip unless trivial."""
        d = self._dim("reshape_dim", dim)
        sizes = [int(s) for s in shape]
        n = self.shape[d]
        if sizes.count(-1) > 1:
            raise located(f"reshape_dim(): at most one -1 in {tuple(sizes)}")
        if -1 in sizes:
            known = 1
            for s in sizes:
                known *= s if s != -1 else 1
            if known <= 0 or n % known:
                raise located(f"reshape_dim(): {tuple(sizes)} cannot split dimension {d} of size {n}")
            sizes[sizes.index(-1)] = n // known
        prod = 1
        for s in sizes:
            prod *= s
        if prod != n or any(s < 1 for s in sizes):
            raise located(f"reshape_dim(): {tuple(sizes)} has {prod} elements, but dimension {d} of {self!r} has {n}")
        if len(sizes) != 1:
            self._not_partition("reshape_dim", d)
        strides, acc = [], self._strides[d]
        for s in reversed(sizes):
            strides.append(acc)
            acc *= s
        return self._with(self.shape[:d] + tuple(sizes) + self.shape[d + 1:],
                          self._strides[:d] + tuple(strides[::-1]) + self._strides[d + 1:])

    def flatten_dims(self, start_dim, end_dim):
        """Dims start_dim..end_dim (inclusive, contiguous in memory) merged into one (start_dim > 0 on chip)."""
        a, b = self._dim("flatten_dims", start_dim), self._dim("flatten_dims", end_dim)
        if a > b:
            raise located(f"flatten_dims(): start_dim {a} is after end_dim {b}")
        self._not_partition("flatten_dims", a, "start_dim")
        dims = [i for i in range(a, b + 1) if self.shape[i] != 1]
        for x, y in zip(dims, dims[1:]):
            if self._strides[x] != self._strides[y] * self.shape[y]:
                raise located(f"flatten_dims(): dimensions {a}..{b} of {self!r} are not contiguous in memory")
        n = 1
        for s in self.shape[a:b + 1]:
            n *= s
        return self._with(self.shape[:a] + (n,) + self.shape[b + 1:],
                          self._strides[:a] + (self._strides[dims[-1]] if dims else 1,) + self._strides[b + 1:])

    def slice(self, dim, start, end, step=1):
        """t[..., start:end:step, ...] on dim `dim` (0 <= start < end <= shape[dim], step >= 1)."""
        d = self._dim("slice", dim)
        start, end, step = int(start), int(end), int(step)
        if not 0 <= start < end <= self.shape[d] or step < 1:
            raise located(f"slice(): [{start}:{end}:{step}] is not a slice of dimension {d} (size {self.shape[d]}) "
                          f"of {self!r}: 0 <= start < end <= size, step >= 1")
        return self[(slice(None),) * d + (slice(start, end, step),)]

    def select(self, dim, index):
        """The element `index` of dim `dim`, the dim removed as an integer index removes it (a static int;
        a tensor index, a dynamic select, is not modelled yet)."""
        d = self._dim("select", dim)
        if isinstance(index, Tensor):
            raise located("select(): a dynamic index (an NkiTensor) is not supported by tilescope yet")
        i = int(index)
        if not 0 <= i < self.shape[d]:
            raise located(f"select(): index {i} is outside 0..{self.shape[d] - 1} of dimension {d} of {self!r}")
        return self[(slice(None),) * d + (i,)]  # integer indexing's rules (on chip: at least 2-D)


# ------------------------------------------------------------------------------------------------
# The specialization of one call


class _Trace:
    """One call of a kernel: its native launch, the program being specialized, its HBM outputs."""

    def __init__(self, name, target, programs):
        from .. import _native

        self.native = native_call(_native.NkiKernel, name, target, programs)
        self.target = target
        self.program = 0
        self.programs = programs
        self.outputs = []       # (tensor, array) of shared-HBM outputs, in allocation order
        self.private = []       # (tensor, array) of every program's private-HBM tensors (nl.private_hbm)
        self.readonly = set()   # ids of HBM tensors over read-only arrays (numpy writeable=False)
        self.hbm_seen = 0       # this program's shared-HBM allocations so far
        self.keep = []          # arrays that must outlive the run
        self.names = {}

    def add_array(self, name, array):
        """An HBM tensor over the caller's numpy array or torch CPU tensor."""
        import numpy as np

        if hasattr(array, "data_ptr") and hasattr(array, "element_size"):  # torch
            if getattr(array, "device", None) is not None and str(array.device) != "cpu":
                raise NkiError(f"argument '{name}' is on {array.device}; tilescope runs NKI kernels on CPU tensors")
            dt = dtype_name(array.dtype)
            ptr, esize = array.data_ptr(), array.element_size()
            shape, strides = list(array.shape), list(array.stride())
            readonly = False
        else:
            array = np.asarray(array)
            dt = dtype_name(array.dtype)
            esize = array.dtype.itemsize
            ptr = array.__array_interface__["data"][0]
            shape = list(array.shape)
            strides = [s // esize for s in array.strides]
            readonly = not array.flags.writeable
        if any(s < 0 for s in strides):
            raise NkiError(f"argument '{name}' has negative strides; pass a contiguous copy")
        nbytes = esize * (1 + sum((n - 1) * s for n, s in zip(shape, strides))) if all(shape) else 0
        tid = native_call(self.native.add_argument, name, dt, ptr, nbytes, shape, strides)
        if readonly:
            self.readonly.add(tid)  # a write into it would fault: refused where the kernel makes it
        self.keep.append(array)
        return Tensor(self, tid, dt, "shared_hbm", 0, shape, strides, name)

    def allocate(self, shape, dtype, buffer, name=None, zero=False):
        shape = tuple(int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        dt = dtype_name(dtype)
        file, line, col = user_location()
        if buffer in ("shared_hbm", "hbm", "private_hbm"):
            # Outputs: the k-th shared-HBM allocation of every program is one tensor (the grid's programs
            # share it, as names link shared_hbm tensors on the device). Private HBM (nl.private_hbm, and
            # nl.hbm, its alias) is "only visible to each individual kernel instance in the SPMD grid"
            # (nki.language's buffers): a tensor of each program's own when the grid has several.
            private = buffer != "shared_hbm" and self.programs > 1
            k = len(self.private) if private else self.hbm_seen
            self.hbm_seen += 0 if private else 1
            if not private and k < len(self.outputs):
                t, _ = self.outputs[k]
                if t.shape != shape or t.dtype != dt:
                    raise NkiError(f"{file}:{line}: program {self.program} allocates HBM tensor #{k} as {dt}{list(shape)}, "
                                   f"program 0 as {t.dtype}{list(t.shape)}")
                return t
            import numpy as np

            arr = (np.zeros if zero else np.empty)(shape, dtype=numpy_dtype(dt))
            if not zero and arr.nbytes:  # undefined until the kernel writes it: reads before are findings
                import weakref

                from .. import _native

                ident = _native.uninit_track(arr.ctypes.data, arr.nbytes, f"nl.ndarray(buffer=nl.{buffer})", file,
                                             line, arr.dtype.itemsize == 1 and arr.dtype.kind in "biu")
                if ident:
                    weakref.finalize(arr, _native.uninit_forget, ident)
            t = self.add_array(name or (f"{buffer}{k}_p{self.program}" if private else f"out{k}"), arr)
            t.buffer = buffer
            (self.private if private else self.outputs).append((t, arr))
            return t
        space = {"sbuf": "sbuf", "psum": "psum"}.get(buffer)
        if space is None:
            raise NkiError(f"{file}:{line}: unknown buffer {buffer!r} (nl.sbuf, nl.psum, nl.shared_hbm)")
        n = self.names.get(name or "t", 0)
        self.names[name or "t"] = n + 1
        label = name or _assigned_name(file, line) or f"{space}_{line}"
        tid = native_call(self.native.allocate, self.program, label, space, dt, list(shape), file, line, col)
        strides, acc = [], 1
        for s in reversed(shape):
            strides.append(acc)
            acc *= s
        t = Tensor(self, tid, dt, space, 0, shape, strides[::-1], label)
        if zero:
            append("memset", dst=t, value=0)
        return t


def append(op: str, /, **args) -> None:
    """Appends operation `op` of nki.isa (or nki.language's load / store) to the current program."""
    t = current()
    file, line, col = user_location()
    if "mask" in args and args["mask"] is None:
        del args["mask"]
    native = {}
    for k, v in args.items():
        if isinstance(v, Tensor) and k in ("dst", "reduce_res", "dst_idx") and v._tid in t.readonly:
            raise located(f"nki.isa.{op}: argument '{k}' writes '{v.name}', a read-only array (numpy's "
                          f"writeable=False, e.g. a memmap opened with mode='r'); pass a writable array")
        if isinstance(v, Tensor):
            v = v._view()
        elif callable(v) and hasattr(v, "nki_name"):
            v = v.nki_name
        elif hasattr(v, "value") and type(v).__module__.startswith("tilescope.nki"):  # an enum member
            v = v.name
        elif type(v).__module__ == "numpy" and getattr(v, "shape", None) == ():  # np.float32(0.5): a number
            v = v.item()
        elif callable(v) and not isinstance(v, (str, list, tuple)):  # np.exp, math.exp, a Python function
            name = getattr(v, "__name__", repr(v))
            where = f"numpy's np.{name}" if type(v).__module__ == "numpy" else repr(v)
            label = f"nki.language.{op}" if op in ("load", "store") else f"nki.isa.{op}"
            raise NkiError(f"{file}:{line}:{col}: {label}: argument '{k}' is {where}; NKI ops take the "
                           f"operators of nki.language (such as nl.{name})")
        native[k] = v
    native_call(t.native.append, t.program, op, native, file, line, col)


# ------------------------------------------------------------------------------------------------
# @nki.jit


class Kernel:
    """An `@nki.jit` kernel. `kernel(*args)` runs it on one program; `kernel[n](*args)` on an SPMD grid
    of n programs (Beta 2 grids are one-dimensional). Arguments: numpy arrays or torch CPU tensors (HBM
    tensors, written in place when the kernel stores into them) and Python values. Returns what the
    kernel returns, its HBM outputs as arrays of the arguments' kind."""

    def __init__(self, fn, target=None, **options):
        self.fn = fn
        self.target = target
        self.options = options
        functools.update_wrapper(self, fn)

    def __getitem__(self, grid):
        if isinstance(grid, tuple):
            if len(grid) != 1:
                raise located(f"kernel '{self.fn.__name__}': NKI Beta 2 grids are one-dimensional, not {grid}: launch "
                              f"kernel[n] with n the number of programs and derive the indexes from nl.program_id(0)")
            grid = grid[0]
        n = int(grid)
        if n < 1:
            raise located(f"kernel '{self.fn.__name__}': the grid needs at least one program, not {n}")
        return functools.partial(self._call, n)

    def __call__(self, *args, **kwargs):
        return self._call(1, *args, **kwargs)

    def _call(self, programs, *args, **kwargs):
        from .. import _state

        target = self.target or os.environ.get("TILESCOPE_NKI_TARGET") or \
            os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE") or "trn2"
        trace = _Trace(self.fn.__name__, target, programs)
        sig = inspect.signature(self.fn)
        bound = sig.bind(*args, **kwargs)
        torch_out = False
        call = {}
        for name, value in bound.arguments.items():
            if _is_array(value):
                torch_out |= hasattr(value, "data_ptr")
                call[name] = trace.add_array(name, value)
            else:
                call[name] = value
        results = None
        previous = getattr(_current, "trace", None)
        _current.trace = trace
        try:
            with _region_keywords():
                for p in range(programs):
                    trace.program, trace.hbm_seen = p, 0
                    r = self.fn(**call)
                    if p == 0:
                        results = r
        finally:
            _current.trace = previous
        # Under the profiler, the NKI profile (estimated per-engine timeline, DMA traffic) instead of the GPU's.
        profiling = _state.profile_options is not None or bool(_state.profilers)
        stack = _launch_stack()
        res = native_call(trace.native.run, '[["profile", {}]]' if profiling else _state.analyses_json(),
                          stack, _state.trace_path)
        _state.trace_error(res.get("trace_error"))
        _state.record(res["findings"], self.fn.__name__, stack, res["reports"])
        return _outputs(results, trace, torch_out)


_ASSIGNED = re.compile(r"\s*([A-Za-z_]\w*)\s*(?::[^=]+)?=(?!=)")


def _assigned_name(file, line):
    """The variable an allocation on `file:line` is assigned to (`t = nl.ndarray(...)` -> "t"), for the
    messages and findings that name the tile; None when the line is not a single-name assignment."""
    import linecache

    m = _ASSIGNED.match(linecache.getline(file, line))
    return m.group(1) if m else None


class MemoryRegion:
    """NKI 0.2.0's memory-region keywords: `sbuf`, `psum` and `hbm` are names in every kernel without an
    import ("'sbuf' is a keyword in NKI", the 0.2.0 quickstart), and `sbuf.view(dtype=..., shape=...)`
    allocates a tensor there as nl.ndarray does (an `hbm` view is a kernel output). Explicit placement
    (`.ptr()`, sub-regions by slicing) is not modelled."""

    def __init__(self, buffer):
        self.buffer = buffer

    def __repr__(self):
        return self.buffer

    def view(self, dtype, shape, name=None):
        return current().allocate(shape, dtype, self.buffer, name=name)

    def ptr(self, *args, **kwargs):
        raise located(f"{self.buffer}.ptr(): explicit memory placement is not modelled by tilescope; use "
                      f"{self.buffer}.view(dtype=..., shape=...)")

    def __getitem__(self, index):
        raise located(f"{self.buffer}[...]: sub-regions (explicit memory placement) are not modelled by tilescope; "
                      f"use {self.buffer}.view(dtype=..., shape=...)")


_REGIONS = {name: MemoryRegion(name) for name in ("sbuf", "psum", "hbm")}
_NO_NAME = object()


@contextlib.contextmanager
def _region_keywords():
    """The 0.2.0 keywords as builtins while the kernel's Python runs: a kernel's own global or local of the
    same name still wins (builtins come last in Python's name lookup)."""
    saved = {k: builtins.__dict__.get(k, _NO_NAME) for k in _REGIONS}
    builtins.__dict__.update(_REGIONS)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is _NO_NAME:
                builtins.__dict__.pop(k, None)
            else:
                builtins.__dict__[k] = v


def _launch_stack():
    from .._capture import launch_stack

    try:
        return launch_stack()
    except Exception:
        return []


def _is_array(v) -> bool:
    if hasattr(v, "data_ptr") and hasattr(v, "element_size"):
        return True
    return type(v).__module__ == "numpy" and hasattr(v, "__array_interface__")


def _outputs(r, trace, torch_out):
    """The kernel's return value with each HBM tensor it allocated as the caller's kind of array (a view of
    it, when the kernel returns a view: `return out[1:]`), in the same tuples, lists and dicts."""
    if isinstance(r, Tensor):
        for t, arr in trace.outputs + trace.private:
            if t._tid == r._tid:
                if (r._offset, r.shape, r._strides) != (t._offset, t.shape, t._strides):
                    import numpy as np

                    arr = np.lib.stride_tricks.as_strided(arr.reshape(-1)[r._offset:], shape=r.shape,
                                                          strides=[s * arr.itemsize for s in r._strides])
                if torch_out:
                    import torch

                    if arr.dtype.name in ("bfloat16",):
                        return torch.from_numpy(arr.view("uint16")).view(torch.bfloat16)
                    return torch.from_numpy(arr)
                return arr
        raise NkiError(f"the kernel returned {r!r}; a kernel returns HBM tensors it allocated (nl.shared_hbm)")
    if isinstance(r, (tuple, list)):
        return type(r)(_outputs(x, trace, torch_out) for x in r)
    if isinstance(r, dict):
        return {k: _outputs(v, trace, torch_out) for k, v in r.items()}
    return r


def jit(func=None, *, mode=None, platform_target=None, **kwargs):
    """nki.jit: `@nki.jit`, `@nki.jit()` or `nki.jit(fn)`. `platform_target` (trn1, trn2, trn3; NKI
    0.2.0's keyword) or TILESCOPE_NKI_TARGET / NEURON_PLATFORM_TARGET_OVERRIDE select the target
    (default trn2). `mode` is accepted and ignored, as NKI 0.3.0 does."""
    if func is None:
        return lambda f: Kernel(f, target=platform_target, **kwargs)
    return Kernel(func, target=platform_target, **kwargs)
