#!/usr/bin/env python3
"""tilescope's sanitizer against its peers, on one suite; run by `make bench-peers`.

    python3 bench/peers.py [--reps N] [--cap SECONDS] [--budget SECONDS] [--only NAME ...] [--quick]
                           [--no-results] [--json PATH]

Tools (each launch of a case is run by each of them, in alternating order: ABC, BCA, CAB, ...):
  tilescope     `@tilescope.trace("sanitizer")` on the case's kernels: the launches run on tilescope's
                CPU engine with the sanitizer (every program, every lane checked).
  triton-viz    `triton_viz.trace(client=SymbolicSanitizer(abort_on_error=False))` (triton-viz 3.0 from
                PyPI): its symbolic sanitizer (z3) over Triton's interpreter.
  interpreter   plain `TRITON_INTERPRET=1` execution, no checking.

Cases: bench/peers_kernels.py (gemm, gemm with a planted out-of-bounds read, indirect load, nested
loops, block-pointer loop with advance, layer norm, SwiGLU, and Liger-Kernel's JSD, cross-entropy and
fused linear JSD, two sizes each), then triton-viz's own benchmark suite at its sizes (one case per
benchmark of its benchmarks/bench_sanitizer.py, launching all of its configurations).

One measurement = one fresh child process (forked from this one, which has imported torch, triton and
numpy but none of the tools, so each tool's patches of Triton stay in its own process) that builds the
case's inputs (same seed for every tool), applies the tool, and times the case's launch(es) with
perf_counter: the first launch of the process, i.e. what a user waits for, including tilescope's
compilation of the kernel to TTIR (Triton's front end; the on-disk TTIR cache is off, so this is a cold
start) and to its plan. tilescope's and triton-viz's
second launch in the same process (fresh inputs; triton-viz's per-launch cache cleared, as in its own
benchmark) is recorded too ("warm"). A measurement is killed after --cap seconds (reported as capped);
a tool stops being repeated on a case once it has spent --budget seconds on it.

Outputs are compared (allclose; bfloat16 / float16 outputs to one unit in the last place) with the
interpreter's, or with the case's own float64 torch reference where it has one (the interpreter gets
bfloat16 wrong); findings are counted per tool. Prints the
table and, unless --no-results, writes the "Against the peers" section of bench/RESULTS.md (between
its markers; the rest of the file belongs to bench/run.py).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TOOLS = ("tilescope", "triton-viz", "interpreter")
SEED = 20240
BEGIN, END = "<!-- bench-peers:begin -->", "<!-- bench-peers:end -->"


# --------------------------------------------------------------------------------------------
# The measuring child


def _load_bench_run():
    import importlib.util

    spec = importlib.util.spec_from_file_location("tilescope_bench_run", os.path.join(HERE, "run.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _replace_refs(mapping) -> None:
    """Replace every module-level reference to the objects in mapping (id -> new object) in
    bench/peers_kernels and Liger's modules (the places the cases launch kernels from)."""
    for name, mod in list(sys.modules.items()):
        if mod is None or not (name == "peers_kernels" or name.startswith("liger_kernel")):
            continue
        for attr, val in list(vars(mod).items()):
            if id(val) in mapping:
                setattr(mod, attr, mapping[id(val)])


def _wrap_for_triton_viz(kernels, client):
    """triton-viz's traced wrapper in place of each kernel, as `@triton_viz.trace(...)` above the
    kernel would have made it. Returns the wrappers."""
    import triton_viz

    traced = {id(k): triton_viz.trace(client=client)(k) for k in kernels}
    _replace_refs(traced)
    return list(traced.values())


class _Timed:
    """Stands in for a kernel object: `kernel[grid](...)` is timed (added to clock[0]) and forwarded;
    so the measured time is the launches' alone, not the host code of a library function around them."""

    def __init__(self, kernel, clock):
        self._kernel = kernel
        self._clock = clock

    def __getitem__(self, grid):
        launcher = self._kernel[grid]

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return launcher(*args, **kwargs)
            finally:
                self._clock[0] += time.perf_counter() - t0
                self._clock[1] += 1

        return timed

    def __getattr__(self, name):
        return getattr(self._kernel, name)


