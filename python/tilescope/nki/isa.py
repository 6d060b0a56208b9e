"""nki.isa (NKI Beta 2) on tilescope: every call takes its destination first, is checked against the
documented constraints when it is called (NkiError at the kernel's line) and runs on tilescope's engine.

Signatures follow the nki.isa API reference (awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/
generated/nki.isa.<op>.html); the semantics are in src/nki/isa.cpp. Masks are gone in Beta 2: `mask=`
is an error, as with the NKI compiler.
"""
from __future__ import annotations

import enum

from ._kernel import NkiError, append, current


class engine(enum.Enum):
    """nki.isa.engine: which engine runs an instruction (unknown: tilescope picks, as the compiler does)."""

    unknown = 0
    tensor = 1
    scalar = 2
    gpsimd = 3
    dma = 4
    vector = 5
    sync = 6


# Module-level aliases kept by Beta 2 (nisa.vector_engine, ...).
unknown_engine, tensor_engine, scalar_engine = engine.unknown, engine.tensor, engine.scalar
gpsimd_engine, vector_engine = engine.gpsimd, engine.vector


class reduce_cmd(enum.Enum):
    """nki.isa.reduce_cmd: what an instruction does with its engine's accumulator."""

    idle = 0
    reset = 1
    reduce = 2
    reset_reduce = 3
    load_reduce = 4


class dge_mode(enum.Enum):
    unknown = 0
    swdge = 1
    hwdge = 2
    none = 3


class oob_mode(enum.Enum):
    error = 0
    skip = 1


class nc_version(enum.IntEnum):
    gen2 = 2
    gen3 = 3
    gen4 = 4


def get_nc_version():
    """The target's NeuronCore version (trn1: gen2, trn2: gen3, trn3: gen4)."""
    from .. import _native

    return nc_version(_native.nki_target(current().target)["nc_version"])


def _no_mask(mask):
    if mask is not None:
        raise NkiError("the mask parameter is not supported (NKI Beta 2 removed masks; slice the tiles instead)")


def nc_matmul(dst, stationary, moving, is_stationary_onezero=False, is_moving_onezero=False, is_transpose=False,
              accumulate=None, tile_position=(), tile_size=(), perf_mode=None, name=None, mask=None):
    """dst[M, N] (PSUM) = stationary[K, M].T @ moving[K, N] (SBUF) on the Tensor engine, in float32."""
    _no_mask(mask)
    append("nc_matmul", dst=dst, stationary=stationary, moving=moving, accumulate=accumulate)


def nc_transpose(dst, data, engine=engine.unknown, name=None, mask=None):
    """dst[F, P] = data[P, F]: the Vector engine up to 32 x 32, else the Tensor engine (SBUF -> PSUM)."""
    _no_mask(mask)
    append("nc_transpose", dst=dst, data=data, engine=engine)


def activation(dst, op, data, bias=None, scale=1.0, reduce_op=None, reduce_res=None, reduce_cmd=reduce_cmd.idle,
               name=None, mask=None):
    """dst = op(data * scale + bias) on the Scalar engine; optionally a sum over the free dims into its
    accumulator (reduce_cmd) and reduce_res."""
    _no_mask(mask)
    append("activation", dst=dst, op=op, data=data, bias=bias, scale=scale, reduce_op=reduce_op,
           reduce_res=reduce_res, reduce_cmd=reduce_cmd)


def activation_reduce(dst, op, data, reduce_op, reduce_res, bias=None, scale=1.0, name=None, mask=None):
    """activation with reduce_cmd = reset_reduce: reduce_res[P, 1] = sum over the free dims of dst."""
    _no_mask(mask)
    append("activation_reduce", dst=dst, op=op, data=data, reduce_op=reduce_op, reduce_res=reduce_res, bias=bias,
           scale=scale)


def tensor_tensor(dst, data1, data2, op, engine=engine.unknown, name=None, mask=None):
    """dst = op(data1, data2) element-wise (no broadcasting)."""
    _no_mask(mask)
    append("tensor_tensor", dst=dst, data1=data1, data2=data2, op=op, engine=engine)


def tensor_scalar(dst, data, op0, operand0, reverse0=False, op1=None, operand1=None, reverse1=False,
                  engine=engine.unknown, name=None, mask=None):
    """dst = (data op0 operand0) op1 operand1; operands are numbers or [P, 1] tiles."""
    _no_mask(mask)
    append("tensor_scalar", dst=dst, data=data, op0=op0, operand0=operand0, reverse0=reverse0, op1=op1,
           operand1=operand1, reverse1=reverse1, engine=engine)


def tensor_reduce(dst, op, data, axis, negate=False, keepdims=False, name=None, mask=None):
    """dst = op-reduction of data over its trailing free dims `axis`."""
    _no_mask(mask)
    append("tensor_reduce", dst=dst, op=op, data=data, axis=axis, negate=negate)


def tensor_copy(dst, src, engine=engine.unknown, name=None, mask=None):
    """dst = src within SBUF / PSUM (bit-exact for equal dtypes)."""
    _no_mask(mask)
    append("tensor_copy", dst=dst, src=src)


def reciprocal(dst, data, name=None, mask=None):
    """dst = 1 / data on the Vector engine."""
    _no_mask(mask)
    append("reciprocal", dst=dst, data=data)


def memset(dst, value, engine=engine.unknown, name=None, mask=None):
    """Every element of dst = value."""
    _no_mask(mask)
    append("memset", dst=dst, value=value)


def iota(dst, pattern, offset=0, channel_multiplier=0, name=None, mask=None):
    """dst[c, ...] = offset + c * channel_multiplier + the affine `pattern` ([[step, num], ...])."""
    _no_mask(mask)
    append("iota", dst=dst, pattern=pattern, offset=offset, channel_multiplier=channel_multiplier)


def dma_copy(dst, src, dst_rmw_op=None, oob_mode=oob_mode.error, dge_mode=dge_mode.unknown, engine=engine.unknown,
             priority=None, unique_indices=True, name=None, mask=None):
    """dst = src through a DMA queue (HBM and SBUF on either side), converting dtypes through float32."""
    _no_mask(mask)
    append("dma_copy", dst=dst, src=src, dst_rmw_op=dst_rmw_op)
