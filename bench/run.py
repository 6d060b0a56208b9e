#!/usr/bin/env python3
"""tilescope against Triton's interpreter (TRITON_INTERPRET=1) on six workloads; run by `make bench`.

    TILESCOPE_BIN=build/tilescope python3 bench/run.py [--reps N] [--budget SECONDS]

Workloads (issue 2 item 8), each with the same kernel source (tests/ttir/kernels.py) and the same inputs
on both sides:
  vector_add     16M fp32 elements, BLOCK 1024
  softmax        4096 x 4096 fp32, one row per program
  layer_norm     4096 x 4096 fp16 in and out, fp32 statistics, one row per program
  matmul         1024^3, 64x64x32 tiles, fp16 inputs, fp32 accumulation
  loop_heavy     64 programs x 16 lanes x 1000 iterations of a few tiny ops (dispatch cost)
  reduce_heavy   4096 x 4096 fp32, 16-row programs, 3 reductions per 16x256 tile

tilescope: the TTIR is compiled once by Triton (no GPU), the inputs written as .npy, and the `tilescope
run` CLI is timed with `--time` (the launch only: the grid on all cores; reading TTIR and .npy files is
not included). Interpreter: the @triton.jit kernel launched on CPU torch tensors with TRITON_INTERPRET=1,
timed around the launch. Each side is repeated (median reported); the interpreter is repeated only
while its per-workload time budget lasts (default 60 s), so the whole run stays near 10 minutes even on
a small machine. Outputs of both sides are compared (allclose) so the timings are of correct runs.

The plain engine against PyTorch CPU eager doing the same math on the same inputs (torch.add, softmax,
native_layer_norm, mm of the fp16 inputs made fp32, the three row reductions; all cores, median of 5 after
one warm-up), and the streaming kernel (vector_add: 3 x 64 MB moved) against the machine's memory
bandwidth, measured as a torch copy of 64 MB (all cores, median). And the start-up that `tilescope sanitize
--` adds to a program that imports torch and Triton.

Scheduler workloads (issue 8 item 11), tilescope alone (Triton's interpreter runs programs one after
another, so a program waiting for a later one never finishes there), kernels in bench/sched_kernels.py:
  lock_4096      4096 programs take an atomic_cas spin lock in turn and increment a counter
  barrier_70000  70,000 programs meet at a grid barrier (an atomic counter polled with volatile loads)
Their outputs are checked against the counts the kernels must produce (4096; 70,000 for every program).

Writes bench/RESULTS.md with the machine description (lscpu model name, cores) and the tables.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
TTIR_DIR = os.path.join(ROOT, "tests", "ttir")

# name -> kernel, constexprs, grid, args (TTIR order) as (name, kind, dtype-or-value), elements, unit
M = 1024
WORKLOADS = {
    "vector_add": dict(kernel="add_kernel", const={"BLOCK": 1024}, grid=[16384],
                       args=[("x_ptr", "in", "f32", [1 << 24]), ("y_ptr", "in", "f32", [1 << 24]),
                             ("out_ptr", "out", "f32", [1 << 24]), ("n", "i32", 1 << 24)],
                       work=1 << 24, unit="elements"),
    "softmax": dict(kernel="softmax_kernel", const={"BLOCK": 4096}, grid=[4096],
                    args=[("x_ptr", "in", "f32", [4096, 4096]), ("y_ptr", "out", "f32", [4096, 4096]),
                          ("n_cols", "i32", 4096), ("stride", "i32", 4096)],
                    work=4096 * 4096, unit="elements"),
    "layer_norm": dict(kernel="layernorm_kernel", const={"BLOCK": 4096}, grid=[4096],
                       args=[("x_ptr", "in", "f16", [4096, 4096]), ("w_ptr", "in", "f32", [4096]),
                             ("b_ptr", "in", "f32", [4096]), ("y_ptr", "out", "f16", [4096, 4096]),
                             ("mean_ptr", "out", "f32", [4096]), ("rstd_ptr", "out", "f32", [4096]),
                             ("N", "i32", 4096), ("eps", "f32", 1e-5)],
                       work=4096 * 4096, unit="elements"),
    "matmul": dict(kernel="matmul_kernel", const={"BM": 64, "BN": 64, "BK": 32}, grid=[16, 16],
                   args=[("a_ptr", "in", "f16", [M, M]), ("b_ptr", "in", "f16", [M, M]), ("c_ptr", "out", "f32", [M, M]),
                         ("M", "i32", M), ("N", "i32", M), ("K", "i32", M), ("sam", "i32", M), ("sak", "i32", 1),
                         ("sbk", "i32", M), ("sbn", "i32", 1), ("scm", "i32", M), ("scn", "i32", 1)],
                   work=M ** 3, unit="MAC"),
    "loop_heavy": dict(kernel="loop_heavy_kernel", const={"ITERS": 1000, "BLOCK": 16}, grid=[64],
                       args=[("x_ptr", "in", "f32", [1024]), ("y_ptr", "out", "f32", [1024])],
                       work=64 * 16 * 1000, unit="element-iterations"),
    "reduce_heavy": dict(kernel="reduce_heavy_kernel", const={"BR": 16, "BC": 256}, grid=[256],
                         args=[("x_ptr", "in", "f32", [4096, 4096]), ("out_ptr", "out", "f32", [4096, 3]),
                               ("N", "i32", 4096)],
                         work=4096 * 4096, unit="elements"),
}

# Programs that wait on each other: name -> kernel (bench/sched_kernels.py), grid, args, the outputs the
# kernel must produce, and what one program is.
SCHED_WORKLOADS = {
    "lock_4096": dict(kernel="lock_counter_kernel", const={}, grid=[4096],
                      args=[("lock_ptr", "out", "i32", [1]), ("count_ptr", "out", "i32", [1])],
                      expect={"lock_ptr": 0, "count_ptr": 4096}, what="4096 programs take a spin lock in turn"),
    "barrier_70000": dict(kernel="grid_barrier_kernel", const={}, grid=[70000],
                          args=[("arrived_ptr", "out", "i32", [1]), ("seen_ptr", "out", "i32", [70000]),
                                ("n", "i32", 70000)],
                          expect={"arrived_ptr": 70000, "seen_ptr": 70000}, what="70,000 programs meet at a grid barrier"),
}

NP = {"f32": "float32", "f16": "float16", "i32": "int32"}
SIG = {"f32": "fp32", "f16": "fp16", "i32": "i32"}


def emit_ttir(out_dir: str, quick: bool) -> None:
    """Subprocess entry (no TRITON_INTERPRET): compile each workload's kernel to TTIR."""
    sys.path.insert(0, TTIR_DIR)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import kernels
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler.compiler import make_backend
    from triton._C.libtriton import ir
    target = GPUTarget("cuda", 90, 32)
    backend = make_backend(target)
    opts = backend.parse_options({})
    import sched_kernels
    for name, w in [*WORKLOADS.items(), *SCHED_WORKLOADS.items()]:
        fn = getattr(sched_kernels if name in SCHED_WORKLOADS else kernels, w["kernel"])
        kinds = {a[0]: a for a in w["args"]}
        sig = {}
        for an in fn.arg_names:
            if an in w["const"]:
                sig[an] = "constexpr"
            else:
                a = kinds[an]
                sig[an] = ("*" + SIG[a[2]]) if a[1] in ("in", "out") else SIG[a[1]]
        ctx = ir.context()
        ir.load_dialects(ctx)
        backend.load_dialects(ctx)
        src = ASTSource(fn=fn, signature=sig, constexprs=w["const"])
        mod = src.make_ir(target, opts, backend.get_codegen_implementation(opts), backend.get_module_map(), ctx)
        mod = backend.make_ttir(mod, {}, opts, 90)
        with open(os.path.join(out_dir, f"{name}.ttir"), "w") as f:
            f.write(str(mod))


