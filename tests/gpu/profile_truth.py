"""Ground truth for tilescope's profiler (issue 11): memory traffic of real launches as Nsight Compute
measures it on a GPU.

    python3 tests/gpu/profile_truth.py --out tests/gpu/data      # on a machine with a CUDA GPU and ncu

Runs, under `ncu` (one process, every kernel launch profiled, default cache control: caches flushed
before each replayed kernel, so DRAM bytes are cold-cache bytes; default clock control: base clocks):

- the five `make bench` workloads (bench/run.py WORKLOADS, kernels of tests/ttir/kernels.py) at the
  bench sizes, with the inputs bench/run.py makes (seed 0);
- access-pattern kernels defined here (strided loads at strides 1, 2, 8 and 32 elements; a half-masked
  copy; a column read of a row-major matrix), whose sector counts are known analytically;
- the correct examples (examples/*.py except buggy_* and demo), each through its own main().

For every profiled launch of a Triton kernel it records the kernel name, grid and block size and the
metrics in METRICS (DRAM bytes read/written, L1 global load/store sectors and requests, L2 sectors
from L1, the kernel's duration). Writes `profile_h200.json`. `--launch` is the child mode that ncu runs.
"""
from __future__ import annotations

import argparse
import csv
import glob
import io
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

METRICS = [
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__t_sectors_srcunit_tex_op_write.sum",
    "gpu__time_duration.sum",
    "launch__grid_size",
    "launch__block_size",
]

MARK = "@@launch "


