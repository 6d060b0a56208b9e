"""Host-side tensor descriptors (triton.tools.tensor_descriptor.TensorDescriptor arguments, as Triton's
tutorials 06 and 09 use on Hopper) and the signed / unsigned element types a descriptor carries in
TTIR (`ui8`, `si8`, `si32`, ...; issue 9 item 3). Expected values come from torch.
"""
from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

import tilescope


@tilescope.trace("sanitizer")
@triton.jit
def add_one_2d(in_desc, out_desc, BM: tl.constexpr, BN: tl.constexpr):
    m = tl.program_id(0) * BM
    n = tl.program_id(1) * BN
    x = in_desc.load([m, n])
    out_desc.store([m, n], x + 1)


@tilescope.trace("sanitizer")
@triton.jit
def load_tile(in_desc, out_ptr, BM: tl.constexpr, BN: tl.constexpr):
    # The whole first block, including what lies outside the tensor (the descriptor's padding).
    x = in_desc.load([0, 0])
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(out_ptr + offs, x)


def run_add_one(x, BM=16, BN=32):
    out = torch.zeros_like(x)
    tilescope.clear_findings()
    grid = (triton.cdiv(x.shape[0], BM), triton.cdiv(x.shape[1], BN))
    add_one_2d[grid](TensorDescriptor.from_tensor(x, [BM, BN]), TensorDescriptor.from_tensor(out, [BM, BN]), BM=BM,
                     BN=BN)
    assert tilescope.findings() == []
    return out


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.bfloat16])
def test_float_descriptors(dtype):
    x = torch.randn(40, 96).to(dtype)  # 40 rows: the last row block is partly outside
    torch.testing.assert_close(run_add_one(x), x + 1)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64])
def test_integer_descriptors(dtype):
    # uint8 descriptors print as `ui8` in TTIR, int8 / int32 as `si8` / `si32`.
    info = torch.iinfo(dtype)
    x = torch.randint(max(info.min, -1000), min(info.max, 1000), (33, 64), dtype=dtype)
    x[0, 0] = info.max  # wraps, as on the GPU
    x[0, 1] = info.min
    expected = (x.to(torch.int64) + 1).to(dtype) if dtype != torch.int64 else x + 1
    if dtype == torch.int64:
        expected[0, 0] = info.min
    torch.testing.assert_close(run_add_one(x), expected)


def test_unsigned_values_stay_unsigned():
    x = torch.tensor([[200, 255, 0, 128] * 8] * 16, dtype=torch.uint8)
    out = torch.zeros(16 * 32, dtype=torch.float32)

    @tilescope.trace("sanitizer")
    @triton.jit
    def widen(in_desc, out_ptr, BM: tl.constexpr, BN: tl.constexpr):
        x = in_desc.load([0, 0]).to(tl.float32)
        offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
        tl.store(out_ptr + offs, x)

    widen[(1,)](TensorDescriptor.from_tensor(x, [16, 32]), out, BM=16, BN=32)
    torch.testing.assert_close(out.view(16, 32), x.to(torch.float32))


@pytest.mark.parametrize("padding", ["zero", "nan"])
def test_padding_outside_the_tensor(padding):
    x = torch.randn(10, 24)
    out = torch.full((16 * 32,), 7.0)
    tilescope.clear_findings()
    load_tile[(1,)](TensorDescriptor(x, list(x.shape), list(x.stride()), [16, 32], padding=padding), out, BM=16,
                    BN=32)
    assert tilescope.findings() == []
    tile = out.view(16, 32)
    torch.testing.assert_close(tile[:10, :24], x)
    fill = float("nan") if padding == "nan" else 0.0
    torch.testing.assert_close(tile[10:], torch.full((6, 32), fill), equal_nan=True)
    torch.testing.assert_close(tile[:, 24:], torch.full((16, 8), fill), equal_nan=True)


def test_descriptor_of_a_strided_view():
    big = torch.randn(32, 128)
    x = big[:, 32:96]  # row stride 128, 64 columns
    torch.testing.assert_close(run_add_one(x), x + 1)


