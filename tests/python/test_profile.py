"""The profiler (the `profile` analysis, `tilescope profile`, `tilescope.profile()`).

Expected values are computed here independently of the engine: bytes, lanes and mask efficiency from
the launch's shapes with numpy, distinct DRAM blocks from the set of addresses a kernel must touch, dot
FLOPs as 2*M*N*K, loop trips from the loop bounds, and the L1 sector counts of access-pattern kernels
from Nsight Compute on an H200 (tests/gpu/data/profile_h200.json, recorded by tests/gpu/profile_truth.py
with the same kernels and arguments), where the sector model must be exact.
"""
from __future__ import annotations

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

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "gpu"))
H200_BYTES_PER_S = 4.8e12  # NVIDIA H200 datasheet: 4.8 TB/s
H200_FP16_DENSE = 1979e12 / 2  # the datasheet's FP16 tensor figure is with sparsity


def gpu_truth():
    with open(os.path.join(ROOT, "tests", "gpu", "data", "profile_h200.json")) as f:
        doc = json.load(f)
    # The first launches are the 5 bench workloads, then the pattern kernels, one launch per section.
    return {s: doc["launches"][i] for i, s in enumerate(doc["sections"]) if s.startswith("pattern ")}


@triton.jit
def masked_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def matmul_loop(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                PREC: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b, input_precision=PREC)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


@triton.jit
def histogram(idx_ptr, hist_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.atomic_add(hist_ptr + tl.load(idx_ptr + offs, mask=mask), 1, mask=mask)


@triton.jit
def reduce_scan_while(x_ptr, out_ptr, scan_ptr, iters_ptr, n_iter, R: tl.constexpr, C: tl.constexpr):
    pid = tl.program_id(0)
    r = tl.arange(0, R)[:, None]
    c = tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + pid * R * C + r * C + c)
    s = tl.sum(x, axis=1)
    tl.store(out_ptr + pid * R + tl.arange(0, R), s * 2.0)
    tl.store(scan_ptr + pid * R * C + r * C + c, tl.cumsum(x, axis=0))
    i = 0
    while i < n_iter + pid:
        i += 1
    tl.store(iters_ptr + pid, i)


def profile_one(launch, gpu="H200"):
    with tilescope.profile(gpu=gpu) as p:
        launch()
    assert len(p.launches) == 1
    return p.launches[0]


