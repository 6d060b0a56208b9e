#!/usr/bin/env python3
"""What each analysis costs, on `make bench`'s kernels; run by `make bench-analyses`.

    python3 bench/analyses.py [--reps N] [--only NAME...] [--no-results]

The five workloads of bench/run.py (vector_add, softmax, matmul, loop_heavy, reduce_heavy: same kernels,
sizes and grids), each launched through the Python front door (`@tilescope.trace("sanitizer")`, all
cores) under five sets of analyses:

  plain      the engine's own checks only (out of bounds, null, asserts: `tilescope run --no-poison
             --no-races`)
  sanitizer  the full sanitizer (also undefined values, int32 overflow, division by zero)
  +races     the sanitizer and the race detector
  +uninit    the sanitizer and uninitialized-memory tracking
  all        all three: what `tilescope sanitize` and `@tilescope.trace` run by default
  traced     all three, and the launch recorded into a trace (`tilescope sanitize --trace`: a fresh trace
             file per launch, the default budget)

The variants run interleaved (one launch of each in turn, `--reps` rounds; median and min-max reported).
Each launch writes into a fresh `torch.empty` output (tracked by the uninit analysis: every store defines
bits, its worst case; allocated before the clock starts); inputs come from `torch.randn`. The time is the
kernel call as the program sees it (argument handling included, a few microseconds), after one launch of
each variant to compile. Then the cost of the tracked `torch.empty` itself (the sentinel fill) against
the unwrapped function.

The set of analyses is chosen by replacing `tilescope._state.analyses_json`, the one function the front
door asks (the public switches are `races=` / `uninit=` of `tilescope.trace`; the plain engine has none).

Writes the section between `<!-- bench-analyses:begin -->` and `<!-- bench-analyses:end -->` of
bench/RESULTS.md (machine, date, load average, table).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "ttir"))
sys.path.insert(0, os.path.join(ROOT, "bench"))

VARIANTS = {
    "plain": [["sanitizer", {"poison": False}]],
    "sanitizer": [["sanitizer", {}]],
    "+races": [["sanitizer", {}], ["races", {}]],
    "+uninit": [["sanitizer", {}], ["uninit", {}]],
    "all": [["sanitizer", {}], ["races", {}], ["uninit", {}]],
    # all three, and every launch recorded into a trace (a fresh file each launch, default budget):
    # `tilescope sanitize --trace` (issue 11: aim at most 3x the sanitizer alone)
    "traced": [["sanitizer", {}], ["races", {}], ["uninit", {}]],
    # the same into a trace made with `--trace-budget 16M`: at these sizes the budget drops the argument
    # contents (and samples the per-program detail): what the recorder itself costs
    "traced 16M": [["sanitizer", {}], ["races", {}], ["uninit", {}]],
}
BUDGETS = {"traced": None, "traced 16M": "16M"}
BEGIN, END = "<!-- bench-analyses:begin -->", "<!-- bench-analyses:end -->"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5, help="rounds of the interleaved variants (median)")
    ap.add_argument("--only", nargs="*", help="workloads to run (default: all; then RESULTS.md is not written)")
    ap.add_argument("--no-results", action="store_true", help="do not write bench/RESULTS.md")
    args = ap.parse_args(argv)

    import numpy as np
    import torch
    import triton

    import kernels  # tests/ttir/kernels.py: the @triton.jit kernels of `make bench`
    import run as bench_run  # bench/run.py: the workloads
    import tilescope
    from tilescope import _state

    import tempfile

    variant = {"name": "all"}
    _state.analyses_json = lambda *args, **kwargs: json.dumps(VARIANTS[variant["name"]])
    trace_dir = tempfile.mkdtemp(prefix="tilescope-bench-")
    traces = iter(range(1 << 30))
    torch_dtype = {"f32": torch.float32, "f16": torch.float16, "i32": torch.int32}

    rows = []
    t_start = time.time()
    for name, w in bench_run.WORKLOADS.items():
        if args.only and name not in args.only:
            continue
        fn = tilescope.trace("sanitizer")(getattr(kernels, w["kernel"]))
        torch.manual_seed(0)
        ins = {}
        for a in w["args"]:
            if a[1] == "in":
                x = torch.randn(*a[3]) * (0.5 if a[2] == "f16" else 1.0)
                if w["kernel"] == "loop_heavy_kernel":
                    x = torch.rand(*a[3])
                ins[a[0]] = x.to(torch_dtype[a[2]])

        def launch(v):
            call = {}
            for a in w["args"]:
                if a[1] == "in":
                    call[a[0]] = ins[a[0]]
                elif a[1] == "out":
                    call[a[0]] = torch.empty(*a[3], dtype=torch_dtype[a[2]])  # tracked: undefined until written
                else:
                    call[a[0]] = a[2]
            variant["name"] = v
            path = os.path.join(trace_dir, f"t{next(traces)}.tstrace") if v in BUDGETS else ""
            if path and BUDGETS[v]:  # made with the budget before the clock starts
                subprocess.run([sys.executable, "-m", "tilescope", "sanitize", "--trace", path, "--trace-budget", BUDGETS[v], "--", "true"],
                               check=True, capture_output=True)
            _state.trace_path = path
            t0 = time.perf_counter()
            fn[tuple(w["grid"])](**call, **w["const"])
            dt = time.perf_counter() - t0
            _state.trace_path = ""
            if path:
                stored[v].append(os.path.getsize(path))
                os.remove(path)
            return dt, call

        stored = {v: [] for v in BUDGETS}  # trace file sizes
        for v in VARIANTS:  # compile, and the first launch's one-time costs
            launch(v)
        times = {v: [] for v in VARIANTS}
        stored = {v: [] for v in BUDGETS}
        outs = {}
        for r in range(args.reps):
            order = list(VARIANTS) if r % 2 == 0 else list(VARIANTS)[::-1]
            for v in order:
                dt, call = launch(v)
                times[v].append(dt)
                outs[v] = {a[0]: call[a[0]] for a in w["args"] if a[1] == "out"}
        same = all(torch.equal(outs[v][k], outs["plain"][k]) for v in VARIANTS for k in outs[v])
        med = {v: statistics.median(t) for v, t in times.items()}
        rows.append(dict(name=name, med=med, lo={v: min(t) for v, t in times.items()},
                         hi={v: max(t) for v, t in times.items()}, same=same,
                         mib={v: statistics.median(b) / (1 << 20) for v, b in stored.items()}))
        print(f"{name:13s} " + "  ".join(f"{v} {med[v] * 1e3:8.2f} ms ({med[v] / med['plain']:.2f}x)" for v in VARIANTS)
              + f"  outputs equal: {same}", flush=True)

    # The tracked torch.empty against the unwrapped function (README, "Uninitialized memory").
    n = 1 << 22
    empty_raw = getattr(torch.empty, "__wrapped__", None)
    alloc = None
    if empty_raw is not None:
        t_on, t_off = [], []
        for _ in range(max(args.reps, 5)):
            t0 = time.perf_counter()
            torch.empty(n)
            t_on.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            empty_raw(n)
            t_off.append(time.perf_counter() - t0)
        alloc = (statistics.median(t_off), statistics.median(t_on))
        print(f"torch.empty(4M fp32): unwrapped {alloc[0] * 1e3:.2f} ms, tracked {alloc[1] * 1e3:.2f} ms")

    found = tilescope.findings()
    if found:
        print(f"unexpected findings: {found[:3]}", file=sys.stderr)
    total = time.time() - t_start
    if not args.no_results and not args.only:
        write_results(rows, alloc, bench_run.machine(), total, args, triton.__version__, torch.__version__)
    return 0 if all(r["same"] for r in rows) and not found else 1


def write_results(rows, alloc, mach, total, args, triton_version, torch_version):
    v = list(VARIANTS)
    analyses = [x for x in v if x not in BUDGETS]
    lines = [
        BEGIN,
        "## What each analysis costs",
        "",
        "Written by `make bench-analyses` (`bench/analyses.py`); do not edit by hand.",
        "",
        f"- Machine: {mach}; load average at the end (1/5/15 min): "
        f"{' / '.join(f'{x:.1f}' for x in os.getloadavg())} (a shared machine: other work slows every "
        "variant; the variants run interleaved so that it slows them alike).",
        f"- Date: {time.strftime('%Y-%m-%d %H:%M')}; triton {triton_version}, torch {torch_version}; whole run {total:.0f} s.",
        f"- `make bench`'s kernels and sizes through `@tilescope.trace` (all cores), median (min-max) of {args.reps} "
        "interleaved launches per variant, each into a fresh `torch.empty` output (the uninit analysis's worst "
        "case). **plain**: the engine's own checks (bounds, null, asserts); **sanitizer**: also undefined "
        "values, int32 overflow, division by zero; **+races**: the sanitizer and the race detector; "
        "**+uninit**: the sanitizer and uninitialized-memory tracking; **all**: the three (the default); "
        "**traced**: the three, the launch recorded into a fresh trace (`tilescope sanitize --trace`, the default "
        "256 MiB budget: the arguments' contents are stored); **traced 16M**: the same with `--trace-budget 16M` "
        "(the budget drops the contents at these sizes: the recorder's own cost). Aims: all at most 3x plain; "
        "a traced run at most 3x the same run untraced (issue 11): `tilescope sanitize --trace` against "
        "`tilescope sanitize`, the same three analyses (traced / all). traced / sanitizer compares with the "
        "sanitizer analysis alone, for reference. Argument contents are written in 1 MiB rows (format "
        "version 3); the per-program detail costs about 2 us per recorded access row. The trace sizes are "
        "the files' (MiB).",
        "",
        "| workload | " + " | ".join(v) + " | " + " | ".join(f"{x} / plain" for x in analyses[1:])
        + " | traced / all | traced / sanitizer | traced 16M / all | trace MiB (traced, 16M) | outputs equal |",
        "| --- | " + " | ".join("---:" for _ in v) + " | " + " | ".join("---:" for _ in analyses[1:])
        + " | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        cells = [f"{r['med'][x] * 1e3:.2f} ms ({r['lo'][x] * 1e3:.1f}-{r['hi'][x] * 1e3:.1f})" for x in v]
        ratios = [f"**{r['med'][x] / r['med']['plain']:.2f}x**" for x in analyses[1:]]
        lines.append(f"| {r['name']} | " + " | ".join(cells) + " | " + " | ".join(ratios)
                     + f" | **{r['med']['traced'] / r['med']['all']:.2f}x**"
                     + f" | **{r['med']['traced'] / r['med']['sanitizer']:.2f}x**"
                     + f" | **{r['med']['traced 16M'] / r['med']['all']:.2f}x**"
                     + f" | {r['mib']['traced']:.1f}, {r['mib']['traced 16M']:.1f} | {'yes' if r['same'] else 'NO'} |")
    if alloc:
        lines += ["", f"`torch.empty(4M fp32)`: {alloc[0] * 1e3:.2f} ms unwrapped, {alloc[1] * 1e3:.2f} ms tracked "
                  "(the sentinel fill touches every page), median."]
    lines.append(END)
    path = os.path.join(ROOT, "bench", "RESULTS.md")
    old = open(path).read() if os.path.exists(path) else ""
    block = "\n".join(lines)
    if BEGIN in old and END in old:
        new = old[:old.index(BEGIN)] + block + old[old.index(END) + len(END):]
    else:
        new = old.rstrip("\n") + "\n\n" + block + "\n"
    with open(path, "w") as f:
        f.write(new)


if __name__ == "__main__":
    sys.exit(main())
