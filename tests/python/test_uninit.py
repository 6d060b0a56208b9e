"""Reads of uninitialized memory (the `uninit` analysis, kind uninitialized-read) through the front door.

Memory from torch.empty / numpy.empty is undefined until a kernel or the host writes it; a kernel
load or atomic that reads never-written bytes is a finding at that op naming the allocation's line.
Expected lines come from marker comments in this file; expected values from torch / numpy.
"""
from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import tilescope
from tilescope import _native

THIS = os.path.abspath(__file__)
KIND = "uninitialized-read"


def line_of(marker: str) -> int:
    with open(THIS) as f:
        hits = [i + 1 for i, line in enumerate(f) if marker in line and "line_of(" not in line]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


@tilescope.trace("sanitizer")
@triton.jit
def hist_kernel(idx_ptr, hist_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    idx = tl.load(idx_ptr + offs, mask=mask)
    tl.atomic_add(hist_ptr + idx, 1, mask=mask)  # MARK-atomic


@tilescope.trace("sanitizer")
@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)  # MARK-scale-load
    tl.store(out_ptr + offs, x * 2, mask=mask)


@tilescope.trace("sanitizer")
@triton.jit
def write_cols_kernel(out_ptr, rows, cols, BC: tl.constexpr):
    # One program per row; writes columns [0, cols): the caller passes fewer columns than the tensor has.
    r = tl.program_id(0)
    c = tl.arange(0, BC)
    tl.store(out_ptr + r * BC + c, (r * BC + c).to(tl.float32), mask=c < cols)


@tilescope.trace("sanitizer", uninit=False)
@triton.jit
def scale_untracked_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * 2, mask=mask)


@pytest.fixture(autouse=True)
def _clean():
    tilescope.clear_findings()
    yield
    tilescope.clear_findings()


def uninit_findings():
    return [f for f in tilescope.findings() if f["kind"] == KIND]


def scale(x, n=None):
    n = (x.numel() if isinstance(x, torch.Tensor) else x.size) if n is None else n
    out = torch.empty(n) if isinstance(x, torch.Tensor) else np.zeros(n, dtype=x.dtype)
    scale_kernel[(triton.cdiv(n, 64),)](x, out, n, BLOCK=64)
    return out


def test_atomic_add_into_torch_empty_is_reported_at_the_atomic_naming_the_allocation():
    idx = torch.tensor([0, 1, 1, 3, 3, 3], dtype=torch.int32)
    hist = torch.empty(4, dtype=torch.int32)  # MARK-hist-alloc
    hist_kernel[(1,)](idx, hist, idx.numel(), BLOCK=8)
    fs = uninit_findings()
    assert len(fs) == 1, fs
    f = fs[0]
    assert (f["op"], f["line"]) == ("tt.atomic_rmw", line_of("MARK-atomic"))
    assert f["allocation"]["call"] == "torch.empty"
    assert (f["allocation"]["file"], f["allocation"]["line"]) == (THIS, line_of("MARK-hist-alloc"))
    # Counter 2 is never touched; 0, 1, 3 are read uninitialized by the first lane that adds to each.
    assert f["lanes"]["count"] == 3 and f["lanes"]["first"] == [0, 1, 3]
    assert (f["offsets"]["min"], f["offsets"]["max"]) == (0, 3)
    assert f["buffer"]["name"] == "hist_ptr"
    assert "torch.zeros" in f["hint"]


def test_atomic_add_into_zeroed_memory_is_not_reported():
    idx = torch.tensor([0, 1, 1, 3], dtype=torch.int32)
    for hist in (torch.zeros(4, dtype=torch.int32), torch.empty(4, dtype=torch.int32).zero_()):
        hist_kernel[(1,)](idx, hist, idx.numel(), BLOCK=8)
        assert hist.tolist() == [1, 2, 0, 1]
    assert uninit_findings() == []


