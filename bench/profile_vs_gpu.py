#!/usr/bin/env python3
"""tilescope's profiler against Nsight Compute on an H200 (issue 11 items 4 and 5); run by `make bench-profile`.

    TILESCOPE_BIN=build/tilescope python3 bench/profile_vs_gpu.py [--reps N] [--no-results] [--only NAME...]

The GPU side is recorded, not run here: tests/gpu/data/profile_h200.json, written by
tests/gpu/profile_truth.py under `ncu` (caches flushed before each kernel, base clocks). This script runs
the same kernels with the same arguments on tilescope's engine under the profile analysis (`--gpu H200`)
and compares, per launch:

  - L1 global sectors: tilescope's sector model (analysis/profile.h) against
    l1tex__t_sectors_pipe_lsu_mem_global_op_ld / _st, and requests against l1tex__t_requests_...;
  - DRAM: distinct sectors read (tilescope) against dram__bytes_read, and written against
    dram__bytes_write (a kernel's writes can still sit in the 50 MB L2 when ncu stops counting, so the
    GPU's write bytes are a lower bound);
  - time: the roofline's lower bound on the H200 against gpu__time_duration.

Sections, in profile_truth.py's order: the five `make bench` workloads (bench/run.py WORKLOADS at the bench
sizes; their TTIR compiled as bench/run.py does and launched on the native module, so that the same
launch is also timed without any analysis: the profiler's overhead), the access-pattern kernels, and the
correct examples (examples/*.py main()). Example launches are matched to GPU launches by kernel name,
grid and block size (num_warps * 32), in order.

Writes bench/PROFILE.md.
"""
from __future__ import annotations

import argparse
import glob
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "tests", "gpu"))
GPU_DATA = os.path.join(ROOT, "tests", "gpu", "data", "profile_h200.json")

LD, ST = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
RQ_LD, RQ_ST = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
DRAM_R, DRAM_W, TIME = "dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum"



# The check of the roofline's peak table (a fixed text: the table changes only with the source).
GPU_TABLE = [
    "## The GPU table",
    "",
    (
        "The roofline's peaks (`--gpu`, `src/analysis/profile.cpp`, each row naming the vendor document it "
        "comes from) were checked again on 2026-12-02 against the vendors' published figures as public spec "
        "listings reproduce them (no vendor page is reachable from the build machine), dense (sparsity "
        "figures halved): H100 SXM 3.35 TB/s, FP64 34 / tensor 67, FP32 67, TF32 494.5, FP16 / BF16 989.5, "
        "FP8 / INT8 1979 T(FL)OP/s; H200 SXM the same compute at 4.8 TB/s; A100 80GB SXM 2.039 TB/s, 9.7 / "
        "19.5, 19.5, 156, 312, INT8 624 (no FP8); HGX B200 per GPU (the 8-GPU figures / 8) 8 TB/s, 37 / 37, "
        "75, 1125, 2250, 4500; MI300X 5.3 TB/s, 81.7 / 163.4, 163.4, 653.7, 1307.4, 2614.9; L4 0.3 TB/s, FP32"
        " 30.3, TF32 60, FP16 / BF16 121, FP8 / INT8 242.5 (FP64 1/64 of FP32). No value changed."
    ),
    "",
]