def _finding_summary(tool, state):
    if tool == "tilescope":
        import tilescope

        found = tilescope.findings()
        tilescope.clear_findings()
        return [f"{f.get('kind')} at {os.path.basename(str(f.get('file') or '?'))}:{f.get('line', '?')}" for f in found]
    if tool == "triton-viz":
        san = state["san"]
        out = []
        for r in san.records:
            kind = getattr(getattr(r, "op_type", None), "__name__", "?")
            where = ""
            tbs = getattr(r, "user_code_tracebacks", None) or []
            if tbs:
                tb = tbs[-1]
                where = f" at {os.path.basename(str(getattr(tb, 'filename', '?')))}:{getattr(tb, 'lineno', '?')}"
            out.append(f"out-of-bounds {kind.lower()}{where}")
        san.records.clear()
        return out
    return []


def child(tool: str, idx: int, quick: bool, out_dir: str, cache_dir: str = "") -> None:
    """Runs in the forked child: one measurement of case idx by tool; writes result.json (+ outputs).
    cache_dir: tilescope's on-disk TTIR cache for this process (default: off), as a second run of the
    same program has it."""
    res = {"tool": tool, "idx": idx}
    os.environ["TILESCOPE_CACHE_DIR"] = cache_dir
    log = open(os.path.join(out_dir, "log.txt"), "w")
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    t_setup = time.perf_counter()  # the tool's one-time set-up: its imports and the warm-up launch below
    try:
        if tool == "interpreter":
            os.environ["TRITON_INTERPRET"] = "1"
            # The parent imported Triton (torch._dynamo does) without TRITON_INTERPRET, so its own
            # @jit library functions (tl.sum, tl.sigmoid, ...) are compiled-mode objects; Triton is
            # imported afresh here, as a process started with TRITON_INTERPRET=1 would have it.
            for name in [m for m in sys.modules if (m == "triton" or m.startswith("triton.")) and not m.startswith("triton._C")]:
                del sys.modules[name]
        else:
            os.environ.pop("TRITON_INTERPRET", None)
        sys.path.insert(0, HERE)
        import numpy as np
        import peers_kernels

        if tool in ("interpreter", "triton-viz"):
            # numpy >= 2.4 and Triton 3.6's interpreter (a loop bound from a runtime int): the one-line
            # fix bench/run.py applies; triton-viz runs on the same interpreter.
            _load_bench_run()._patch_interpreter_for_numpy_2_4()
        case = peers_kernels.cases(quick)[idx]
        data = case.setup(np.random.default_rng(SEED + idx))
        if tool == "tilescope" and case.reference is not None:  # before the run: kernels write in place
            np.savez(os.path.join(out_dir, "reference.npz"),
                     **{k: v.detach().float().numpy() for k, v in case.reference(data).items()})
        kernels = case.kernels()
        state = {}
        if tool == "tilescope":
            import tilescope

            for k in kernels:
                tilescope.trace("sanitizer")(k)
        elif tool == "triton-viz":
            from triton_viz.clients.sanitizer.sanitizer import SymbolicSanitizer

            state["san"] = SymbolicSanitizer(abort_on_error=False)
            kernels = _wrap_for_triton_viz(kernels, state["san"])
        if tool == "tilescope":
            # How much of tilescope's first launch is Triton's front end (source -> TTIR, done by
            # Triton's own code generator and passes): timed around the front door's one call of it.
            from tilescope import _capture

            state["frontend"] = [0.0]
            make_ttir = _capture._make_ttir

            def timed_make_ttir(*a, **kw):
                t = time.perf_counter()
                try:
                    return make_ttir(*a, **kw)
                finally:
                    state["frontend"][0] += time.perf_counter() - t

            _capture._make_ttir = timed_make_ttir
        clock = [0.0, 0]  # seconds inside launches, launches
        _replace_refs({id(k): _Timed(k, clock) for k in kernels})

        # Process warm-up: one launch of a tiny unrelated kernel by the same tool.
        if tool == "tilescope":
            peers_kernels.warmup(tilescope.trace("sanitizer")(peers_kernels.warmup_kernel))
            tilescope.clear_findings()
        elif tool == "triton-viz":
            import triton_viz

            peers_kernels.warmup(triton_viz.trace(client=SymbolicSanitizer(abort_on_error=False))(
                peers_kernels.warmup_kernel))
        else:
            peers_kernels.warmup()
        if "frontend" in state:
            state["frontend"][0] = 0.0  # the warm-up kernel's compilation is not the case's
        res["setup"] = time.perf_counter() - t_setup

        t0 = time.perf_counter()
        outs = case.run(data)
        res["case_cold"] = time.perf_counter() - t0
        res["cold"], res["launches"] = clock
        if "frontend" in state:
            res["frontend"] = state["frontend"][0]
        res["findings"] = _finding_summary(tool, state)
        np.savez(os.path.join(out_dir, "outputs.npz"), **{k: v.detach().float().numpy() for k, v in outs.items()})
        res["out_dtypes"] = {k: str(v.dtype).removeprefix("torch.") for k, v in outs.items()}

        # The same launch(es) again in this process, on fresh inputs.
        if tool == "triton-viz":
            from triton_viz.clients.sanitizer.sanitizer import _fn_symbolic_cache_set

            _fn_symbolic_cache_set.clear()  # else the same launch is skipped as already checked
        data = case.setup(np.random.default_rng(SEED + idx))
        clock[0] = 0.0
        case.run(data)
        res["warm"] = clock[0]
        res["warm_findings"] = len(_finding_summary(tool, state))
    except BaseException as e:  # noqa: BLE001  (SystemExit from a peer's abort too)
        res["error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[-1] if str(e).strip() else ''}"[:300]
        traceback.print_exc()
    with open(os.path.join(out_dir, "result.json"), "w") as f:
        json.dump(res, f)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # no atexit hooks (tilescope prints its report at exit)


def measure(tool: str, idx: int, quick: bool, cap: float, work: str, cache_dir: str = "") -> dict:
    """Fork one child for one measurement; kill it after cap seconds."""
    import multiprocessing as mp

    out_dir = tempfile.mkdtemp(prefix=f"{tool}-{idx}-", dir=work)
    ctx = mp.get_context("fork")
    p = ctx.Process(target=child, args=(tool, idx, quick, out_dir, cache_dir))
    t0 = time.perf_counter()
    p.start()
    p.join(cap)
    wall = time.perf_counter() - t0
    if p.is_alive():
        p.kill()
        p.join()
        return {"tool": tool, "idx": idx, "capped": True, "wall": wall, "dir": out_dir}
    try:
        with open(os.path.join(out_dir, "result.json")) as f:
            res = json.load(f)
    except (OSError, ValueError):
        tail = ""
        try:
            with open(os.path.join(out_dir, "log.txt")) as f:
                tail = f.read()[-400:]
        except OSError:
            pass
        res = {"tool": tool, "idx": idx, "error": f"child died (exit {p.exitcode}): {tail.strip()[-200:]}"}
    res["wall"] = wall
    res["dir"] = out_dir
    return res


# --------------------------------------------------------------------------------------------
# Suite


def _preimport():
    """What every child needs and no tool patches: imported once here so a fork starts warm."""
    import numpy  # noqa: F401
    import torch  # noqa: F401
    import triton  # noqa: F401
    import triton.language  # noqa: F401
    for mod in ("torch._dynamo", "transformers", "z3", "flask", "anytree"):  # Liger's and triton-viz's imports
        try:
            __import__(mod)
        except Exception:  # noqa: BLE001
            pass


def _outputs(res, name="outputs"):
    import numpy as np

    p = os.path.join(res["dir"], f"{name}.npz")
    if "error" in res or res.get("capped") or not os.path.exists(p):
        return None
    with np.load(p) as z:
        return {k: z[k] for k in z.files}


# Relative tolerance of an output by its dtype: one unit in the last place for the 8- and 11-bit
# significands (two results rounded from float32 math may differ by one), 1e-3 otherwise.
RTOL = {"bfloat16": 2.0 ** -7, "float16": 2.0 ** -10}


def _same(a, b, dtypes=None) -> bool:
    import numpy as np

    if a is None or b is None or a.keys() != b.keys():
        return False
    for k in a:
        x, y = a[k], b[k]
        if x.shape != y.shape:
            return False
        scale = max(1.0, float(np.nanmax(np.abs(y))) if y.size else 1.0)
        rtol = RTOL.get((dtypes or {}).get(k, ""), 1e-3)
        if not np.allclose(x, y, rtol=rtol, atol=1e-4 * scale, equal_nan=True):
            return False
    return True


def run_suite(reps=3, cap=60.0, budget=25.0, only=None, quick=False, log=print):
    """Runs the suite; returns a dict with per-case rows and the machine description."""
    _preimport()
    sys.path.insert(0, HERE)
    import importlib

    pk = importlib.import_module("peers_kernels")  # only to list the cases; children re-import it
    all_cases = pk.cases(quick)
    del sys.modules["peers_kernels"]
    work = tempfile.mkdtemp(prefix="tilescope-peers-")
    rows = []
    t_start = time.time()
    for idx, case in enumerate(all_cases):
        if only and not any(o in case.name for o in only):
            continue
        runs = {t: [] for t in TOOLS}
        spent = {t: 0.0 for t in TOOLS}
        stopped = {t: False for t in TOOLS}
        for r in range(reps):
            order = TOOLS[r % 3:] + TOOLS[:r % 3]
            for tool in order:
                if stopped[tool]:
                    continue
                res = measure(tool, idx, quick, cap, work)
                runs[tool].append(res)
                spent[tool] += res["wall"]
                if res.get("capped") or "error" in res or spent[tool] >= budget:
                    stopped[tool] = True
        # A second run of the same program: tilescope's disk cache holds the kernel's TTIR (filled by
        # one untimed run first), so the first launch of the process skips Triton's front end.
        row = summarize(case, runs, cap)
        ts = row["tools"]["tilescope"]
        if ts.get("frontend"):
            cache_dir = os.path.join(work, f"ttir-cache-{idx}")
            measure("tilescope", idx, quick, cap, work, cache_dir)
            cached = [r for r in (measure("tilescope", idx, quick, cap, work, cache_dir) for _ in range(ts["n"]))
                      if "cold" in r]
            # Only runs that did hit the cache count: their front end (the cache key and the read) is a
            # fraction of the cold one.
            hits = [r for r in cached if r.get("frontend", ts["frontend"]) < 0.5 * ts["frontend"]]
            ts["cached_runs"] = len(cached)
            if hits:
                ts.update(cached=statistics.median(r["cold"] for r in hits), cached_n=len(hits),
                          cached_frontend=statistics.median(r["frontend"] for r in hits))
        rows.append(row)
        log(format_row(row))
    import shutil

    shutil.rmtree(work, ignore_errors=True)
    return {"rows": rows, "machine": machine(), "total_s": time.time() - t_start, "reps": reps, "cap": cap,
            "budget": budget, "versions": versions()}


def summarize(case, runs, cap):
    # The reference outputs: the case's own (torch, float64) where it has them, else the interpreter's.
    ref = next((o for r in runs["tilescope"] for o in [_outputs(r, "reference")] if o is not None), None)
    if ref is None and case.reference is None:
        ref = next((_outputs(r) for r in runs["interpreter"] if _outputs(r) is not None), None)
    row = {"kernel": case.kernel, "size": case.size, "name": case.name, "planted": case.planted, "tools": {},
           "reference": "torch" if case.reference is not None else "interpreter"}
    for tool in TOOLS:
        rs = runs[tool]
        ok = [r for r in rs if "cold" in r]
        info = {"n": len(ok)}
        if ok:
            cold = [r["cold"] for r in ok]
            info.update(median=statistics.median(cold), min=min(cold), max=max(cold))
            warm = [r["warm"] for r in ok if "warm" in r]
            if warm:
                info.update(warm=statistics.median(warm), warm_min=min(warm), warm_max=max(warm))
            info["launches"] = ok[0].get("launches")
            fe = [r["frontend"] for r in ok if "frontend" in r]
            if fe:
                info["frontend"] = statistics.median(fe)
            info["case"] = statistics.median(r["case_cold"] for r in ok)
            setup = [r["setup"] for r in ok if "setup" in r]
            if setup:
                info["setup"] = statistics.median(setup)
            info["findings"] = ok[0]["findings"]
            out = _outputs(ok[0])
            info["outputs_match"] = None if ref is None else _same(out, ref, ok[0].get("out_dtypes"))
        if any(r.get("capped") for r in rs):
            info["capped"] = cap
        errs = [r["error"] for r in rs if "error" in r]
        if errs:
            info["error"] = errs[0]
        row["tools"][tool] = info
    return row


def _cell(info):
    if "median" in info:
        s = f"{fmt_s(info['median'])}"
        if info["n"] > 1:
            s += f" ({fmt_s(info['min'])}-{fmt_s(info['max'])}, n={info['n']})"
        if "capped" in info:
            s += f" [later run capped at {info['capped']:.0f} s]"
        return s
    if "capped" in info:
        return f"> {info['capped']:.0f} s (capped)"
    if "error" in info:
        return f"error: {info['error']}"
    return "-"


def fmt_s(x):
    return f"{x * 1e3:.1f} ms" if x < 1 else f"{x:.2f} s"


def _time_for_ratio(info, key="median"):
    """(seconds, is a lower bound) for ratios: the median, or the cap when capped before any result."""
    if key in info:
        return info[key], False
    if "capped" in info and "median" not in info:
        return info["capped"], True
    return None, False


def ratio(row, tool, key="median"):
    ts, _ = _time_for_ratio(row["tools"]["tilescope"], key)
    other, lower = _time_for_ratio(row["tools"][tool], key)
    if ts is None or other is None:
        return None, False
    return other / ts, lower


def fmt_ratio(r):
    v, lower = r
    if v is None:
        return "n/a"
    return f"{'>' if lower else ''}{v:.1f}x"


def _found(info, planted):
    if "median" not in info:
        return "n/a"
    n = len(info.get("findings", []))
    if planted:
        return f"yes ({n})" if n else "NO"
    return f"{n} (false)" if n else "0"


def _short(info):
    if "median" in info:
        w = f" / {fmt_s(info['warm'])}" if "warm" in info else ""
        return f"{fmt_s(info['median'])}{w}"
    if "capped" in info:
        return f">{info['capped']:.0f} s capped"
    if "error" in info:
        return "error"
    return "-"


def format_row(row):
    t = row["tools"]
    return (f"{row['name']:52s} ts {_short(t['tilescope']):>20s}  viz {_short(t['triton-viz']):>20s}  "
            f"interp {_short(t['interpreter']):>20s}  viz/ts {fmt_ratio(ratio(row, 'triton-viz')):>7s} "
            f"{fmt_ratio(ratio(row, 'triton-viz', 'warm')):>7s}  interp/ts {fmt_ratio(ratio(row, 'interpreter')):>7s} "
            f"{fmt_ratio(ratio(row, 'interpreter', 'warm')):>7s}  found ts {_found(t['tilescope'], row['planted'])} "
            f"viz {_found(t['triton-viz'], row['planted'])}")


def totals(rows, key="median"):
    """Sums of the per-case medians over the cases where tilescope and the peer both have a time
    (a capped peer counts with the cap, making the ratio a lower bound)."""
    out = {}
    for tool in ("triton-viz", "interpreter"):
        ts_sum = other_sum = 0.0
        lower = False
        n = 0
        for row in rows:
            ts, _ = _time_for_ratio(row["tools"]["tilescope"], key)
            other, lb = _time_for_ratio(row["tools"][tool], key)
            if ts is None or other is None:
                continue
            ts_sum += ts
            other_sum += other
            lower |= lb
            n += 1
        logs = [math.log(r) for r, _ in (ratio(row, tool, key) for row in rows) if r]
        out[tool] = dict(tilescope=ts_sum, peer=other_sum, ratio=(other_sum / ts_sum) if ts_sum else None, lower=lower,
                         cases=n, geomean=math.exp(sum(logs) / len(logs)) if logs else None,
                         slower=[row["name"] for row in rows if (ratio(row, tool, key)[0] or 2.0) < 1.0])
    return out


def machine() -> str:
    try:
        return _load_bench_run().machine()
    except Exception:  # noqa: BLE001
        return f"{os.cpu_count()} hardware threads visible"


def versions() -> dict:
    from importlib import metadata

    out = {}
    for pkg in ("triton", "torch", "numpy", "triton-viz", "z3-solver", "liger-kernel", "tilescope"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


# --------------------------------------------------------------------------------------------
# Report


def _md_cell(info):
    """'first (min-max) / again' for the table."""
    if "median" in info:
        c = fmt_s(info["median"])
        if info["n"] > 1:
            c += f" ({fmt_s(info['min'])}-{fmt_s(info['max'])})"
        if "warm" in info:
            c += f" / {fmt_s(info['warm'])}"
        if "capped" in info:
            c += " (a later run capped)"
        return c
    if "capped" in info:
        return f"> {info['capped']:.0f} s (capped)"
    if "error" in info:
        return "fails (below)"
    return "-"


def _total_line(tot, key, label):
    tv, ti = tot["triton-viz"], tot["interpreter"]
    parts = []
    for name, t in (("triton-viz", tv), ("TRITON_INTERPRET=1", ti)):
        if t["ratio"]:
            parts.append(f"tilescope {fmt_s(t['tilescope'])} vs {name} {fmt_s(t['peer'])} over the {t['cases']} cases "
                         f"both ran: **{'>' if t['lower'] else ''}{t['ratio']:.1f}x** (geometric mean of the per-case "
                         f"ratios {t['geomean']:.1f}x; tilescope slower on {len(t['slower'])})")
    return f"- {label}: " + "; ".join(parts) + "."


def markdown(result, args_line: str) -> str:
    rows = result["rows"]
    v = result["versions"]
    la = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [
        BEGIN,
        "## Against the peers",
        "",
        "Written by `make bench-peers` (`bench/peers.py`, cases in `bench/peers_kernels.py`); do not edit by hand.",
        "",
        f"- Machine: {result['machine']}; load average at the end (1/5/15 min): {la}. The machine is shared: "
        "other work slows every tool, tilescope's multi-threaded engine most (the peers use one core).",
        f"- Date: {time.strftime('%Y-%m-%d %H:%M')}; " + ", ".join(f"{k} {val}" for k, val in v.items()) + ".",
        f"- Command: `{args_line}`; whole run {result['total_s']:.0f} s.",
        "- **tilescope**: `@tilescope.trace(\"sanitizer\")`: every program and lane runs on the CPU engine (all "
        "cores) and every access is checked. **triton-viz**: `triton_viz.trace(client=SymbolicSanitizer("
        "abort_on_error=False))`, its z3 symbolic sanitizer on Triton's interpreter. **interpreter**: "
        "`TRITON_INTERPRET=1`, no checks.",
        "- Each time is the sum of the case's kernel launches (library host code around them excluded), measured in "
        "a fresh process forked per measurement (tools alternating ABC/BCA/CAB), after one launch of a tiny "
        "unrelated kernel by the same tool (so process-wide one-time costs are not counted here; they are measured "
        "apart, below the aims table). **first**: the first "
        "launch of the case's kernel in the process, including tilescope's compilation (Triton's front end to TTIR, "
        "then its plan); median (min-max) of the runs. **again**: the same launch again in that process on fresh "
        "inputs (compiled kernel reused; triton-viz's per-launch cache cleared, as its own benchmark does). \"of which "
        "Triton front end\": the part of tilescope's first launch spent in Triton's code generator and TTIR passes "
        "(`make_ir` + `make_ttir`, called by tilescope's front door), median.",
        f"- A tool stops repeating a case after {result['budget']:.0f} s; a run is killed at {result['cap']:.0f} s "
        "(capped: the ratio is then a lower bound).",
        "- Outputs compared (allclose; bfloat16 outputs to one unit in the last place) with the reference: the "
        "interpreter's outputs, or, for a case marked *(torch)*, the outputs computed in float64 with torch, where "
        "the interpreter's are wrong (bfloat16). triton-viz's sanitizer does not compute outputs: it evaluates one "
        "program symbolically (all programs once a load feeds an address) and leaves the output buffers as they were.",
        "",
        "| kernel | size | tilescope first / again | of which Triton front end | triton-viz first / again "
        "| TRITON_INTERPRET=1 first / again | viz / ts first | again | interp / ts first | again "
        "| outputs = reference (ts / viz / interp) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]

    def yn(x):
        return "n/a" if x is None else ("yes" if x else "no")

    for row in rows:
        t = row["tools"]
        lines.append(
            f"| {row['kernel']} | {row['size']} | {_md_cell(t['tilescope'])} "
            f"| {fmt_s(t['tilescope']['frontend']) if 'frontend' in t['tilescope'] else '-'} | {_md_cell(t['triton-viz'])} "
            f"| {_md_cell(t['interpreter'])} | **{fmt_ratio(ratio(row, 'triton-viz'))}** "
            f"| {fmt_ratio(ratio(row, 'triton-viz', 'warm'))} | **{fmt_ratio(ratio(row, 'interpreter'))}** "
            f"| {fmt_ratio(ratio(row, 'interpreter', 'warm'))} | {yn(t['tilescope'].get('outputs_match'))} / "
            f"{yn(t['triton-viz'].get('outputs_match'))} / {yn(t['interpreter'].get('outputs_match'))}"
            f"{' *(torch)*' if row.get('reference') == 'torch' else ''} |")
    lines += [
        "",
        "Totals (sums of the medians):",
        "",
        _total_line(totals(rows, "median"), "median", "first launch"),
        _total_line(totals(rows, "warm"), "warm", "again"),
        "",
        "The aims (README, \"Speed\"), case by case: **again**, at least 200x the interpreter and 5x triton-viz "
        "while computing the outputs; **first, cold** (empty TTIR cache: Triton's front end included), faster "
        "than triton-viz; **first, cache warm** (a second run of the same program: tilescope's disk cache holds "
        "the TTIR, so the front end is the cache key and the read; triton-viz's first launch for comparison), at "
        "least 5x triton-viz. A ratio below its aim is marked *missed*; why, case by case: README \"Speed\"; the "
        "profiles behind it and each change's before / after: `bench/SPEED.md`.",
        "",
        "| kernel | size | again: interp / ts | again: viz / ts | first, cold: viz / ts | first, cold, with the "
        "one-time set-up: viz / ts | first, cache warm: tilescope (of which front end) | first, cache warm: viz / ts |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]

    def aim(r, goal):
        v, lower = r
        if v is None:
            return "n/a"
        return fmt_ratio(r) + ("" if v >= goal else " *missed*")

    for row in rows:
        t = row["tools"]["tilescope"]
        viz, _ = _time_for_ratio(row["tools"]["triton-viz"], "median")
        cached = (viz / t["cached"], False) if "cached" in t and viz else (None, False)
        cell = f"{fmt_s(t['cached'])} ({fmt_s(t['cached_frontend'])})" if "cached" in t else "-"
        vz = row["tools"]["triton-viz"]
        with_setup = ((vz["median"] + vz["setup"]) / (t["median"] + t["setup"]), False) \
            if all(k in i for i in (t, vz) for k in ("median", "setup")) else (None, False)
        lines.append(f"| {row['kernel']} | {row['size']} | {aim(ratio(row, 'interpreter', 'warm'), 200)} "
                     f"| {aim(ratio(row, 'triton-viz', 'warm'), 5)} | {aim(ratio(row, 'triton-viz'), 1.0)} "
                     f"| {aim(with_setup, 1.0)} | {cell} | {aim(cached, 5)} |")
    setups = {tool: [r["tools"][tool]["setup"] for r in rows if "setup" in r["tools"][tool]] for tool in TOOLS}
    lines += [
        "",
        "One-time set-up of a process (the tool's imports, with torch and Triton already imported, and its first "
        "launch of a tiny kernel, which includes Triton's front end for it in tilescope's case), median over the "
        "cases' measurements: " + "; ".join(
            f"{tool} {fmt_s(statistics.median(v))}" for tool, v in setups.items() if v) + ". \"first, cold, with "
        "the one-time set-up\" adds each tool's own set-up to its first launch of the case (the first kernel "
        "of a fresh process).",
    ]
    lines += [
        "",
        "Findings (first run of each case; the planted bug is the off-by-one row mask (`<=`) of "
        "`gemm_oob_kernel`'s A load, which reads one row past the end of A; at triton-viz's seven sizes, "
        "`gemm_shift_oob_kernel`'s A offsets one element too far, as in triton-viz's own benchmark):",
        "",
        "| kernel | size | planted OOB | tilescope | triton-viz | interpreter |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        t = row["tools"]
        lines.append(f"| {row['kernel']} | {row['size']} | {'yes' if row['planted'] else 'no'} "
                     f"| {_found(t['tilescope'], row['planted'])} | {_found(t['triton-viz'], row['planted'])} "
                     f"| {'no checks' if 'median' in t['interpreter'] else 'n/a'} |")
    lines += ["", "Failures, and the findings reported:", ""]
    for row in rows:
        for tool in TOOLS:
            info = row["tools"][tool]
            if "error" in info:
                lines.append(f"- {row['name']}, {tool}: fails: `{info['error']}`")
            fs = sorted(set(info.get("findings", [])))
            if fs:
                lines.append(f"- {row['name']}, {tool}: {len(info['findings'])} finding(s): {'; '.join(fs[:4])}")
    lines.append(END)
    return "\n".join(lines) + "\n"


def write_results(text: str) -> None:
    path = os.path.join(HERE, "RESULTS.md")
    old = ""
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()
    if BEGIN in old and END in old:
        new = old[:old.index(BEGIN)] + text.rstrip("\n") + old[old.index(END) + len(END):]
    else:
        new = old.rstrip("\n") + ("\n\n" if old else "") + text
    with open(path, "w") as f:
        f.write(new)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=4, help="measurements per tool and case (at most)")
    ap.add_argument("--cap", type=float, default=60.0, help="seconds after which a measurement is killed")
    ap.add_argument("--budget", type=float, default=20.0, help="seconds per tool and case before repeats stop")
    ap.add_argument("--only", nargs="*", help="cases whose name contains one of these")
    ap.add_argument("--quick", action="store_true", help="the smoke test's tiny sizes")
    ap.add_argument("--no-results", action="store_true", help="do not write bench/RESULTS.md")
    ap.add_argument("--json", help="also write the raw result here")
    args = ap.parse_args(argv)
    # The first launch is measured cold: tilescope's on-disk TTIR cache (which a second run of the same
    # program would hit, as Triton's own cache does) is off, so it includes Triton's front end.
    os.environ.setdefault("TILESCOPE_CACHE_DIR", "")
    result = run_suite(args.reps, args.cap, args.budget, args.only, args.quick)
    for key in ("median", "warm"):
        for tool, t in totals(result["rows"], key).items():
            if t["ratio"]:
                print(f"{'first' if key == 'median' else 'again'}: total over {t['cases']} cases: tilescope "
                      f"{fmt_s(t['tilescope'])}, {tool} {fmt_s(t['peer'])}: {'>' if t['lower'] else ''}{t['ratio']:.1f}x "
                      f"(geometric mean {t['geomean']:.1f}x; tilescope slower on {', '.join(t['slower']) or 'none'})")
    print(f"machine: {result['machine']}; whole run {result['total_s']:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    if not args.no_results and not args.only and not args.quick:
        given = list(argv if argv is not None else sys.argv[1:])
        if "--json" in given:  # where the raw result went is not part of the method
            i = given.index("--json")
            del given[i:i + 2]
        cmd = "python3 bench/peers.py" + "".join(f" {a}" for a in given)
        write_results(markdown(result, cmd))
    return 0


if __name__ == "__main__":
    sys.exit(main())