@tilescope.trace("sanitizer")
@triton.jit
def device_desc_add_one(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    # A device-side descriptor (tt.make_tensor_descriptor) of an unsigned tensor: `ui8` in TTIR too.
    src = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dst = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    m = tl.program_id(0) * BM
    dst.store([m, 0], src.load([m, 0]) + 1)


def test_device_side_descriptor_of_uint8():
    x = torch.randint(0, 256, (40, 32), dtype=torch.uint8)
    out = torch.zeros_like(x)
    tilescope.clear_findings()
    device_desc_add_one[(3,)](x, out, 40, 32, BM=16, BN=32)
    assert tilescope.findings() == []
    torch.testing.assert_close(out, (x.to(torch.int32) + 1).to(torch.uint8))


@tilescope.trace("sanitizer")
@triton.jit
def matmul_tma(a_desc, b_desc, c_desc, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # As tutorial 09's matmul_kernel_tma: host descriptors for A [M, K], B^T [N, K] and C [M, N].
    m = tl.program_id(0) * BM
    n = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = a_desc.load([m, k * BK])
        b = b_desc.load([n, k * BK])
        acc = tl.dot(a, b.T, acc)
    c_desc.store([m, n], acc.to(tl.float16))


def test_matmul_through_host_descriptors():
    M, N, K = 80, 64, 72  # not multiples of the blocks: the descriptors pad and clip
    a = torch.randn(M, K).half()
    b = torch.randn(N, K).half()
    c = torch.zeros(M, N).half()
    BM, BN, BK = 32, 32, 32
    tilescope.clear_findings()
    matmul_tma[(triton.cdiv(M, BM), triton.cdiv(N, BN))](
        TensorDescriptor.from_tensor(a, [BM, BK]), TensorDescriptor.from_tensor(b, [BN, BK]),
        TensorDescriptor.from_tensor(c, [BM, BN]), K, BM=BM, BN=BN, BK=BK)
    assert tilescope.findings() == []
    torch.testing.assert_close(c.float(), a.float() @ b.float().T, atol=2e-2, rtol=2e-2)


@tilescope.trace("sanitizer")
@triton.jit
def masked_copy_to_desc(out_ptr, a_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    # As Triton's test_tensor_descriptor_store3d: lanes outside the tensor are masked off in the load
    # (no `other`, so undefined there) and clipped by the descriptor store, so they are never used.
    desc = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    m = tl.program_id(0) * BM
    rows = m + tl.arange(0, BM)[:, None]
    cols = tl.arange(0, BN)[None, :]
    mask = (rows < M) & (cols < N)
    block = tl.load(a_ptr + rows * N + cols, mask)
    desc.store([m, 0], block)


def test_descriptor_store_clips_undefined_lanes():
    M, N = 20, 24
    a = torch.randn(M, N)
    out = torch.zeros(M, N)
    tilescope.clear_findings()
    masked_copy_to_desc[(triton.cdiv(M, 16),)](out, a, M, N, BM=16, BN=32)
    assert tilescope.findings() == []
    torch.testing.assert_close(out, a)


def _block_shape_pre_hook(nargs):
    # As tutorial 06's _host_descriptor_pre_hook: the descriptor is made with a dummy block shape and the
    # configuration's pre_hook gives it the real one before the kernel is compiled for it.
    nargs["a_desc"].block_shape = [nargs["BM"], 16]


@tilescope.trace("sanitizer")
@triton.autotune(configs=[triton.Config({"BM": 16}, pre_hook=_block_shape_pre_hook),
                          triton.Config({"BM": 32}, pre_hook=_block_shape_pre_hook)], key=["M"])
@triton.jit
def autotuned_desc_dot(a_desc, b_ptr, c_ptr, M, BM: tl.constexpr):
    m = tl.program_id(0) * BM
    a = a_desc.load([m, 0])  # [BM, 16]; with the dummy [1, 1] block, tl.dot below does not compile
    offs = tl.arange(0, 16)
    b = tl.load(b_ptr + offs[:, None] * 16 + offs[None, :])
    c = tl.dot(a, b)
    rows = m + tl.arange(0, BM)
    tl.store(c_ptr + rows[:, None] * 16 + offs[None, :], c, mask=rows[:, None] < M)


def test_autotune_runs_the_config_pre_hook_before_compiling():
    # Triton's Autotuner._bench runs a configuration's pre_hook before it compiles and times it; tutorial
    # 06's descriptors get their block shape there (before the fix: a CompilationError, the dummy [1, 1]
    # block reaching tl.dot: "input and other must have equal reduction dimensions").
    M = 40
    a = torch.randn(M, 16).half()
    b = torch.randn(16, 16).half()
    c = torch.zeros(M, 16)
    desc = TensorDescriptor(a, shape=[M, 16], strides=[16, 1], block_shape=[1, 1])
    tilescope.clear_findings()
    autotuned_desc_dot[lambda META: (triton.cdiv(M, META["BM"]),)](desc, b, c, M)
    assert tilescope.findings() == []
    assert autotuned_desc_dot.best_config.kwargs == {"BM": 16}
    torch.testing.assert_close(c, a.float() @ b.float(), atol=1e-2, rtol=1e-2)