def pattern_kernels():
    import triton
    import triton.language as tl

    @triton.jit
    def strided_copy_kernel(x_ptr, y_ptr, n, STRIDE: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(y_ptr + offs, tl.load(x_ptr + offs * STRIDE, mask=m), mask=m)

    @triton.jit
    def half_masked_copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = (offs < n) & ((offs // 64) % 2 == 0)  # every other run of 64 elements
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)

    @triton.jit
    def column_sum_kernel(x_ptr, out_ptr, rows, cols, BLOCK: tl.constexpr):
        col = tl.program_id(0)
        r = tl.arange(0, BLOCK)
        tl.store(out_ptr + col, tl.sum(tl.load(x_ptr + r * cols + col, mask=r < rows, other=0.0), axis=0))

    return strided_copy_kernel, half_masked_copy_kernel, column_sum_kernel


def launch_all(examples: bool):
    import numpy as np
    import torch
    import triton

    sys.path.insert(0, os.path.join(ROOT, "bench"))
    sys.path.insert(0, os.path.join(ROOT, "tests", "ttir"))
    import kernels  # noqa: F401  (tests/ttir/kernels.py)
    import run as bench_run

    for name, w in bench_run.WORKLOADS.items():
        arrs = bench_run.make_inputs(w, np.random.default_rng(0))
        fn = getattr(kernels, w["kernel"])
        tens = {k: torch.from_numpy(v).cuda() for k, v in arrs.items()}
        scal = {a[0]: a[2] for a in w["args"] if a[1] not in ("in", "out")}
        call = {an: (tens[an] if an in tens else scal[an]) for an in fn.arg_names if an not in w["const"]}
        print(MARK + "workload " + name, flush=True)
        fn[tuple(w["grid"])](**call, **w["const"])
        torch.cuda.synchronize()

    strided, half, column = pattern_kernels()
    n = 1 << 20
    for stride in (1, 2, 8, 32):
        x = torch.randn(n * stride, device="cuda")
        y = torch.empty(n, device="cuda")
        print(MARK + f"pattern strided_copy STRIDE={stride} n={n} BLOCK=1024", flush=True)
        strided[(triton.cdiv(n, 1024),)](x, y, n, STRIDE=stride, BLOCK=1024)
        torch.cuda.synchronize()
    x = torch.randn(n, device="cuda")
    y = torch.zeros(n, device="cuda")
    print(MARK + f"pattern half_masked_copy n={n} BLOCK=1024", flush=True)
    half[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
    torch.cuda.synchronize()
    x = torch.randn(1024, 4096, device="cuda")
    out = torch.empty(4096, device="cuda")
    print(MARK + "pattern column_sum rows=1024 cols=4096 BLOCK=1024", flush=True)
    column[(4096,)](x, out, 1024, 4096, BLOCK=1024)
    torch.cuda.synchronize()

    if examples:
        import importlib.util
        for path in sorted(glob.glob(os.path.join(ROOT, "examples", "*.py"))):
            base = os.path.basename(path)[:-3]
            if base.startswith(("buggy_", "demo")):
                continue
            spec = importlib.util.spec_from_file_location("example_" + base, path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            print(MARK + "example " + base, flush=True)
            mod.main()
            torch.cuda.synchronize()


def triton_kernel_names() -> set[str]:
    names = set()
    for path in [os.path.join(ROOT, "tests", "ttir", "kernels.py"), os.path.abspath(__file__),
                 *glob.glob(os.path.join(ROOT, "examples", "*.py"))]:
        with open(path) as f:
            names.update(re.findall(r"@triton\.jit[^\n]*\n\s*def (\w+)", f.read()))
    return names


def parse_csv(text: str, names: set[str]) -> list[dict]:
    start = text.find('"ID"')
    if start < 0:
        raise RuntimeError("no CSV table in ncu's output:\n" + text[-3000:])
    rows = list(csv.reader(io.StringIO(text[start:])))
    header, units, out = rows[0], rows[1], []
    for r in rows[2:]:
        if len(r) != len(header):
            continue
        d = dict(zip(header, r))
        name = d.get("Kernel Name", "")
        if name not in names:
            continue
        rec = {"kernel": name, "grid": d.get("Grid Size"), "block": d.get("Block Size"), "metrics": {}}
        for m in METRICS:
            if m in d:
                v = d[m].replace(",", "")
                try:
                    rec["metrics"][m] = float(v)
                except ValueError:
                    rec["metrics"][m] = v
        rec["units"] = {m: units[header.index(m)] for m in METRICS if m in header}
        out.append(rec)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/gpu/data")
    ap.add_argument("--launch", action="store_true", help="child mode: launch everything (ncu runs this)")
    ap.add_argument("--no-examples", action="store_true")
    a = ap.parse_args()
    if a.launch:
        launch_all(not a.no_examples)
        return
    import torch
    import triton
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    names = triton_kernel_names()
    cmd = [ncu, "--csv", "--page", "raw", "--target-processes", "all", "--metrics", ",".join(METRICS),
           "--kernel-name", "regex:^(" + "|".join(sorted(names)) + ")$",
           sys.executable, os.path.abspath(__file__), "--launch"] + (["--no-examples"] if a.no_examples else [])
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=580)
    marks = [ln[len(MARK):] for ln in p.stdout.splitlines() if ln.startswith(MARK)]
    launches = parse_csv(p.stdout, names)
    result = {
        "device": torch.cuda.get_device_name(),
        "capability": list(torch.cuda.get_device_capability()),
        "triton": triton.__version__,
        "torch": torch.__version__,
        "ncu": subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1:],
        "command": "ncu --csv --page raw --target-processes all --metrics <METRICS> --kernel-name regex:<triton "
                   "kernels> python profile_truth.py --launch",
        "exit_code": p.returncode,
        "sections": marks,
        "launches": launches,
        "stderr_tail": p.stderr[-3000:],
    }
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "profile_h200.json"), "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(f"exit {p.returncode}; {len(launches)} launches profiled; sections {len(marks)}")
    for r in launches[:40]:
        print(r["kernel"], r["grid"], {k.split("__")[1][:28]: v for k, v in r["metrics"].items()})
    if p.returncode != 0:
        print(p.stdout[-3000:], p.stderr[-3000:])


if __name__ == "__main__":
    main()
