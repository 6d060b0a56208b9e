"""The emulated GPU (python/tilescope/_device.py) and Triton-like compiled kernels (_compiled.py).

Expected values come from a real device: tests/gpu/data/device_h200.json, recorded on an NVIDIA H200
with torch 2.11 and Triton 3.6 by tests/gpu/record_device.py: what torch.cuda and Triton's driver
answered there, and for the kernels of tests/gpu/device_kernels.py their TTGIR and PTX (compared byte
for byte once file paths are taken out) and what the CUDA driver said of the cubin (registers, spills,
threads per block) and Triton's metadata (shared memory). The sort kernel of that file is left out here:
ptxas takes about two minutes on its 3.6 MB of PTX (it was compared by hand: 255 registers, 804 spills,
256 threads, as on the H200). Programs under `tilescope sanitize` run in subprocesses; the compiled
kernels are checked in this process through @tilescope.trace.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import subprocess
import sys
import textwrap

import pytest
import torch

import tilescope
from tilescope import _device

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GPU_DIR = os.path.join(ROOT, "tests", "gpu")
sys.path.insert(0, GPU_DIR)
import device_kernels  # noqa: E402

with open(os.path.join(GPU_DIR, "data", "device_h200.json")) as f:
    H200 = json.load(f)


def sanitize(args, cwd, env_extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TILESCOPE")}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "tilescope", "sanitize", "--color", "never"] + args, cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=300)


def run_script(tmp_path, body, args=(), env_extra=None):
    """Run `body` under `tilescope sanitize ARGS`; the script's last stdout line is JSON."""
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(body))
    p = sanitize(list(args) + ["--", sys.executable, str(script)], tmp_path, env_extra)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "no findings" in p.stderr, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1]), p


# ---------------------------------------------------------------------------------------------
# The targets


def test_cli_targets_are_the_registry():
    p = subprocess.run([sys.executable, "-m", "tilescope", "sanitize", "--help"], capture_output=True, text=True)
    m = re.search(r"compiled for: (.+?) \(default", p.stdout)
    assert m, p.stdout
    assert m.group(1).split(", ") == list(_device.TARGETS)


@pytest.mark.parametrize("args, env, said", [(["--target", "sm_75"], {}, "unknown target 'sm_75'"),
                                             ([], {"TILESCOPE_TARGET": "bogus"}, "'bogus' in TILESCOPE_TARGET")])
def test_unknown_target_is_a_usage_error(tmp_path, args, env, said):
    p = sanitize(args + ["--", sys.executable, "-c", "print('RAN')"], tmp_path, env)
    assert p.returncode == 2
    assert said in p.stderr and "known: sm_80, sm_90, sm_100, gfx942" in p.stderr
    assert "RAN" not in p.stdout


QUERIES = """
    import json, torch, triton, triton.language as tl
    d = triton.runtime.driver.active
    t = d.get_current_target()
    props = torch.cuda.get_device_properties(0)
    fields = {n: getattr(props, n) for n in dir(props) if not n.startswith("_") and not callable(getattr(props, n))}

    @triton.jit
    def add(x, y, o, n, B: tl.constexpr):
        offs = tl.program_id(0) * B + tl.arange(0, B)
        m = offs < n
        tl.store(o + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)

    x, y = torch.rand(1000), torch.rand(1000)
    o = torch.empty_like(x)
    k = add[(8,)](x, y, o, 1000, B=128)
    binary = list(k.asm.keys())[-2]  # ptx / amdgcn
    print(json.dumps({
        "target": [t.backend, t.arch, t.warp_size], "driver_props": d.utils.get_device_properties(0),
        "active_torch_device": str(d.get_active_torch_device()), "current_device": d.get_current_device(),
        "capability": list(torch.cuda.get_device_capability()), "name": torch.cuda.get_device_name(),
        "sms_of_cuda": torch.cuda.get_device_properties("cuda").multi_processor_count, "properties": fields,
        "is_available": torch.cuda.is_available(), "device_count": torch.cuda.device_count(),
        "current": torch.cuda.current_device(), "correct": bool(torch.equal(o, x + y)),
        "asm_keys": list(k.asm.keys()), "asm_head": k.asm[binary][:400], "kernel_target": repr(k.metadata.target),
        "n_regs": k.n_regs}))
"""


