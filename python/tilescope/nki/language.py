"""nki.language (NKI Beta 2) on tilescope: buffers, dtypes, allocation, SPMD ids, loops, nl.load /
nl.store, and the operators that nki.isa ops take as `op=` (also callable on tiles, as in NKI 0.3.0).

Source: the nki.language API reference (awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/
nki.language.html) and the NKI language guide. Dtypes are strings, as in Beta 2 (nl.bfloat16 ==
"bfloat16").
"""
from __future__ import annotations

from ._kernel import NkiError, Tensor, ds
from ._kernel import append as _append
from ._kernel import current as _current
from ._kernel import located as _located

# Buffers (nki.language: sbuf, psum, hbm = private_hbm, shared_hbm).
sbuf = "sbuf"
psum = "psum"
hbm = "hbm"
private_hbm = "private_hbm"
shared_hbm = "shared_hbm"

# Data types.
bool_ = "bool_"
int8, int16, int32 = "int8", "int16", "int32"
uint8, uint16, uint32 = "uint8", "uint16", "uint32"
float16 = "float16"
bfloat16 = "bfloat16"
tfloat32 = "tfloat32"
float32 = "float32"
float8_e4m3 = "float8_e4m3"
float8_e4m3fn = "float8_e4m3fn"
float8_e5m2 = "float8_e5m2"


class tile_size:
    """Hardware tile limits (nki.language.tile_size): partitions, and the matmul's free sizes."""

    pmax = 128                   # partitions of SBUF and PSUM
    psum_fmax = 2048 // 4        # float32 elements of one PSUM bank per partition
    gemm_stationary_fmax = 128   # nc_matmul's stationary free size
    gemm_moving_fmax = 512       # nc_matmul's moving free size
    psum_min_align = 4
    sbuf_min_align = 1


def is_hbm(buffer) -> bool:
    return buffer in (hbm, private_hbm, shared_hbm)


def is_on_chip(buffer) -> bool:
    return buffer in (sbuf, psum)


def is_sbuf(buffer) -> bool:
    return buffer == sbuf


def is_psum(buffer) -> bool:
    return buffer == psum


# ------------------------------------------------------------------------------------------------
# Allocation


def ndarray(shape, dtype, buffer=None, name=None, **kwargs):
    """A tensor of `shape` and `dtype` in `buffer` (default nl.sbuf); its contents are undefined
    until written (reads before that are uninitialized-read findings)."""
    return _current().allocate(shape, dtype, buffer or sbuf, name=name)


def zeros(shape, dtype, buffer=None, name=None, **kwargs):
    """ndarray filled with zeros (a memset)."""
    return _current().allocate(shape, dtype, buffer or sbuf, name=name, zero=True)


def full(shape, fill_value, dtype, buffer=None, name=None, **kwargs):
    t = _current().allocate(shape, dtype, buffer or sbuf, name=name)
    _append("memset", dst=t, value=fill_value)
    return t


def ones(shape, dtype, buffer=None, name=None, **kwargs):
    return full(shape, 1, dtype, buffer=buffer, name=name)


def ndarray_like(t, buffer=None, dtype=None, name=None):
    return ndarray(t.shape, dtype or t.dtype, buffer=buffer or t.buffer, name=name)


empty_like = ndarray_like


def zeros_like(t, buffer=None, dtype=None, name=None):
    return zeros(t.shape, dtype or t.dtype, buffer=buffer or t.buffer, name=name)


# ------------------------------------------------------------------------------------------------
# SPMD and loops: compile-time values, as the NKI compiler specializes them.


def program_id(axis=0):
    """This program's index on the grid (an int: kernels may use it in Python `if`s)."""
    if axis != 0:
        raise _located(f"invalid program axis {axis} (must be zero): NKI Beta 2 grids are one-dimensional")
    return _current().program


def num_programs(axes=0):
    if axes not in (0, None):
        raise _located(f"invalid program axis {axes} (must be zero)")
    return _current().programs


def program_ndim():
    return 1 if _current().programs > 1 else 0


def affine_range(*args, **kwargs):
    """A loop whose iterations are independent (the compiler may run them in parallel): range()."""
    return range(*args)


def sequential_range(*args, **kwargs):
    """A loop with a dependency between iterations: range()."""
    return range(*args)


def static_range(*args, **kwargs):
    """A loop the compiler unrolls: range()."""
    return range(*args)


# ------------------------------------------------------------------------------------------------
# nl.load / nl.store (NKI 0.3.0): DMA copies between HBM and SBUF.


def load(src, dtype=None, **kwargs):
    """A new SBUF tile holding `src` (an HBM tile), converted to `dtype` when given."""
    if "mask" in kwargs and kwargs["mask"] is not None:
        raise _located("the mask parameter is not supported (NKI Beta 2)")
    if src.shape and src.shape[0] > tile_size.pmax:  # say so here, not as the allocation's error
        raise _located(f"nki.language.load: 'src' ({'x'.join(map(str, src.shape))}) has {src.shape[0]} rows, but "
                       f"the new SBUF tile puts dim 0 on the partitions: at most {tile_size.pmax} "
                       "(nl.tile_size.pmax); load it in tiles of at most 128 rows")
    dst = _current().allocate(src.shape, dtype or src.dtype, sbuf)
    _append("load", dst=dst, src=src)
    return dst


def store(dst, value, **kwargs):
    """Writes the SBUF tile `value` into the HBM tile `dst`."""
    if "mask" in kwargs and kwargs["mask"] is not None:
        raise _located("the mask parameter is not supported (NKI Beta 2)")
    _append("store", dst=dst, src=value)