def machine() -> str:
    model, cores = "unknown CPU", os.cpu_count()
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        m = re.search(r"Model name:\s*(.+)", out)
        model = m.group(1).strip() if m else model
        s = re.search(r"Socket\(s\):\s*(\d+)", out)
        c = re.search(r"Core\(s\) per socket:\s*(\d+)", out)
        t = re.search(r"Thread\(s\) per core:\s*(\d+)", out)
        if s and c and t:
            return (f"{model}; {int(s.group(1)) * int(c.group(1))} cores, {os.cpu_count()} hardware threads "
                    f"visible")
    except Exception:  # noqa: BLE001
        pass
    return f"{model}; {cores} hardware threads visible"


def make_inputs(w, rng):
    import numpy as np
    arrs = {}
    for a in w["args"]:
        if a[1] == "in":
            arrs[a[0]] = (rng.standard_normal(a[3]) * (0.5 if a[2] == "f16" else 1.0)).astype(NP[a[2]])
            if w["kernel"] == "loop_heavy_kernel":
                arrs[a[0]] = rng.uniform(0, 1, a[3]).astype(np.float32)
        elif a[1] == "out":
            arrs[a[0]] = np.zeros(a[3], NP[a[2]])
    return arrs


def run_tilescope(binary, ttir, w, arrs, tmp, reps, extra=()):
    import numpy as np
    cmd = [binary, "run", ttir, "--kernel", w["kernel"], "--grid", ",".join(map(str, w["grid"])), "--time", *extra]
    outs = {}
    for a in w["args"]:
        if a[1] in ("in", "out"):
            p = os.path.join(tmp, f"{a[0]}.npy")
            np.save(p, arrs[a[0]])
            cmd += ["--arg", f"{a[0]}={p}"]
            if a[1] == "out":
                outs[a[0]] = os.path.join(tmp, f"out_{a[0]}.npy")
                cmd += ["--save", f"{a[0]}={outs[a[0]]}"]
        else:
            cmd += ["--arg", f"{a[0]}={a[1]}:{a[2]}"]
    times, walls = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True)
        walls.append(time.perf_counter() - t0)
        if p.returncode != 0:
            raise RuntimeError(f"tilescope failed ({p.returncode}): {p.stderr[-2000:]}")
        m = re.search(r"run time: ([0-9.]+) ms", p.stderr)
        if not m:
            raise RuntimeError(f"no 'run time:' line on stderr: {p.stderr[-500:]}")
        times.append(float(m.group(1)) / 1e3)
    return times, walls, {k: np.load(v) for k, v in outs.items()}