def test_sm90_answers_as_the_h200(tmp_path):
    got, _ = run_script(tmp_path, QUERIES)
    rec_t, rec_torch = H200["triton"], H200["torch"]
    assert got["target"] == rec_t["target"]
    assert got["driver_props"] == rec_t["device_properties"]
    assert got["capability"] == rec_torch["capability"]
    assert got["name"] == rec_torch["name"]
    assert got["sms_of_cuda"] == 132
    for field, value in rec_torch["properties"].items():
        if field in ("uuid", "pci_device_id"):  # the recording machine's own
            continue
        assert got["properties"][field] == value, field
    # By design (README, "The emulated GPU"): tensors live on the CPU, and torch cannot make "cuda" ones.
    assert got["active_torch_device"] == "cpu" and rec_t["active_torch_device"] == "cuda:0"
    assert (got["is_available"], got["device_count"]) == (False, 0)
    assert got["current_device"] == got["current"] == 0
    assert got["correct"]
    assert got["asm_keys"] == ["ttir", "source", "ttgir", "llir", "ptx", "cubin"]
    assert ".target sm_90a" in got["asm_head"]


@pytest.mark.parametrize("target, backend, arch, capability, binary_target", [
    ("sm_80", "cuda", 80, [8, 0], ".target sm_80"),
    ("sm_100", "cuda", 100, [10, 0], ".target sm_100a"),
    ("gfx942", "hip", "gfx942", [9, 4], "amdgcn-amd-amdhsa--gfx942"),
])
def test_other_targets(tmp_path, target, backend, arch, capability, binary_target):
    got, _ = run_script(tmp_path, QUERIES, ["--target", target])
    dev = _device.TARGETS[target]
    assert got["target"][:2] == [backend, arch]
    assert got["capability"] == capability
    # torch.cuda and Triton's driver describe the same device
    assert got["driver_props"]["multiprocessor_count"] == got["properties"]["multi_processor_count"] \
        == dev.multi_processor_count
    assert got["driver_props"]["warpSize"] == got["properties"]["warp_size"] == got["target"][2]
    assert got["name"] == got["properties"]["name"] == dev.name
    assert got["correct"]
    assert binary_target in got["asm_head"]
    assert got["n_regs"] > 0
    if backend == "hip":
        assert got["asm_keys"] == ["ttir", "source", "ttgir", "llir", "amdgcn", "hsaco"]
        assert got["driver_props"]["arch"] == "gfx942:sramecc+:xnack-"


# ---------------------------------------------------------------------------------------------
# torch.cuda, benchmarks, "cuda" tensors


