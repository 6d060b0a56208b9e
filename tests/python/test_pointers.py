"""Pointers made from integers (issue 9 item 4): a pointer array of data_ptr() values, as in Triton's
grouped GEMM tutorial. An address inside a live tensor is a pointer into that tensor (checked against
its bounds); one in no live allocation is a wild pointer, reported and never dereferenced.

Expected values come from torch; expected findings from the kernel below.
"""
from __future__ import annotations

import gc

import numpy as np
import torch
import triton
import triton.language as tl

import tilescope


@tilescope.trace("sanitizer")
@triton.jit
def scale_groups(src_ptrs, dst_ptrs, sizes, BLOCK: tl.constexpr):
    g = tl.program_id(0)
    src = tl.load(src_ptrs + g).to(tl.pointer_type(tl.float32))
    dst = tl.load(dst_ptrs + g).to(tl.pointer_type(tl.float32))
    n = tl.load(sizes + g)
    offs = tl.arange(0, BLOCK)
    x = tl.load(src + offs, mask=offs < n)
    tl.store(dst + offs, x * 2, mask=offs < n)


@tilescope.trace("sanitizer")
@triton.jit
def touch(x_ptr, y_ptr):
    pass


def ptr_array(*ts):
    return torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)


def launch(srcs, dsts, sizes):
    tilescope.clear_findings()
    scale_groups[(len(sizes),)](ptr_array(*srcs), ptr_array(*dsts), torch.tensor(sizes, dtype=torch.int32),
                                BLOCK=32)
    return tilescope.findings()


def test_pointer_array_into_live_tensors_is_clean_and_correct():
    a, b = torch.randn(10), torch.randn(32)
    oa, ob = torch.full((10,), -1.0), torch.full((32,), -1.0)
    assert launch([a, b], [oa, ob], [10, 32]) == []
    torch.testing.assert_close(oa, a * 2)
    torch.testing.assert_close(ob, b * 2)


def test_views_and_offsets_into_a_tensor_keep_its_provenance():
    base = torch.randn(64)
    out = torch.zeros(64)
    # Views made and dropped before the launch: their storage is the base's, which is alive.
    assert launch([base[8:], base[40:]], [out[8:], out[40:]], [16, 24]) == []
    torch.testing.assert_close(out[8:24], base[8:24] * 2)
    torch.testing.assert_close(out[40:], base[40:] * 2)


def test_pointer_past_the_end_of_its_tensor_is_out_of_bounds_of_that_tensor():
    a, b = torch.randn(10), torch.randn(20)
    oa, ob = torch.zeros(10), torch.zeros(32)
    found = launch([a, b], [oa, ob], [10, 32])  # b has 20 elements, the kernel reads 32
    assert [f["kind"] for f in found] == ["out-of-bounds-load"], found
    f = found[0]
    assert "float32[20]" in f["buffer"]["name"] and "test_pointers.py" in f["buffer"]["name"], f["buffer"]
    assert f["buffer"]["numel"] == 20
    assert (f["offsets"]["min"], f["offsets"]["max"]) == (20, 31), f
    torch.testing.assert_close(ob[:20], b * 2)
    torch.testing.assert_close(oa, a * 2)


def test_pointer_to_freed_memory_is_wild_and_never_dereferenced():
    a = torch.randn(10)
    oa, ob = torch.zeros(10), torch.zeros(32)
    # 64 MiB: glibc serves it with mmap and unmaps it when freed, so a read would fault.
    gone = torch.ones(16 << 20)
    srcs = ptr_array(a, gone)
    del gone
    gc.collect()
    tilescope.clear_findings()
    scale_groups[(2,)](srcs, ptr_array(oa, ob), torch.tensor([10, 32], dtype=torch.int32), BLOCK=32)
    found = tilescope.findings()
    assert [f["kind"] for f in found] == ["wild-pointer"], found
    assert found[0]["lanes"]["count"] == 32
    assert int(found[0]["addresses"]["min"], 16) == int(srcs[1])
    torch.testing.assert_close(oa, a * 2)


def test_numpy_arrays_seen_by_a_launch_are_live_allocations():
    a = np.arange(16, dtype=np.float32)
    out = np.zeros(16, dtype=np.float32)
    tilescope.clear_findings()
    scale_groups[(1,)](np.array([a.ctypes.data], dtype=np.int64), np.array([out.ctypes.data], dtype=np.int64),
                       np.array([16], dtype=np.int32), BLOCK=32)
    # Neither array was passed to a launch before: their addresses are unknown memory (numpy has no
    # hook on .ctypes.data), so the load and the store are wild and nothing is written.
    assert [f["kind"] for f in tilescope.findings()] == ["wild-pointer", "wild-pointer"]
    np.testing.assert_array_equal(out, np.zeros(16, dtype=np.float32))
    # Once passed to a launch, they are known for as long as they live.
    touch[(1,)](a, out)
    tilescope.clear_findings()
    scale_groups[(1,)](np.array([a.ctypes.data], dtype=np.int64), np.array([out.ctypes.data], dtype=np.int64),
                       np.array([16], dtype=np.int32), BLOCK=32)
    assert tilescope.findings() == []
    np.testing.assert_array_equal(out, a * 2)


def test_a_tensor_first_seen_by_a_launch_is_named_by_its_argument():
    # Triton's binder reads each tensor argument's data_ptr() for its alignment; that read is
    # tilescope's own, not the program's, so the tensor is named by the launch that passed it.
    a, out = torch.randn(10), torch.zeros(32)
    touch[(1,)](a, out)
    found = launch([a], [out], [32])  # a has 10 elements, the kernel reads 32
    assert [f["kind"] for f in found] == ["out-of-bounds-load"], found
    assert found[0]["buffer"]["name"] == "'x_ptr' of a launch of touch", found[0]["buffer"]
    torch.testing.assert_close(out[:10], a * 2)