@tilescope.trace("sanitizer")
@triton.jit
def xchg_kernel(out_ptr, old_ptr, BLOCK: tl.constexpr, KEEP_OLD: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    old = tl.atomic_xchg(out_ptr + offs, offs.to(tl.float32))  # MARK-xchg
    if KEEP_OLD:
        tl.store(old_ptr + offs, old)


def test_atomic_xchg_whose_old_value_is_unused_only_writes():
    # The stored value does not depend on what was there: with the old value unused it is a store (found by
    # a new user: it was reported, with the advice to zero the buffer). With the old value kept, the kernel
    # reads never-written memory and it is reported.
    out, old = torch.empty(256), torch.zeros(256)
    xchg_kernel[(4,)](out, old, BLOCK=64, KEEP_OLD=False)
    assert uninit_findings() == []
    assert torch.equal(out, torch.arange(256, dtype=torch.float32))
    out2 = torch.empty(256)
    xchg_kernel[(4,)](out2, old, BLOCK=64, KEEP_OLD=True)
    fs = uninit_findings()
    assert len(fs) == 1 and (fs[0]["op"], fs[0]["line"]) == ("tt.atomic_rmw", line_of("MARK-xchg")), fs


def test_a_column_no_program_wrote_is_reported_where_the_next_kernel_reads_it():
    rows, cols = 4, 16
    out = torch.empty(rows, cols)  # MARK-cols-alloc
    write_cols_kernel[(rows,)](out, rows, cols - 1, BC=cols)  # the last column is never written
    assert uninit_findings() == []
    scale(out.view(-1))
    fs = uninit_findings()
    assert len(fs) == 1, fs
    f = fs[0]
    assert (f["op"], f["line"]) == ("tt.load", line_of("MARK-scale-load"))
    assert f["allocation"]["line"] == line_of("MARK-cols-alloc")
    assert f["lanes"]["count"] == rows
    assert (f["offsets"]["min"], f["offsets"]["max"]) == (cols - 1, rows * cols - 1)


def test_kernel_writes_then_another_kernel_reads_is_fine():
    out = torch.empty(4, 16)
    write_cols_kernel[(4,)](out, 4, 16, BC=16)
    y = scale(out.view(-1))
    assert torch.equal(y, torch.arange(64, dtype=torch.float32) * 2)
    assert uninit_findings() == []


@pytest.mark.parametrize("write", ["zero_", "fill_", "copy_", "out=", "setitem", "numpy", "add_", "index_put"])
def test_host_writes_define_the_memory(write):
    ref = torch.arange(100, dtype=torch.float32)
    x = torch.empty(100)
    if write == "zero_":
        x.zero_()
    elif write == "fill_":
        x.fill_(3.0)
    elif write == "copy_":
        x.copy_(ref)
    elif write == "out=":
        torch.add(ref, 1, out=x)
    elif write == "setitem":
        x[:] = ref
    elif write == "numpy":
        x.numpy()[:] = ref.numpy()
    elif write == "add_":
        x.zero_()
        x.add_(ref)
    elif write == "index_put":
        x[torch.arange(100)] = ref
    expected = x.clone()
    y = scale(x)
    assert torch.equal(y, expected * 2)
    assert uninit_findings() == [], uninit_findings()


def test_host_write_of_part_of_the_buffer_leaves_the_rest_undefined():
    x = torch.empty(128)
    x[:64] = 1.0
    scale(x)
    fs = uninit_findings()
    assert len(fs) == 1 and fs[0]["lanes"]["count"] == 64
    assert (fs[0]["offsets"]["min"], fs[0]["offsets"]["max"]) == (64, 127)


@tilescope.trace("sanitizer")
@triton.jit
def int8_write_then_copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, PHASE: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if PHASE == 0:  # define every byte except those at offsets 3, 7, 11, ...
        tl.store(x_ptr + offs, (offs % 7).to(tl.int8), mask=(offs < n) & (offs % 4 != 3))
    else:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@pytest.mark.parametrize("make", [lambda n: torch.empty(n, dtype=torch.int8),
                                  lambda n: torch.empty(n, dtype=torch.uint8),
                                  lambda n: np.empty(n, dtype=np.int8)], ids=["torch.int8", "torch.uint8", "numpy.int8"])
def test_int8_saturation_values_written_by_the_host_are_seen(make):
    # A kernel defines 3 bytes of every 4; the host writes 127 (int8's saturation value) into the 4th. Those
    # bytes must count as written: the float NaN sentinel has 0x7f there, so 1-byte integer data gets its own.
    n = 64
    x, out = make(n), np.zeros(n, dtype=np.int8)
    int8_write_then_copy_kernel[(1,)](x, out, n, BLOCK=n, PHASE=0)
    x[3::4] = 127
    int8_write_then_copy_kernel[(1,)](x, out, n, BLOCK=n, PHASE=1)
    expected = np.where(np.arange(n) % 4 == 3, 127, np.arange(n) % 7).astype(np.int8)
    assert np.array_equal(np.asarray(out), expected)
    assert uninit_findings() == [], uninit_findings()


@pytest.mark.parametrize("make", ["empty_like", "new_empty", "empty_strided"])
def test_other_torch_allocators_are_tracked(make):
    base = torch.ones(10)
    x = {"empty_like": lambda: torch.empty_like(base), "new_empty": lambda: base.new_empty(10),
         "empty_strided": lambda: torch.empty_strided((10,), (1,))}[make]()
    scale(x)
    fs = uninit_findings()
    assert len(fs) == 1 and fs[0]["lanes"]["count"] == 10
    assert fs[0]["allocation"]["call"].endswith(make)


def test_numpy_empty_is_tracked_and_numpy_writes_define_it():
    a = np.empty(64, dtype=np.float32)  # MARK-np-alloc
    scale(a)
    fs = uninit_findings()
    assert len(fs) == 1 and fs[0]["allocation"]["call"] == "numpy.empty"
    assert fs[0]["allocation"]["line"] == line_of("MARK-np-alloc")
    assert "numpy.zeros" in fs[0]["hint"] and "torch.zeros" not in fs[0]["hint"]
    tilescope.clear_findings()
    b = np.empty(64, dtype=np.float32)
    b[:] = np.arange(64)
    c = np.empty_like(b)
    np.multiply(b, 1, out=c)
    for arr in (b, c):
        assert np.array_equal(scale(arr), np.arange(64, dtype=np.float32) * 2)
    assert uninit_findings() == []


def test_zeros_ones_and_object_arrays_are_never_tracked():
    gc.collect()
    before = _native.uninit_tracked()
    keep = [torch.zeros(8), torch.ones(8), torch.randn(8), np.zeros(8), np.empty(3, dtype=object)]
    assert _native.uninit_tracked() == before
    assert keep[4].tolist() == [None, None, None]  # not overwritten by the sentinel
    scale(keep[0])
    assert uninit_findings() == []


def test_freed_allocations_are_forgotten():
    gc.collect()
    before = _native.uninit_tracked()
    x = torch.empty(1000)
    view = x[10:20]
    del x
    assert _native.uninit_tracked() == before + 1  # the view keeps the storage (and its base) alive
    del view
    assert _native.uninit_tracked() == before


def test_trace_option_turns_it_off_per_kernel():
    x = torch.empty(64)
    out = torch.zeros(64)
    scale_untracked_kernel[(1,)](x, out, 64, BLOCK=64)
    assert uninit_findings() == []
    with pytest.raises(TypeError):
        tilescope.trace("sanitizer", unint=False)


SCRIPT = textwrap.dedent("""
    import torch, triton, triton.language as tl

    @triton.jit
    def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
        o = tl.arange(0, BLOCK)
        tl.store(out_ptr + o, tl.load(x_ptr + o))

    x = torch.empty(32)
    out = torch.zeros(32)
    k[(1,)](x, out, BLOCK=32)
    print("ran")
""")


def tilescope_cmd() -> list[str]:
    exe = os.environ.get("TILESCOPE_BIN")
    return [exe] if exe and os.path.exists(exe) else [sys.executable, "-m", "tilescope"]


@pytest.mark.parametrize("flag", [[], ["--no-uninit"]])
def test_sanitize_reports_it_by_default_and_no_uninit_turns_it_off(tmp_path, flag):
    script = tmp_path / "s.py"
    script.write_text(SCRIPT)
    out = tmp_path / "f.json"
    sarif = tmp_path / "f.sarif"
    p = subprocess.run(tilescope_cmd() + ["sanitize", "--json", str(out), "--sarif", str(sarif)] + flag +
                       ["--", sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert "ran" in p.stdout, p.stderr
    data = json.loads(out.read_text())
    fs = [f for f in (data.get("findings", data) if isinstance(data, dict) else data) if f["kind"] == KIND]
    if flag:
        assert fs == [] and p.returncode == 0, p.stderr
        return
    assert p.returncode == 1, p.stderr
    assert len(fs) == 1 and fs[0]["allocation"]["line"] == 9 and fs[0]["lanes"]["count"] == 32
    assert "uninitialized-read" in p.stderr and "allocated by" in p.stderr and "torch.empty" in p.stderr
    results = json.loads(sarif.read_text())["runs"][0]["results"]
    assert any(r["ruleId"] == KIND and any("allocated by torch.empty" in rl["message"]["text"]
                                           for rl in r["relatedLocations"]) for r in results)