def test_torch_cuda_timing_and_benchmarks(tmp_path):
    got, p = run_script(tmp_path, """
        import json, math, torch, triton
        calls = []
        def fn():
            calls.append(1)
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            assert torch.cuda.current_stream() is s
        torch.cuda.set_stream(s)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(); fn(); end.record(); torch.cuda.synchronize()
        with torch.cuda.device(0):
            torch.cuda.set_device(0)
        try:
            torch.cuda.get_device_properties(1)
            other = "answered"
        except ValueError as e:
            other = str(e)
        r = {"elapsed": start.elapsed_time(end), "stream_ok": s.query(),
             "mean": triton.testing.do_bench(fn), "q": triton.testing.do_bench(fn, quantiles=[0.5, 0.2, 0.8]),
             "q1": triton.testing.do_bench(fn, quantiles=[0.5]), "all": triton.testing.do_bench(fn, return_mode="all"),
             "graph": triton.testing.do_bench_cudagraph(fn),
             "bench": triton.runtime.driver.active.get_benchmarker()(fn, quantiles=[0.5, 0.2])}
        r["calls"] = len(calls)
        rows = []

        @triton.testing.perf_report(triton.testing.Benchmark(x_names=["n"], x_vals=[8, 16, 32], line_arg="p",
                                    line_vals=["a"], line_names=["A"], plot_name=None, args={}, ylabel="ms"))
        def bench(n, p):
            rows.append(n)
            return triton.testing.do_bench(lambda: None)

        df = bench.run(return_df=True)
        r.update(rows=rows, other=other, mem=[torch.cuda.memory_allocated(), torch.cuda.max_memory_allocated()],
                 bf16=torch.cuda.is_bf16_supported())
        torch.cuda.reset_peak_memory_stats()
        print(json.dumps(r))
    """)
    nan = math.isnan
    assert nan(got["elapsed"]) and got["stream_ok"]
    assert nan(got["mean"]) and nan(got["q1"]) and nan(got["graph"])
    assert len(got["q"]) == 3 and all(map(nan, got["q"]))
    assert len(got["all"]) == 1 and nan(got["all"][0])
    assert len(got["bench"]) == 2 and all(map(nan, got["bench"]))
    assert got["calls"] == 1  # the Event-timed call: do_bench does not run its function
    assert got["rows"] == [8]  # perf_report: the first x value only
    assert "first of its 3 x values only" in p.stderr and "GPU times are NaN" in p.stderr
    assert "one GPU (device 0)" in got["other"]
    assert got["mem"] == [0, 0] and got["bf16"] is True


def test_bench_all_runs_every_x_and_each_function_once(tmp_path):
    got, _ = run_script(tmp_path, """
        import json, math, triton
        rows, calls = [], []

        @triton.testing.perf_report(triton.testing.Benchmark(x_names=["n"], x_vals=[8, 16, 32], line_arg="p",
                                    line_vals=["a"], line_names=["A"], plot_name=None, args={}, ylabel="ms"))
        def bench(n, p):
            rows.append(n)
            return triton.testing.do_bench(lambda: calls.append(n), quantiles=[0.5, 0.2, 0.8])

        bench.run()
        print(json.dumps({"rows": rows, "calls": calls, "nan": math.isnan(triton.testing.do_bench(lambda: None))}))
    """, ["--bench-all"])
    assert got == {"rows": [8, 16, 32], "calls": [8, 16, 32], "nan": True}


CUDA_PROGRAM = """
    import json, torch, triton, triton.language as tl

    @triton.jit
    def scale(x, o, n, B: tl.constexpr):
        offs = tl.program_id(0) * B + tl.arange(0, B)
        tl.store(o + offs, tl.load(x + offs, mask=offs < n) * 2, mask=offs < n)

    try:
        x = torch.randn(1000, device="cuda")
    except (AssertionError, RuntimeError) as e:
        print(json.dumps({"error": str(e)}))
        raise SystemExit(0)
    o = torch.empty(1000, device=torch.device("cuda", 0))
    y = torch.ones(4).to("cuda").cuda()
    z = torch.zeros(3, device="cuda:0", pin_memory=True).to(device="cuda")
    scale[(8,)](x, o, 1000, B=128)
    print(json.dumps({"devices": sorted({str(t.device) for t in (x, o, y, z)}), "correct": bool(torch.equal(o, x * 2)),
                      "available": torch.cuda.is_available(), "count": torch.cuda.device_count()}))
"""


def test_cuda_tensors_on_cpu(tmp_path):
    got, _ = run_script(tmp_path, CUDA_PROGRAM, ["--cuda-on-cpu"])
    assert got == {"devices": ["cpu"], "correct": True, "available": True, "count": 1}


def test_cuda_tensors_without_the_option_fail_as_in_torch(tmp_path):
    got, _ = run_script(tmp_path, CUDA_PROGRAM)
    assert "CUDA" in got["error"]


# ---------------------------------------------------------------------------------------------
# Compiled kernels


def compile_case(name):
    kernel, make_args, opts = device_kernels.CASES[name]
    tilescope.trace(kernel)
    args, consts = make_args(torch, "cpu")
    return kernel.warmup(*args, grid=(1, ), **consts, **opts)