def broadcast_to(x, shape, dtype=None):
    """A new SBUF tile of `shape` holding `x` (same rank) with its size-1 dims repeated, the partition dim
    included (on a NeuronCore a ones-matmul does that; the values are the same)."""
    shape = tuple(int(n) for n in shape)
    if len(shape) != len(x.shape) or any(n != m and n != 1 for n, m in zip(x.shape, shape)):
        raise _located(f"nl.broadcast_to: cannot broadcast {x!r} to {list(shape)} (same rank; size-1 dims only)")
    src = Tensor(x._trace, x._tid, x.dtype, x.buffer, x._offset, shape,
                 [0 if n == 1 and m != 1 else st for n, m, st in zip(x.shape, shape, x._strides)], x.name)
    out = _current().allocate(shape, dtype or x.dtype, sbuf)
    _append("dma_copy" if x.buffer not in (sbuf, psum) else "tensor_copy", dst=out, src=src)
    return out


def copy_tile(src, dtype=None):
    dst = _current().allocate(src.shape, dtype or src.dtype, sbuf)
    _append("tensor_copy", dst=dst, src=src)
    return dst


# ------------------------------------------------------------------------------------------------
# Operators: tokens for `op=` of nki.isa, callable on tiles (NKI 0.3.0's nl.add(x, y), nl.exp(x)).


class _Op:
    def __init__(self, name, kind):
        self.nki_name, self.kind, self.__name__ = name, kind, name

    def __repr__(self):
        return f"nl.{self.nki_name}"

    def __call__(self, x, y=None, dtype=None, axis=None, keepdims=False, **kwargs):
        if "mask" in kwargs and kwargs["mask"] is not None:
            raise _located("the mask parameter is not supported (NKI Beta 2)")
        if axis is not None:  # nl.sum / nl.max / ... (x, axis=): a reduction over trailing free dims
            if not isinstance(x, Tensor):
                raise _located(f"nl.{self.__name__} takes a tile, not {x!r}")
            axes = sorted({(a + len(x.shape)) % len(x.shape) for a in (axis if isinstance(axis, (list, tuple))
                                                                       else [axis])})
            kept = [n for d, n in enumerate(x.shape) if d not in axes or keepdims]
            if keepdims:
                kept = [1 if d in axes else n for d, n in enumerate(x.shape)]
            if len(kept) < 2:
                kept.append(1)
            out = _current().allocate(tuple(kept), dtype or x.dtype, sbuf)
            _append("tensor_reduce", dst=out, op=self, data=x, axis=list(axes))
            return out
        if self.kind == "act" or (self.kind == "unary" and y is None):
            if not isinstance(x, Tensor):
                raise _located(f"nl.{self.nki_name} takes a tile, not {x!r}")
            out = _current().allocate(x.shape, dtype or x.dtype, sbuf)
            if self.kind == "act":
                _append("activation", dst=out, op=self, data=x)
            else:
                _append("tensor_scalar", dst=out, data=x, op0=self, operand0=0.0)
            return out
        if isinstance(x, Tensor) and isinstance(y, Tensor):
            out = _current().allocate(x.shape, dtype or x.dtype, sbuf)
            if x.shape[1:] == y.shape[1:] or _numel(x) == _numel(y):
                _append("tensor_tensor", dst=out, data1=x, data2=y, op=self)
            else:  # a [P, 1] operand broadcast along the free dims
                _append("tensor_scalar", dst=out, data=x, op0=self, operand0=y)
            return out
        if isinstance(x, Tensor):
            out = _current().allocate(x.shape, dtype or x.dtype, sbuf)
            _append("tensor_scalar", dst=out, data=x, op0=self, operand0=float(y))
            return out
        if isinstance(y, Tensor):
            out = _current().allocate(y.shape, dtype or y.dtype, sbuf)
            _append("tensor_scalar", dst=out, data=y, op0=self, operand0=float(x), reverse0=True)
            return out
        raise _located(f"nl.{self.nki_name} takes tiles")


def _numel(t):
    n = 1
    for s in t.shape:
        n *= s
    return n


_ALU = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "equal", "not_equal", "greater_equal",
        "greater", "less_equal", "less", "logical_and", "logical_or", "logical_xor", "power", "abs_max",
        "abs_min", "average", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "invert"]
_ACT = ["copy", "sigmoid", "gelu", "gelu_dx", "gelu_apprx_tanh", "gelu_apprx_sigmoid", "silu", "silu_dx", "tanh",
        "softplus", "mish", "erf", "erf_dx", "exp", "log", "sin", "arctan", "sqrt", "sign"]
_UNARY = ["abs", "rsqrt", "reciprocal", "square", "relu"]  # ALU unary ops and activation functions both

for _n in _ALU:
    globals()[_n] = _Op(_n, "alu")
for _n in _ACT:
    globals()[_n] = _Op(_n, "act")
for _n in _UNARY:
    globals()[_n] = _Op(_n, "unary")
del _n
max = _Op("maximum", "alu")  # nl.max / nl.min: the documentation's spellings of maximum / minimum
min = _Op("minimum", "alu")
max.__name__, min.__name__ = "max", "min"
sum = _Op("add", "alu")  # nl.sum(x, axis=...) (NKI 0.3.0): a reduction with nl.add
sum.__name__ = "sum"
prod = _Op("multiply", "alu")
prod.__name__ = "prod"

del annotations  # from __future__: not part of nki.language
__all__ = [n for n in dir() if not n.startswith("_")]


def __getattr__(name):
    """A name of nki.language tilescope does not model: said plainly (an AttributeError, as Python's)."""
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"nki.language.{name} is not modelled by tilescope (README \"NKI kernels\" lists what is)")