def workload_launches(reps: int, only):
    """(name, profile report, seconds without analysis, under the sanitizer alone, under the profiler alone)
    per bench workload."""
    import numpy as np

    import run as bench_run
    from tilescope import _native

    tmp = tempfile.mkdtemp(prefix="tilescope-profile-")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.setdefault("TRITON_MOCK_PTX_VERSION", "8.7")
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "run.py"), "--emit-ttir", tmp], check=True, env=env)
    out = []
    for name, w in bench_run.WORKLOADS.items():
        if only and name not in only:
            continue
        arrs = bench_run.make_inputs(w, np.random.default_rng(0))
        with open(os.path.join(tmp, f"{name}.ttir")) as f:
            kernel = _native.compile(f.read(), f"{name}.ttir")
        args = []
        for a in w["args"]:
            if a[1] in ("in", "out"):
                arr = arrs[a[0]]
                args.append(_native.Buffer(a[0], str(arr.dtype), arr.ctypes.data, arr.nbytes, list(arr.shape),
                                           [s // arr.itemsize for s in arr.strides]))
            else:
                args.append(int(a[2]))
        grid = list(w["grid"])
        prof = json.dumps([["profile", {"gpu": "H200", "num_warps": 4}]])
        san = json.dumps([["sanitizer", {}]])
        plain, sanitized, profiled, report = [], [], [], None
        for _ in range(reps):  # interleaved, median
            t0 = time.perf_counter()
            _native.launch(kernel, args, grid, analyses="[]")
            plain.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            _native.launch(kernel, args, grid, analyses=san)
            sanitized.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            res = _native.launch(kernel, args, grid, analyses=prof)
            profiled.append(time.perf_counter() - t0)
            report = json.loads(res["reports"])["profile"]
        out.append((name, report, statistics.median(plain), statistics.median(sanitized),
                    statistics.median(profiled)))
    return out


def front_door_launches():
    """Profile reports of the pattern kernels and the examples, run through the Python front door:
    [(section, [reports])]."""
    import torch
    import triton

    import tilescope
    import profile_truth

    sections = []
    strided, half, column = profile_truth.pattern_kernels()
    n = 1 << 20
    torch.manual_seed(0)
    for stride in (1, 2, 8, 32):
        x = torch.randn(n * stride)
        y = torch.empty(n)
        with tilescope.profile(gpu="H200") as p:
            strided[(triton.cdiv(n, 1024),)](x, y, n, STRIDE=stride, BLOCK=1024)
        sections.append((f"pattern strided_copy STRIDE={stride} n={n} BLOCK=1024", p.launches))
    x = torch.randn(n)
    y = torch.zeros(n)
    with tilescope.profile(gpu="H200") as p:
        half[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
    sections.append((f"pattern half_masked_copy n={n} BLOCK=1024", p.launches))
    x = torch.randn(1024, 4096)
    out = torch.empty(4096)
    with tilescope.profile(gpu="H200") as p:
        column[(4096,)](x, out, 1024, 4096, BLOCK=1024)
    sections.append(("pattern column_sum rows=1024 cols=4096 BLOCK=1024", p.launches))
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "*.py"))):
        base = os.path.basename(path)[:-3]
        if base.startswith(("buggy_", "demo")):
            continue
        spec = importlib.util.spec_from_file_location("example_" + base, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        with tilescope.profile(gpu="H200") as p:
            mod.main()
        sections.append((f"example {base}", p.launches))
    return sections


def ours(rep: dict) -> dict:
    m, roof = rep["memory"], rep["roofline"]
    # Atomics are not in l1tex's _op_ld / _op_st metrics (they have their own, _op_atom / _op_red).
    return {"ld": m["load"]["sectors"], "st": m["store"]["sectors"],
            "rq_ld": m["load"]["requests"], "rq_st": m["store"]["requests"],
            "dram_r": m["read"]["dram_bytes"], "dram_w": m["written"]["dram_bytes"], "time": roof["seconds"],
            "bound": roof["bound"]}


def err(a: float, b: float) -> str:
    if b == 0:
        return "exact" if a == 0 else "n/a"
    e = (a - b) / b
    return "exact" if a == b else f"{e:+.1%}"


def block_of(rep: dict) -> str:
    return f"({rep['model']['num_warps'] * 32}, 1, 1)"


def grid_of(rep: dict) -> str:
    g = rep["grid"]
    return f"({g[0]}, {g[1]}, {g[2]})"


def match(gpu_launches, sections):
    """Pairs (label, report, GPU launch): the first 11 GPU launches are the workloads and patterns in
    order; examples by kernel name, grid and block, in order."""
    pairs, used = [], set()
    fixed = [s for s in sections if not s[0].startswith("example ")]
    for i, (label, reps) in enumerate(fixed):
        if i < len(gpu_launches) and reps:
            pairs.append((label, reps[0], gpu_launches[i]))
            used.add(i)
    for label, reps in sections:
        if not label.startswith("example "):
            continue
        for rep in reps:
            for i, g in enumerate(gpu_launches):
                if i in used or i < len(fixed):
                    continue
                if g["kernel"] == rep["kernel"] and g["grid"] == grid_of(rep) and g["block"] == block_of(rep):
                    used.add(i)
                    pairs.append((f"{label}: {rep['kernel']}", rep, g))
                    break
            else:
                pairs.append((f"{label}: {rep['kernel']}", rep, None))
    return pairs


def write(pairs, overhead, path, gpu_doc, reps):
    lines = [
        "# tilescope's profiler against an H200",
        "",
        "Written by `make bench-profile` (bench/profile_vs_gpu.py). GPU side: "
        f"{gpu_doc['device']}, Nsight Compute {gpu_doc['ncu'][0] if gpu_doc['ncu'] else '?'}, Triton "
        f"{gpu_doc['triton']} (tests/gpu/profile_truth.py: caches flushed before each kernel, base clocks). "
        "tilescope side: the same kernels and arguments on the CPU engine under the profile analysis, "
        "`--gpu H200`, num_warps as launched (4 unless the kernel sets it). Error = (tilescope - GPU) / GPU.",
        "",
        "## L1 sectors (coalescing)",
        "",
        "The sector model (README \"Profile\", CONTRIBUTING \"The profiler\") against "
        "`l1tex__t_sectors_pipe_lsu_mem_global_op_ld/st` and `l1tex__t_requests_...`.",
        "",
        "| launch | grid | load sectors: tilescope / GPU | error | store sectors: tilescope / GPU | error | "
        "requests ld+st: tilescope / GPU | error |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    exact_ld = exact_st = n_cmp = 0
    abs_errs = []
    for label, rep, g in pairs:
        o = ours(rep)
        if g is None:
            lines.append(f"| {label} | {grid_of(rep)} | {o['ld']:,} / (no GPU launch) | | {o['st']:,} / | | | |")
            continue
        m = g["metrics"]
        n_cmp += 1
        exact_ld += o["ld"] == m[LD]
        exact_st += o["st"] == m[ST]
        tot, gtot = o["ld"] + o["st"], m[LD] + m[ST]
        if gtot:
            abs_errs.append(abs(tot - gtot) / gtot)
        lines.append(f"| {label} | {grid_of(rep)} | {o['ld']:,} / {int(m[LD]):,} | {err(o['ld'], m[LD])} | "
                     f"{o['st']:,} / {int(m[ST]):,} | {err(o['st'], m[ST])} | "
                     f"{o['rq_ld'] + o['rq_st']:,} / {int(m[RQ_LD] + m[RQ_ST]):,} | "
                     f"{err(o['rq_ld'] + o['rq_st'], m[RQ_LD] + m[RQ_ST])} |")
    lines += ["", f"{n_cmp} launches compared: load sectors exact in {exact_ld}, store sectors exact in {exact_st}; "
              f"median |error| of all sectors {statistics.median(abs_errs):.1%}, "
              f"largest {max(abs_errs):.1%}." if abs_errs else "", "",
              "Where the model misses: `gather_rows` loads rows through indices (one sector more than the GPU, "
              "and fewer requests: the GPU's layout for the gathered tile differs); `transpose_kernel` loads a "
              "tile and stores it transposed, and the GPU's load layout for it is not the one modelled. Atomics "
              "are left out on both sides (l1tex counts them in `_op_atom` / `_op_red`, which were not "
              "recorded). "
              "`partial_sums` is a newer example than the recorded GPU data (no GPU launch to compare).", ""]
    lines += [
        "## DRAM bytes and time",
        "",
        "Distinct 64-byte blocks read / written by the launch (all programs; the H200's DRAM moves 64 bytes per "
        "access: the strided pattern with one float per 128 bytes reads 64 per float) against `dram__bytes_read` / "
        "`dram__bytes_write`; the roofline's lower bound on the H200 (4.8 TB/s; peaks in "
        "src/analysis/profile.cpp) against `gpu__time_duration`. A small kernel's measured time is mostly launch "
        "latency (2-3 us), which the roofline leaves out; GPU write bytes undercount writes still in L2.",
        "",
        "| launch | DRAM read: tilescope / GPU | error | DRAM write: tilescope / GPU | roofline / measured time | "
        "ratio | bound |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    big_errs = []
    for label, rep, g in pairs:
        if g is None:
            continue
        o, m = ours(rep), g["metrics"]
        t_gpu = m[TIME] * 1e-9
        lines.append(f"| {label} | {o['dram_r']:,} / {int(m[DRAM_R]):,} | {err(o['dram_r'], m[DRAM_R])} | "
                     f"{o['dram_w']:,} / {int(m[DRAM_W]):,} | {o['time'] * 1e6:.2f} us / {t_gpu * 1e6:.2f} us | "
                     f"{o['time'] / t_gpu:.2f} | {o['bound']} |")
        if m[DRAM_R] > 1 << 20:
            big_errs.append((label, abs(o["dram_r"] - m[DRAM_R]) / m[DRAM_R], o["time"] / t_gpu))
    if big_errs:
        lines += ["", "Launches reading more than 1 MiB: DRAM read |error| median "
                  f"{statistics.median(e for _, e, _ in big_errs):.1%}, largest {max(e for _, e, _ in big_errs):.1%}; "
                  f"roofline / measured time median {statistics.median(r for _, _, r in big_errs):.2f} "
                  f"(range {min(r for _, _, r in big_errs):.2f}-{max(r for _, _, r in big_errs):.2f}).", ""]
    lines += GPU_TABLE
    if overhead:
        lines += [
            "## Overhead of the profiler",
            "",
            f"The bench workloads (bench/run.py sizes) launched on the native module in one process: without any "
            f"analysis, under the sanitizer alone, and under the profile analysis alone, interleaved, median of "
            f"{reps}; the grid on all {os.cpu_count()} hardware threads of this machine (wall time of "
            f"`_native.launch`; other work shared the machine, so single runs vary by 10-30%).",
            "",
            "| workload | plain engine | sanitizer | profiler | profiler / plain | profiler / sanitizer |",
            "| --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        for name, _, plain, san, prof in overhead:
            lines.append(f"| {name} | {plain * 1e3:.1f} ms | {san * 1e3:.1f} ms | {prof * 1e3:.1f} ms | "
                         f"{prof / plain:.2f}x | {prof / san:.2f}x |")
        lines.append("")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", nargs="*", help="bench workloads to run (default: all)")
    ap.add_argument("--no-workloads", action="store_true", help="patterns and examples only (fast)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "PROFILE.md"))
    ap.add_argument("--no-results", action="store_true", help="print the table instead of writing --out")
    a = ap.parse_args(argv)
    with open(GPU_DATA) as f:
        gpu_doc = json.load(f)
    overhead = [] if a.no_workloads else workload_launches(a.reps, a.only)
    sections = [(f"workload {name}", [rep]) for name, rep, *_ in overhead]
    if a.no_workloads or a.only:  # keep the GPU's positions: workloads absent here are skipped there
        names = {f"workload {name}" for name, *_ in overhead}
        keep = [i for i, s in enumerate(gpu_doc["sections"][:5]) if s in names]
        launches = [gpu_doc["launches"][i] for i in keep] + gpu_doc["launches"][5:]
    else:
        launches = gpu_doc["launches"]
    sections += front_door_launches()
    pairs = match(launches, sections)
    out = a.out if not a.no_results else os.path.join(tempfile.mkdtemp(), "PROFILE.md")
    write(pairs, overhead, out, gpu_doc, a.reps)
    if a.no_results:
        with open(out) as f:
            print(f.read())
    else:
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