def run_interpreter(kernels, w, arrs, budget, max_reps):
    import torch
    fn = getattr(kernels, w["kernel"])
    tens = {k: torch.from_numpy(v.copy()) for k, v in arrs.items()}
    scal = {a[0]: a[2] for a in w["args"] if a[1] not in ("in", "out")}
    call = {an: (tens[an] if an in tens else scal[an]) for an in fn.arg_names if an not in w["const"]}
    times = []
    spent = 0.0
    while len(times) < max_reps and (not times or spent + times[-1] <= budget):
        t0 = time.perf_counter()
        fn[tuple(w["grid"])](**call, **w["const"])
        dt = time.perf_counter() - t0
        times.append(dt)
        spent += dt
    return times, {k: v.numpy() for k, v in tens.items() if any(a[0] == k and a[1] == "out" for a in w["args"])}


def _eager(name, arrs):
    """The same math in PyTorch CPU eager on the same inputs: a function of no arguments."""
    import torch
    t = {k: torch.from_numpy(v) for k, v in arrs.items()}
    if name == "vector_add":
        return lambda: torch.add(t["x_ptr"], t["y_ptr"], out=t["out_ptr"])
    if name == "softmax":
        return lambda: torch.softmax(t["x_ptr"], dim=1)
    if name == "layer_norm":
        n = t["x_ptr"].shape[1]
        return lambda: torch.native_layer_norm(t["x_ptr"].float(), [n], t["w_ptr"], t["b_ptr"], 1e-5)[0].half()
    if name == "matmul":
        return lambda: torch.mm(t["a_ptr"].float(), t["b_ptr"].float())
    if name == "reduce_heavy":
        x = t["x_ptr"]
        return lambda: (x.sum(1), x.amax(1), (x * x).sum(1))
    return None


def _median_time(fn, reps=5):
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def startup_overhead(binary, reps=5):
    """(plain, sanitized): medians of the wall time of a Python program that imports torch and Triton and
    returns, run as is and under `tilescope sanitize --` (runs interleaved)."""
    prog = [sys.executable, "-c", "import torch, triton, triton.language"]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    plain, sanitized = [], []
    for _ in range(reps):
        for cmd, out in ((prog, plain), ([binary, "sanitize", "--", *prog], sanitized)):
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True, env=env)
            out.append(time.perf_counter() - t0)
    return statistics.median(plain), statistics.median(sanitized)


