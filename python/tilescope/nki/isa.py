"""nki.isa (NKI Beta 2) on tilescope: every call takes its destination first, is checked against the
documented constraints when it is called (NkiError at the kernel's line) and runs on tilescope's engine.

Signatures follow the nki.isa API reference (awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/
generated/nki.isa.<op>.html); the semantics are in src/nki/isa.cpp. Masks are gone in Beta 2: `mask=`
is an error, as with the NKI compiler.
"""
from __future__ import annotations

import enum

from . import language as _nl
from ._kernel import NkiError, Tensor, append, current, located


FP32_MIN = -3.4028235e+38  # range_select's on_false_value, as the docs spell it


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


class matmul_perf_mode(enum.Enum):
    """nki.isa.matmul_perf_mode: nc_matmul's FP8 double-row mode (NeuronCore-v3+)."""

    none = "none"
    double_row = "double_row"


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
        raise located("the mask parameter is not supported (NKI Beta 2 removed masks; slice the tiles instead)")


def nc_matmul(dst, stationary, moving, is_stationary_onezero=False, is_moving_onezero=False, is_transpose=False,
              accumulate=None, tile_position=(), tile_size=(), perf_mode=matmul_perf_mode.none, name=None, mask=None):
    """dst[M, N] (PSUM) = stationary[K, M].T @ moving[K, N] (SBUF) on the Tensor engine, in float32."""
    _no_mask(mask)
    append("nc_matmul", dst=dst, stationary=stationary, moving=moving, is_transpose=is_transpose,
           accumulate=accumulate, tile_position=tuple(tile_position or ()), tile_size=tuple(tile_size or ()),
           perf_mode=perf_mode)


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
    append("tensor_copy", dst=dst, src=src, engine=engine)


def reciprocal(dst, data, name=None, mask=None):
    """dst = 1 / data on the Vector engine."""
    _no_mask(mask)
    append("reciprocal", dst=dst, data=data)


def memset(dst, value, engine=engine.unknown, name=None, mask=None):
    """Every element of dst = value."""
    _no_mask(mask)
    append("memset", dst=dst, value=value, engine=engine)


def iota(dst, pattern, offset=0, channel_multiplier=0, name=None, mask=None):
    """dst[c, ...] = offset + c * channel_multiplier + the affine `pattern` ([[step, num], ...])."""
    _no_mask(mask)
    append("iota", dst=dst, pattern=pattern, offset=offset, channel_multiplier=channel_multiplier)


def dma_copy(dst, src, dst_rmw_op=None, oob_mode=oob_mode.error, dge_mode=dge_mode.unknown, engine=engine.unknown,
             priority=None, unique_indices=True, name=None, mask=None):
    """dst = src through a DMA queue (HBM and SBUF on either side), converting dtypes through float32."""
    _no_mask(mask)
    append("dma_copy", dst=dst, src=src, dst_rmw_op=dst_rmw_op, oob_mode=oob_mode)


def tensor_partition_reduce(dst, op, data, name=None, mask=None):
    """dst[1, ...] = op (nl.add, nl.average, nl.maximum, nl.bitwise_or, nl.bitwise_and) over data's partitions."""
    _no_mask(mask)
    append("tensor_partition_reduce", dst=dst, op=op, data=data)


def tensor_tensor_scan(dst, data0, data1, initial, op0, op1, reverse0=False, reverse1=False, name=None, mask=None):
    """Per partition: r[i] = op1(op0(data0[i], r[i-1]), data1[i]), r[-1] = initial."""
    _no_mask(mask)
    append("tensor_tensor_scan", dst=dst, data0=data0, data1=data1, initial=initial, op0=op0, op1=op1,
           reverse0=reverse0, reverse1=reverse1)


def scalar_tensor_tensor(dst, data, op0, operand0, op1, operand1, reverse0=False, reverse1=False, name=None,
                         mask=None):
    """dst = (data op0 operand0) op1 operand1; operand0 a number or [P, 1] tile, operand1 a tile."""
    _no_mask(mask)
    append("scalar_tensor_tensor", dst=dst, data=data, op0=op0, operand0=operand0, op1=op1, operand1=operand1,
           reverse0=reverse0, reverse1=reverse1)


def tensor_scalar_reduce(dst, data, op0, operand0, reduce_op, reduce_res=None, reverse0=False,
                         reduce_cmd=reduce_cmd.reset_reduce, reduce_init=None, reduce_res_negate=False, name=None,
                         mask=None):
    """dst = data op0 operand0; reduce_res[P, 1] = reduce_op over the free dims (the Vector accumulator)."""
    _no_mask(mask)
    append("tensor_scalar_reduce", dst=dst, data=data, op0=op0, operand0=operand0, reduce_op=reduce_op,
           reduce_res=reduce_res, reverse0=reverse0, reduce_cmd=reduce_cmd, reduce_init=reduce_init,
           reduce_res_negate=reduce_res_negate)


def tensor_copy_predicated(dst, src, predicate, reverse_pred=False, name=None, mask=None):
    """dst = src where predicate is nonzero (zero with reverse_pred); dst unchanged elsewhere."""
    _no_mask(mask)
    append("tensor_copy_predicated", dst=dst, src=src, predicate=predicate, reverse_pred=reverse_pred)