@pytest.mark.parametrize("name", ["add", "softmax", "matmul"])
def test_compiled_forms_are_the_h200s(name):
    rec = H200["kernels"][name]
    k = compile_case(name)
    assert sorted(k.asm.keys()) == rec["asm_keys"]
    for ext in ("ttgir", "ptx"):
        text = device_kernels.normalized(ext, k.asm[ext], GPU_DIR)
        assert hashlib.sha256(text.encode()).hexdigest() == rec[ext + "_sha256"], ext
    k._init_handles()
    assert (k.n_regs, k.n_spills, k.n_max_threads) == (rec["n_regs"], rec["n_spills"], rec["n_max_threads"])
    md = json.loads(json.dumps(k.metadata._asdict(), default=repr))
    want = rec["metadata"]
    assert set(md) == set(want)
    for field in set(want) - {"hash", "extern_libs", "target"}:
        assert md[field] == want[field], field
    assert k.metadata.shared == want["shared"] and k.metadata.num_warps == want["num_warps"]
    assert re.fullmatch(r"[0-9a-f]{64}", k.hash)
    assert isinstance(k.asm["cubin"], bytes) and k.kernel == k.asm["cubin"]


def test_stages_run_only_when_read():
    import triton
    import triton.language as tl

    @tilescope.trace
    @triton.jit
    def neg(x, o, B: tl.constexpr):
        offs = tl.arange(0, B)
        tl.store(o + offs, -tl.load(x + offs))

    x = torch.randn(64)
    o = torch.empty(64)
    k = neg[(1, )](x, o, B=64)
    assert torch.equal(o, -x)
    assert k._stages.done == {}  # a launch makes only the TTIR the engine runs
    assert "tt.load" in k.asm["ttir"] and k._stages.done == {}
    assert "ttg.blocked" in k.asm["ttgir"]
    assert set(k._stages.done) == {"source", "ttir", "ttgir"}
    assert k.metadata.num_stages == 3 and set(k._stages.done) == {"source", "ttir", "ttgir"}
    assert k.metadata.shared == 0 and "llir" in k._stages.done and "ptx" not in k._stages.done
    assert ".entry neg" in k.asm["ptx"] and "cubin" not in k._stages.done


def test_later_stages_use_the_programs_own_options():
    import triton
    import triton.language as tl

    @tilescope.trace
    @triton.jit
    def checked(x, B: tl.constexpr):
        v = tl.load(x + tl.arange(0, B))
        tl.device_assert(v >= 0, "negative")

    x = torch.ones(16)
    k = checked[(1, )](x, B=16)
    assert "tt.assert" in k.asm["ttir"]  # the engine's TTIR keeps the assert (debug=True)...
    assert "tt.assert" not in k.asm["ttgir"] and not k.metadata.debug  # ...Triton's default drops it
    kd = checked[(1, )](x, B=16, debug=True)
    assert "tt.assert" in kd.asm["ttgir"] and kd.metadata.debug


def test_out_of_resources_as_on_the_gpu():
    """A configuration that needs more shared memory than an H200 block can have (232448 bytes, as
    recorded) fails at _init_handles with Triton's OutOfResources, as Triton's driver makes it fail."""
    from triton.runtime.errors import OutOfResources

    kernel, make_args, _ = device_kernels.CASES["matmul"]
    tilescope.trace(kernel)
    args, _ = make_args(torch, "cpu")
    k = kernel.warmup(*args, grid=(1, ), BLOCK_M=256, BLOCK_N=256, BLOCK_K=64, num_warps=8, num_stages=5)
    assert k.metadata.shared > H200["triton"]["device_properties"]["max_shared_mem"]
    with pytest.raises(OutOfResources, match="shared memory"):
        k._init_handles()


def test_compiled_kernel_launches_again():
    kernel, make_args, opts = device_kernels.CASES["add"]
    tilescope.trace(kernel)
    (x, y, out, n), consts = make_args(torch, "cpu")
    k = kernel.warmup(x, y, out, n, grid=(1, ), **consts, **opts)
    out.zero_()
    k[(4, 1, 1)](x, y, out, n, consts["BLOCK"])
    assert torch.equal(out, x + y)