def memory_bandwidth() -> float:
    """Bytes per second of a 64 MB torch copy on all cores (read + write), median of 5."""
    import torch
    x = torch.ones(1 << 24)
    y = torch.empty_like(x)
    return 2 * x.numel() * 4 / _median_time(lambda: y.copy_(x))


def _patch_interpreter_for_numpy_2_4():
    """numpy >= 2.4 refuses int() of a 1-element 1-D array; Triton 3.6's interpreter relies on it for
    tensor.__index__ (a loop bound such as `range(0, K, BK)` with a runtime K). Re-define that one
    conversion so the peer can run at all; nothing else of the interpreter is touched."""
    import numpy as np
    from triton.runtime import interpreter as interp
    orig = interp._patch_lang_tensor

    def patched(tensor, scope):
        orig(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(np.asarray(self.handle.data).reshape(-1)[0]))
    interp._patch_lang_tensor = patched


def fmt_rate(x):
    for s, d in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= d:
            return f"{x / d:.2f} {s}"
    return f"{x:.1f} "


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5, help="tilescope repetitions (median)")
    ap.add_argument("--interp-reps", type=int, default=3, help="most interpreter repetitions")
    ap.add_argument("--budget", type=float, default=60.0, help="interpreter seconds per workload before stopping repeats")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--no-results", action="store_true", help="do not write bench/RESULTS.md")
    ap.add_argument("--emit-ttir", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.emit_ttir:
        emit_ttir(args.emit_ttir, False)
        return 0

    binary = os.environ.get("TILESCOPE_BIN") or os.path.join(ROOT, "build", "tilescope")
    tmp = tempfile.mkdtemp(prefix="tilescope-bench-")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    subprocess.run([sys.executable, os.path.abspath(__file__), "--emit-ttir", tmp], check=True, env=env)

    os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported in this process
    import numpy as np
    sys.path.insert(0, TTIR_DIR)
    import kernels  # noqa: E402  (@triton.jit now builds interpreted functions)
    import torch
    torch.set_num_threads(os.cpu_count() or 1)
    _patch_interpreter_for_numpy_2_4()

    rng = np.random.default_rng(2024)
    rows = []
    t_start = time.time()
    for name, w in WORKLOADS.items():
        if args.only and name not in args.only:
            continue
        arrs = make_inputs(w, rng)
        wd = os.path.join(tmp, name)
        os.makedirs(wd, exist_ok=True)
        ttir = os.path.join(tmp, f"{name}.ttir")
        # Plain engine: bounds, null and assert checks only (they are part of the engine); then the full
        # sanitizer (also undefined values, int32 overflow, division by zero, and races), runs interleaved.
        ts, walls, sz = [], [], []
        for _ in range(args.reps):
            t1, w1, ts_out = run_tilescope(binary, ttir, w, arrs, wd, 1, ["--no-poison", "--no-races"])
            t2, _, sz_out = run_tilescope(binary, ttir, w, arrs, wd, 1)
            ts += t1
            walls += w1
            sz += t2
        it, it_out = run_interpreter(kernels, w, arrs, args.budget, args.interp_reps)
        ok = all(np.allclose(ts_out[k], it_out[k], rtol=2e-3, atol=2e-3) for k in ts_out)
        t_med, i_med = statistics.median(ts), statistics.median(it)
        ok = ok and all(np.array_equal(ts_out[k], sz_out[k]) for k in ts_out)
        eager = _eager(name, arrs)
        row = dict(name=name, work=w["work"], unit=w["unit"], ts=t_med, ts_wall=statistics.median(walls), it=i_med,
                   eager=_median_time(eager) if eager else None,
                   ts_reps=len(ts), it_reps=len(it), ratio=i_med / t_med, ok=ok, sz=statistics.median(sz),
                   sz_min=min(sz), sz_max=max(sz), ts_min=min(ts), ts_max=max(ts))
        rows.append(row)
        print(f"{name:13s} tilescope {t_med * 1e3:9.2f} ms ({fmt_rate(w['work'] / t_med)}{w['unit']}/s)   "
              f"interpreter {i_med * 1e3:10.1f} ms ({fmt_rate(w['work'] / i_med)}{w['unit']}/s)   "
              f"ratio {row['ratio']:7.1f}x   sanitizer {row['sz'] * 1e3:9.2f} ms ({row['sz'] / t_med:.2f}x)   "
              f"outputs agree: {ok}" + (f"   PyTorch eager {row['eager'] * 1e3:.2f} ms" if row["eager"] else ""),
              flush=True)
    sched = []
    for name, w in SCHED_WORKLOADS.items():
        if args.only and name not in args.only:
            continue
        wd = os.path.join(tmp, name)
        os.makedirs(wd, exist_ok=True)
        arrs = make_inputs(w, rng)
        ts, walls, outs = run_tilescope(binary, os.path.join(tmp, f"{name}.ttir"), w, arrs, wd, args.reps,
                                        ["--no-poison", "--no-races"])
        ok = all(np.all(outs[k] == v) for k, v in w["expect"].items())
        programs = w["grid"][0]
        row = dict(name=name, what=w["what"], ts=statistics.median(ts), ts_min=min(ts), ts_max=max(ts),
                   wall=statistics.median(walls), programs=programs, ok=ok)
        sched.append(row)
        print(f"{name:13s} tilescope {row['ts'] * 1e3:9.2f} ms ({fmt_rate(programs / row['ts'])}programs/s)   "
              f"outputs right: {ok}", flush=True)
    bandwidth = memory_bandwidth()
    startup = startup_overhead(binary)
    print(f"start-up of a program importing torch and triton: {startup[0]:.2f} s, under tilescope sanitize "
          f"{startup[1]:.2f} s", flush=True)
    total = time.time() - t_start
    mach = machine()
    print(f"machine: {mach}; total {total:.0f} s")
    if not args.no_results and not args.only:
        write_results(rows, sched, mach, total, args, bandwidth, startup)
    return 0 if all(r["ok"] for r in rows + sched) else 1


def write_results(rows, sched, mach, total, args, bandwidth, startup):
    import triton
    lines = [
        "# Benchmark: tilescope against TRITON_INTERPRET=1",
        "",
        "Written by `make bench` (`bench/run.py`); do not edit by hand.",
        "",
        f"- Machine: {mach}",
        f"- Date: {time.strftime('%Y-%m-%d %H:%M')}; triton {triton.__version__}; tilescope with all cores (default `--threads`)",
        f"- tilescope: median of {args.reps} runs of `tilescope run --no-poison --no-races --time` (the launch; file reading excluded). "
        f"Interpreter: median of up to {args.interp_reps} launches, fewer when one exceeds the {args.budget:.0f} s budget.",
        "- Same kernel source (`tests/ttir/kernels.py`) and the same inputs on both sides; outputs compared.",
        f"- Whole run: {total:.0f} s; load average at the end (1/5/15 min): "
        f"{' / '.join(f'{v:.1f}' for v in os.getloadavg())} (other work on the machine slows both sides).",
        "",
        "| workload | size | tilescope | rate | TRITON_INTERPRET=1 | rate | speed-up | outputs agree |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    sizes = {"vector_add": "16M fp32", "softmax": "4096x4096 fp32", "layer_norm": "4096x4096 fp16, fp32 stats",
             "matmul": "1024^3, 64x64x32 tiles, fp16 -> fp32",
             "loop_heavy": "64 progs x 16 lanes x 1000 iters", "reduce_heavy": "4096x4096 fp32, 3 reductions"}
    for r in rows:
        lines.append(f"| {r['name']} | {sizes[r['name']]} | {r['ts'] * 1e3:.2f} ms | {fmt_rate(r['work'] / r['ts'])}{r['unit']}/s "
                     f"| {r['it'] * 1e3:.1f} ms (x{r['it_reps']}) | {fmt_rate(r['work'] / r['it'])}{r['unit']}/s "
                     f"| **{r['ratio']:.1f}x** | {'yes' if r['ok'] else 'NO'} |")
    lines += ["", "## Sanitizer overhead", "",
              "`tilescope run --no-poison --no-races` (the plain engine: its bounds, null and assert checks are part of every "
              "access) against `tilescope run` (the full sanitizer: also undefined values, int32 overflow, division "
              "by zero), interleaved runs, median (min-max). Aim: at most 2x.", "",
              "| workload | plain engine | sanitizer | overhead |", "| --- | ---: | ---: | ---: |"]
    for r in rows:
        lines.append(f"| {r['name']} | {r['ts'] * 1e3:.2f} ms ({r['ts_min'] * 1e3:.2f}-{r['ts_max'] * 1e3:.2f}) "
                     f"| {r['sz'] * 1e3:.2f} ms ({r['sz_min'] * 1e3:.2f}-{r['sz_max'] * 1e3:.2f}) | **{r['sz'] / r['ts']:.2f}x** |")
    lines += ["", "## The plain engine against PyTorch CPU eager and the memory bandwidth", "",
              "The same math in PyTorch CPU eager on the same inputs (all cores, median of 5 after a warm-up; "
              "`torch.add`, `torch.softmax`, `torch.native_layer_norm` of the fp16 input made fp32 and the result "
              "made fp16, `torch.mm` of the fp16 inputs made fp32, the three row reductions). Aim: the plain engine "
              "within 3x of eager.", "",
              "| workload | plain engine | PyTorch eager | engine / eager |", "| --- | ---: | ---: | ---: |"]
    for r in rows:
        if r.get("eager"):
            q = r["ts"] / r["eager"]
            lines.append(f"| {r['name']} | {r['ts'] * 1e3:.2f} ms | {r['eager'] * 1e3:.2f} ms "
                         f"| **{q:.2f}x**{'' if q <= 3 else ' *missed*'} |")
    va = next((r for r in rows if r["name"] == "vector_add"), None)
    if va:
        eff = 3 * va["work"] * 4 / va["ts"]
        lines += ["", f"Memory bandwidth (a 64 MB torch copy, read + write, all cores): {bandwidth / 1e9:.1f} GB/s. "
                  f"vector_add moves 3 x 64 MB in {va['ts'] * 1e3:.2f} ms: {eff / 1e9:.1f} GB/s, "
                  f"**{bandwidth / eff:.2f}x** below the machine's bandwidth (aim: within 2x"
                  f"{'' if bandwidth / eff <= 2 else '; *missed*'})."]
    lines += ["", f"Start-up: a Python program that imports torch and Triton takes {startup[0]:.2f} s, and "
              f"{startup[1]:.2f} s under `tilescope sanitize --` (median of 5, interleaved): "
              f"**{startup[1] - startup[0]:+.2f} s** (aim: at most +0.3 s)."]
    lines += ["", "## Scheduler: programs that wait on each other", "",
              "tilescope alone (Triton's interpreter runs programs one after another: a program waiting for a later "
              "one never finishes there); kernels in `bench/sched_kernels.py`, outputs checked against the counts "
              f"they must produce. `tilescope run --no-poison --no-races --time`, median (min-max) of {args.reps} runs. A "
              "spinning program is parked until another program writes the address it polls (CONTRIBUTING.md, "
              "\"The scheduler\"): the cost is linear in the number of programs.", "",
              "| workload | what | tilescope | programs/s | outputs right |", "| --- | --- | ---: | ---: | --- |"]
    for r in sched:
        lines.append(f"| {r['name']} | {r['what']} | {r['ts'] * 1e3:.2f} ms ({r['ts_min'] * 1e3:.2f}-{r['ts_max'] * 1e3:.2f}) "
                     f"| {fmt_rate(r['programs'] / r['ts'])} | {'yes' if r['ok'] else 'NO'} |")
    lines += ["", "Wall time of the whole `tilescope run` process (TTIR parse, .npy I/O, launch), median:", ""]
    for r in rows:
        lines.append(f"- {r['name']}: {r['ts_wall'] * 1e3:.1f} ms")
    path = os.path.join(ROOT, "bench", "RESULTS.md")
    keep = ""  # sections of bench/peers.py and bench/analyses.py (between their markers): kept
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()
        for b, e in (("<!-- bench-analyses:begin -->", "<!-- bench-analyses:end -->"),
                     ("<!-- bench-peers:begin -->", "<!-- bench-peers:end -->")):
            if b in old and e in old:
                keep += "\n" + old[old.index(b):old.index(e) + len(e)] + "\n"
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n" + keep)


if __name__ == "__main__":
    sys.exit(main())