def affine_select(dst, pattern, channel_multiplier, on_true_tile, on_false_value, cmp_op=_nl.equal, offset=0,
                  name=None, mask=None):
    """dst = on_true_tile where cmp_op(offset + c * channel_multiplier + pattern, 0), else on_false_value.

    NKI 0.2.0's positional order (dst, pattern, offset, channel_multiplier, on_true_tile, on_false_value,
    cmp_op) is recognised by its tile in the fifth place."""
    _no_mask(mask)
    if isinstance(on_false_value, Tensor) and not isinstance(on_true_tile, Tensor):  # the 0.2.0 order
        offset, channel_multiplier, on_true_tile, on_false_value, cmp_op = (
            channel_multiplier, on_true_tile, on_false_value, cmp_op, offset if offset != 0 else _nl.equal)
    append("affine_select", dst=dst, pattern=pattern, channel_multiplier=channel_multiplier,
           on_true_tile=on_true_tile, on_false_value=on_false_value, cmp_op=cmp_op, offset=offset)


def range_select(dst, on_true_tile, comp_op0, comp_op1, bound0, bound1, reduce_cmd=reduce_cmd.reset_reduce,
                 reduce_res=None, reduce_op=_nl.maximum, range_start=0, on_false_value=FP32_MIN, name=None,
                 mask=None):
    """NeuronCore-v3+: dst = on_true_tile where comp_op0(range_start + i, bound0) and comp_op1(..., bound1),
    else FP32_MIN; the row maximum into the Vector accumulator / reduce_res."""
    _no_mask(mask)
    append("range_select", dst=dst, on_true_tile=on_true_tile, comp_op0=comp_op0, comp_op1=comp_op1, bound0=bound0,
           bound1=bound1, reduce_cmd=reduce_cmd, reduce_res=reduce_res, reduce_op=reduce_op,
           range_start=range_start, on_false_value=on_false_value)


def select_reduce(dst, predicate, on_true, on_false, reduce_res=None, reduce_cmd=reduce_cmd.idle,
                  reduce_op=_nl.maximum, reverse_pred=False, name=None, mask=None):
    """dst = where(predicate, on_true, on_false); the row maximum into the Vector accumulator / reduce_res."""
    _no_mask(mask)
    append("select_reduce", dst=dst, predicate=predicate, on_true=on_true, on_false=on_false, reduce_res=reduce_res,
           reduce_cmd=reduce_cmd, reduce_op=reduce_op, reverse_pred=reverse_pred)


def exponential(dst, src, max_value=0.0, reduce_res=None, reduce_cmd=reduce_cmd.idle, reduce_init=0.0, name=None,
                mask=None):
    """NeuronCore-v4: dst = exp(src - max_value); with reduce_cmd, the sum into the Vector accumulator."""
    _no_mask(mask)
    append("exponential", dst=dst, src=src, max_value=max_value, reduce_res=reduce_res, reduce_cmd=reduce_cmd,
           reduce_init=reduce_init)


def dma_transpose(dst, src, axes=None, priority=None, dge_mode=dge_mode.unknown, oob_mode=oob_mode.error, name=None,
                  mask=None):
    """dst (SBUF) = np.transpose(src, axes) through a DMA queue (2-byte dtypes)."""
    _no_mask(mask)
    append("dma_transpose", dst=dst, src=src, axes=None if axes is None else tuple(axes), priority=priority,
           dge_mode=dge_mode, oob_mode=oob_mode)


def bn_stats(dst, data, name=None, mask=None):
    """dst[P, 6] = (count, mean, variance * count) of the even and of the odd free elements."""
    _no_mask(mask)
    append("bn_stats", dst=dst, data=data)


def bn_aggr(dst, data, name=None, mask=None):
    """dst[P, 2] = (mean, variance) of the union of bn_stats triples."""
    _no_mask(mask)
    append("bn_aggr", dst=dst, data=data)


def max8(dst, src, name=None, mask=None):
    """dst[P, 8] = the 8 largest values of each partition, descending."""
    _no_mask(mask)
    append("max8", dst=dst, src=src)


def nc_find_index8(dst, data, vals, name=None, mask=None):
    """dst[P, 8] = the index of the first occurrence of each of vals[p, :] in data[p]."""
    _no_mask(mask)
    append("nc_find_index8", dst=dst, data=data, vals=vals)


def nc_match_replace8(dst, data, vals, imm, dst_idx=None, name=None, mask=None):
    """dst = data with the first occurrence of each of vals[p, :] replaced by imm; their indices to dst_idx."""
    _no_mask(mask)
    append("nc_match_replace8", dst=dst, data=data, vals=vals, imm=imm, dst_idx=dst_idx)


def local_gather(dst, src_buffer, index, num_elem_per_idx=1, num_valid_indices=None, name=None, mask=None):
    """GpSimd gather within each 16-partition group: dst[q] = src_buffer[q, idx:idx + num_elem_per_idx] for the
    group's indices."""
    _no_mask(mask)
    append("local_gather", dst=dst, src_buffer=src_buffer, index=index, num_elem_per_idx=num_elem_per_idx,
           num_valid_indices=num_valid_indices)


def __getattr__(name):
    """An nki.isa name tilescope does not model: said plainly (an AttributeError, as Python's)."""
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"nki.isa.{name} is not modelled by tilescope (README \"NKI kernels\" lists the ops it runs)")