def test_bytes_lanes_and_mask_efficiency_of_a_masked_copy():
    n, block = 1000, 256
    grid = triton.cdiv(n, block)
    x = torch.randn(n)
    y = torch.zeros(n)
    rep = profile_one(lambda: masked_copy[(grid,)](x, y, n, BLOCK=block))
    assert torch.equal(y, x)  # the outputs are computed: nothing is sampled away
    lanes = grid * block
    for kind in ("load", "store"):
        m = rep["memory"][kind]
        assert (m["lanes"], m["active_lanes"]) == (lanes, n)
        assert (m["bytes"], m["bytes_all_lanes"]) == (4 * n, 4 * lanes)
        assert m["mask_efficiency"] == pytest.approx(n / lanes)
        assert m["executions"] == grid
    # Distinct bytes and 64-byte blocks: every element of x read once, of y written once.
    assert rep["memory"]["read"]["unique_bytes"] == 4 * n
    assert rep["memory"]["written"]["unique_bytes"] == 4 * n
    assert rep["memory"]["read"]["dram_bytes"] == 64 * len(np.unique(np.arange(n) * 4 // 64))
    assert rep["kernel"] == "masked_copy" and rep["grid"] == [grid, 1, 1] and rep["programs"] == grid
    # `offs < n`: one comparison per lane per program.
    assert rep["ops"]["arith.cmpi"] == {"executions": grid, "elements": lanes}
    # One Python line holds the load and the store: it is the hottest, with both ops.
    top = rep["lines"][0]
    assert "tl.store(y_ptr + offs" in top["source"] and set(top["ops"]) >= {"tt.load", "tt.store"}
    assert top["bytes"] == 8 * n


def test_roofline_is_the_larger_of_memory_and_compute_time():
    n, block = 1 << 16, 1024
    x = torch.randn(n)
    y = torch.zeros(n)
    rep = profile_one(lambda: masked_copy[(n // block,)](x, y, n, BLOCK=block))
    roof = rep["roofline"]
    dram = 2 * 4 * n  # x read once and y written once, whole 64-byte blocks
    assert roof["dram_bytes"] == dram
    assert roof["memory_seconds"] == pytest.approx(dram / H200_BYTES_PER_S)
    assert roof["bound"] == "memory" and roof["seconds"] == pytest.approx(roof["memory_seconds"])
    assert roof["gpu"] == "H200" and "datasheet" in roof["source"]
    # A copy is perfectly coalesced: 4 bytes per lane, 8 lanes per 32-byte sector.
    assert rep["memory"]["load"]["sectors"] == 4 * n // 32
    assert rep["memory"]["load"]["coalescing"] == 1.0


@pytest.mark.parametrize("prec,cls", [("tf32", "tf32"), ("ieee", "fp32")])
def test_dot_flops_by_precision_and_loop_trips(prec, cls):
    M = N = 64
    K = 128
    BM = BN = BK = 32
    torch.manual_seed(0)
    a = torch.randn(M, K)
    b = torch.randn(K, N)
    c = torch.zeros(M, N)
    grid = (M // BM, N // BN)
    rep = profile_one(lambda: matmul_loop[grid](a, b, c, M, N, K, BM=BM, BN=BN, BK=BK, PREC=prec))
    torch.testing.assert_close(c, a @ b, rtol=0, atol=5e-2)  # tf32 keeps 10 mantissa bits
    assert rep["flops"][cls] == 2 * M * N * K
    dots = [s for s in rep["sites"] if s["kind"] == "dot"]
    assert len(dots) == 1 and dots[0]["precision"] == cls and dots[0]["executions"] == 4 * (K // BK)
    loops = [s for s in rep["sites"] if s["kind"] == "loop"]
    assert len(loops) == 1 and loops[0]["trips"] == 4 * (K // BK) and loops[0]["executions"] == 4
    assert "for k in range" in loops[0]["site"]["source"]


def test_fp16_dot_and_the_roofline_compute_term():
    M = N = K = 64
    a = torch.randn(M, K).half()
    b = torch.randn(K, N).half()
    c = torch.zeros(M, N)
    rep = profile_one(lambda: matmul_loop[(1, 1)](a, b, c, M, N, K, BM=64, BN=64, BK=64, PREC="tf32"))
    assert rep["flops"]["fp16"] == 2 * M * N * K
    roof = rep["roofline"]
    fp32_vector = rep["flops"].get("fp32_vector", 0)
    assert roof["compute_seconds"] == pytest.approx(2 * M * N * K / H200_FP16_DENSE + fp32_vector / 67e12)


def test_reduction_and_scan_flops_and_while_loop_trips():
    # A reduction folds in every element but the first of each row: R * (C - 1) adds per program; the
    # scan along the rows (R - 1) * C (its sequential count); then R multiplies. The while loop runs
    # n_iter + pid times in program pid.
    R, C, programs, n_iter = 4, 64, 3, 5
    x = torch.randn(programs * R, C)
    out, scan = torch.empty(programs * R), torch.empty(programs * R, C)
    iters = torch.zeros(programs, dtype=torch.int32)
    rep = profile_one(lambda: reduce_scan_while[(programs,)](x, out, scan, iters, n_iter, R=R, C=C))
    torch.testing.assert_close(out, x.sum(1) * 2)
    torch.testing.assert_close(scan.view(programs, R, C), x.view(programs, R, C).cumsum(1))
    assert iters.tolist() == [n_iter + p for p in range(programs)]
    assert rep["flops"]["fp32_vector"] == programs * (R * (C - 1) + (R - 1) * C + R)
    lines = {ln["source"].strip(): ln for ln in rep["lines"]}
    assert lines["s = tl.sum(x, axis=1)"]["flops"] == programs * R * (C - 1)
    assert rep["ops"]["tt.reduce"] == {"executions": programs, "elements": programs * R * C}
    loops = [s for s in rep["sites"] if s["kind"] == "loop"]
    assert len(loops) == 1 and "while i <" in loops[0]["site"]["source"]
    assert loops[0]["executions"] == programs
    assert loops[0]["trips"] == sum(n_iter + p for p in range(programs))


def test_atomics_are_their_own_kind():
    n = 500
    idx = torch.randint(0, 10, (n,), dtype=torch.int32)
    hist = torch.zeros(10, dtype=torch.int32)
    rep = profile_one(lambda: histogram[(triton.cdiv(n, 128),)](idx, hist, n, BLOCK=128))
    assert torch.equal(hist, torch.bincount(idx.long(), minlength=10).int())
    at = rep["memory"]["atomic"]
    assert at["active_lanes"] == n and at["bytes"] == 4 * n
    # Atomics read and write: the distinct bins touched count on both sides.
    touched = len(np.unique(idx.numpy()))
    assert rep["memory"]["written"]["unique_bytes"] == 4 * touched


@pytest.mark.parametrize("stride", [1, 2, 8])
def test_sectors_of_strided_loads_equal_the_h200s(stride):
    import profile_truth

    strided, _, _ = profile_truth.pattern_kernels()
    n = 1 << 20
    x = torch.randn(n * stride)
    y = torch.empty(n)
    rep = profile_one(lambda: strided[(triton.cdiv(n, 1024),)](x, y, n, STRIDE=stride, BLOCK=1024))
    gpu = gpu_truth()[f"pattern strided_copy STRIDE={stride} n={n} BLOCK=1024"]["metrics"]
    # Tolerance 0: Triton's layout puts 4 consecutive elements in a thread (128-bit vectors); a strided
    # load is 4 scalar loads per thread on that layout, each warp-wide one touching its own sectors.
    assert rep["memory"]["load"]["sectors"] == gpu["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"]
    assert rep["memory"]["store"]["sectors"] == gpu["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"]
    assert rep["memory"]["load"]["requests"] == gpu["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"]
    # DRAM: within 0.1% of what the H200 read (the GPU also reads a few kernel-argument blocks).
    assert rep["memory"]["read"]["dram_bytes"] == pytest.approx(gpu["dram__bytes_read.sum"], rel=1e-3)


def test_sectors_of_masked_and_column_patterns_equal_the_h200s():
    import profile_truth

    _, half, column = profile_truth.pattern_kernels()
    truth = gpu_truth()
    n = 1 << 20
    x = torch.randn(n)
    y = torch.zeros(n)
    rep = profile_one(lambda: half[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024))
    gpu = truth[f"pattern half_masked_copy n={n} BLOCK=1024"]["metrics"]
    assert rep["memory"]["load"]["sectors"] == gpu["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"]
    assert rep["memory"]["load"]["mask_efficiency"] == 0.5
    x = torch.randn(1024, 4096)
    out = torch.empty(4096)
    rep = profile_one(lambda: column[(4096,)](x, out, 1024, 4096, BLOCK=1024))
    gpu = truth["pattern column_sum rows=1024 cols=4096 BLOCK=1024"]["metrics"]
    assert rep["memory"]["load"]["sectors"] == gpu["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"]
    assert rep["memory"]["load"]["coalescing"] == pytest.approx(4 / 32)  # one float per sector


def test_bad_profile_options_are_clear_errors():
    k = _native.compile(open(os.path.join(ROOT, "tests", "ttir", "add.ttir")).read(), "add.ttir")
    x = np.zeros(128, np.float32)
    args = [_native.Buffer(nm, "float32", x.ctypes.data, x.nbytes, [128], [1]) for nm in ("x", "y", "o")] + [128]
    with pytest.raises(_native.TilescopeError, match=r"no GPU named 'V100'.*H100, H200, A100, B200, MI300X, L4"):
        _native.launch(k, args, [1], analyses=json.dumps([["profile", {"gpu": "V100"}]]))
    with pytest.raises(_native.TilescopeError, match="analysis 'profile': unknown option 'sample'"):
        _native.launch(k, args, [1], analyses=json.dumps([["profile", {"sample": 0.1}]]))


def tilescope_cmd() -> list[str]:
    exe = os.environ.get("TILESCOPE_BIN")
    return [exe] if exe and os.path.exists(exe) else [sys.executable, "-m", "tilescope"]


SCRIPT = textwrap.dedent("""\
    import torch, triton, triton.language as tl

    @triton.jit
    def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, 2 * tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

    x = torch.arange(300, dtype=torch.float32)
    y = torch.zeros(300)
    scale[(3,)](x, y, 300, BLOCK=128)
    assert torch.equal(y, 2 * x)
    print("ran")
""")


def test_cli_profile_of_a_python_program(tmp_path):
    script = tmp_path / "s.py"
    script.write_text(SCRIPT)
    out = tmp_path / "p.json"
    p = subprocess.run(tilescope_cmd() + ["profile", "--gpu", "A100", "--json", str(out), "--", sys.executable,
                                          str(script)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "ran" in p.stdout, p.stderr
    doc = json.loads(out.read_text())
    assert doc["version"] == 1 and len(doc["launches"]) == 1
    rep = doc["launches"][0]
    assert rep["kernel"] == "scale" and rep["roofline"]["gpu"] == "A100"
    assert rep["memory"]["load"]["bytes"] == 4 * 300 and rep["memory"]["load"]["bytes_all_lanes"] == 4 * 384
    assert "kernel scale: 1 launch(es), 3 program(s)" in p.stderr
    assert "hottest lines" in p.stderr and "s.py:6" in p.stderr and "roofline A100" in p.stderr


def test_cli_profile_of_a_ttir_file(tmp_path):
    out = tmp_path / "p.json"
    p = subprocess.run(tilescope_cmd() + ["profile", os.path.join(ROOT, "tests", "ttir", "add.ttir"), "--grid", "8",
                                          "--arg", "x_ptr=f32[1000]:randn", "--arg", "y_ptr=f32[1000]:randn",
                                          "--arg", "out_ptr=f32[1000]:zeros", "--arg", "n=i32:1000", "--gpu", "L4",
                                          "--json", str(out)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    rep = json.loads(out.read_text())["launches"][0]
    assert rep["memory"]["load"]["active_lanes"] == 2000 and rep["memory"]["load"]["lanes"] == 2 * 8 * 128
    assert rep["roofline"]["gpu"] == "L4" and "mask efficiency" in p.stderr


def test_cli_profile_unknown_gpu_is_a_usage_error(tmp_path):
    p = subprocess.run(tilescope_cmd() + ["profile", "--gpu", "V100", "--", sys.executable, "-c", "print(1)"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "no GPU named 'V100'" in p.stderr and "H200" in p.stderr


def test_sectors_of_the_matmul_example_equal_the_h200s_also_with_a_transposed_b():
    """examples/matmul.py launches twice: B row-major, then B transposed (strides (1, 90)), whose tiles
    Triton loads along their contiguous dimension (dim 0); the model follows it."""
    import importlib.util

    with open(os.path.join(ROOT, "tests", "gpu", "data", "profile_h200.json")) as f:
        doc = json.load(f)
    gpu = [r["metrics"] for r in doc["launches"] if r["kernel"] == "matmul_kernel" and r["grid"] == "(3, 2, 1)"]
    assert len(gpu) == 2
    spec = importlib.util.spec_from_file_location("example_matmul", os.path.join(ROOT, "examples", "matmul.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with tilescope.profile(gpu="H200") as p:
        mod.main()
    assert len(p.launches) == 2
    for rep, g in zip(p.launches, gpu):
        assert rep["memory"]["load"]["sectors"] == g["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"]
        assert rep["memory"]["store"]["sectors"] == g["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"]


def test_cli_profile_records_the_profiles_into_a_trace(tmp_path):
    script = tmp_path / "s.py"
    script.write_text(SCRIPT)
    trace = tmp_path / "run.tstrace"
    p = subprocess.run(tilescope_cmd() + ["profile", "--gpu", "H200", "--trace", str(trace), "--", sys.executable,
                                          str(script)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "ran" in p.stdout, p.stderr
    assert "trace of 1 launch(es), with their profiles, written to" in p.stderr
    launches = tilescope.load_trace(str(trace)).launches
    assert len(launches) == 1
    rep = launches[0]["reports"]["profile"]
    assert rep["kernel"] == "scale" and rep["roofline"]["gpu"] == "H200"
    assert rep["memory"]["load"]["bytes"] == 4 * 300
