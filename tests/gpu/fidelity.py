#!/usr/bin/env python3
"""Write bench/FIDELITY.md: every GPU ground-truth kernel x {bit-exact, within policy, mismatch}.

    TILESCOPE_BIN=build/tilescope python3 tests/gpu/fidelity.py     (or: make fidelity)

For each kernel of tests/gpu/data (measured on an NVIDIA H200 by tests/gpu/make_ground_truth.py), run
tilescope on the same TTIR and inputs and classify each output:
  bit-exact      every compared element has the GPU's bits (any NaN equals any NaN);
  within policy  not bit-exact, but within the written float policy of tests/python/test_gpu_truth.py
                 (ulps for approximate GPU math, a bound for hardware summation order);
  mismatch       outside the policy.
A kernel takes its worst output's class. The policy is the one the tests enforce, so a mismatch here
is also a failing test.

A second table does the same for the examples' kernel launches recorded on the GPU
(tests/gpu/record_examples.py -> tests/gpu/data/examples.npz): each launch is replayed in this process
through tilescope's Python capture and classified by tests/python/test_gpu_examples.py (its float
policy; findings or an error count as a mismatch).
"""
from __future__ import annotations

import datetime
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))

import numpy as np  # noqa: E402

import expected as ex  # noqa: E402
import test_gpu_truth as gt  # noqa: E402
import tsrun  # noqa: E402

ORDER = ["bit-exact", "within policy", "mismatch"]


def classify(name: str, tmp: str) -> tuple[str, list[str]]:
    fx = gt.FIX[name]
    inputs = {a["name"]: gt.ARR[f"{name}/in/{a['name']}"] for a in fx["args"] if a["kind"] == "ptr"}
    res = tsrun.run(fx, tmp, inputs=inputs)
    if res.returncode != 0:
        return "mismatch", [f"tilescope exited {res.returncode}"]
    worst, notes = 0, []
    for a in fx["args"]:
        key = (name, a["name"])
        if a["kind"] != "ptr" or a["role"] == "in" or key in gt.SKIP_OUT:
            continue
        gpu, got = gt.ARR[f"{name}/out/{a['name']}"], res.outputs[a["name"]]
        dt = a["dtype"] if a["dtype"] in ("bf16", "f8e5", "f8e4nv") else None
        exact = ex.Exact(gpu, dt)
        if key in gt.MASKS:
            exact.where(gt.MASKS[key](inputs))
        try:
            exact.check(got, key)
            continue
        except AssertionError:
            pass
        tol = gt.TOL.get(key, gt.exact)
        if isinstance(tol, dict):
            checks = [(got[r], ex.Exact(gpu[r], dt) if f is gt.exact else f(gpu[r], inputs)) for r, f in tol.items()]
        else:
            checks = [(got, ex.Exact(gpu, dt) if tol is gt.exact else tol(gpu, inputs))]
        ok = True
        for g, chk in checks:
            try:
                chk.check(g, key)
            except AssertionError as e:
                ok = False
                notes.append(str(e).splitlines()[0][:160])
        cls = 1 if ok else 2
        if cls == 1:
            notes.append(f"{a['name']}: within policy")
        worst = max(worst, cls)
    return ORDER[worst], notes


def examples_section() -> tuple[list[str], dict[str, int]]:
    """The examples' table (markdown lines) and its counts; a note instead when there is no GPU data."""
    import test_gpu_examples as ge

    counts = {k: 0 for k in ORDER}
    head = ["", "## The examples' kernel launches", ""]
    if ge.META is None:
        return head + [f"No GPU data for the examples yet ({os.path.relpath(ge.NPZ, ROOT)} is missing): record it on "
                       f"a CUDA machine with `python3 tests/gpu/record_examples.py --out tests/gpu/data`."], counts
    meta = ge.META
    if meta.get("executor") != "cuda" and not ge.ALLOW_SELF_TEST:
        return head + [f"The examples' data in {os.path.relpath(ge.INDEX, ROOT)} was not recorded on a GPU "
                       f"(executor {meta.get('executor')!r}); record it with "
                       "`python3 tests/gpu/record_examples.py --out tests/gpu/data` on a CUDA machine."], \
            {**counts, "mismatch": 1}
    rows = []
    for example, launch in ge.cases():
        cls, notes = ge.classify(example, launch)
        counts[cls] += 1
        best = launch.get("autotune_best_config")
        tuned = f" (autotuned: {best['str']})" if best else ""
        rows.append(f"| {example} | {launch['index']} | {launch['kernel']}{tuned} | "
                    f"{'x'.join(map(str, launch['grid']))} | {cls} | {'; '.join(notes).replace('|', '/')} |")
    head += [f"- Recorded by `tests/gpu/record_examples.py` ({meta.get('executor')}): {meta.get('device')} "
             f"(sm_{''.join(map(str, meta.get('capability', [])))}), triton {meta.get('triton')}, torch "
             f"{meta.get('torch')}, {meta.get('date')}, enable_fp_fusion={meta.get('enable_fp_fusion')}; at most "
             f"{meta.get('max_launches')} launches per example; replayed here through tilescope's in-process "
             "capture on the same argument bytes, grid, constexprs and chosen autotune configuration.",
             "- Same classes; the float policy is the one of `tests/python/test_gpu_examples.py`; bytes of a "
             "storage outside the tensor arguments' views must be bit-exact; any finding is a mismatch.", "",
             f"Totals: {counts['bit-exact']} bit-exact, {counts['within policy']} within policy, "
             f"{counts['mismatch']} mismatch, of {len(rows)} launches.", "",
             "| example | launch | kernel | grid | class | notes |", "| --- | --- | --- | --- | --- | --- |"]
    return head + rows, counts


def main() -> int:
    rows, counts = [], {k: 0 for k in ORDER}
    with tempfile.TemporaryDirectory() as d:
        for i, name in enumerate(gt._cases()):
            cls, notes = classify(name, os.path.join(d, str(i)))
            counts[cls] += 1
            rows.append((name, cls, "; ".join(notes)))
    meta = gt.META_D
    out = ["# Fidelity: tilescope on the CPU against an NVIDIA H200", "",
           "Written by `make fidelity` (`tests/gpu/fidelity.py`); do not edit by hand.", "",
           f"- GPU data: {meta.get('device')} (sm_{''.join(map(str, meta.get('capability', [])))}), "
           f"triton {meta.get('triton')}, torch {meta.get('torch')}, measured {meta.get('date')}, "
           f"enable_fp_fusion={meta.get('enable_fp_fusion')} (`tests/gpu/make_ground_truth.py`).",
           f"- TTIR: printed by triton {tsrun.manifest()['triton']} (`tests/ttir/`); tilescope run here on "
           f"{datetime.date.today().isoformat()}.",
           "- Classes: **bit-exact** (every element has the GPU's bits; any NaN equals any NaN), **within policy** "
           "(the written float policy of `tests/python/test_gpu_truth.py`: ulps for approximate GPU math, a bound "
           "for the hardware's summation order), **mismatch** (outside it).", "",
           f"Totals: {counts['bit-exact']} bit-exact, {counts['within policy']} within policy, "
           f"{counts['mismatch']} mismatch, of {len(rows)} kernels.", "",
           "| kernel | class | notes |", "| --- | --- | --- |"]
    out += [f"| {n} | {c} | {t} |" for n, c, t in rows]
    print("\n".join(out[-len(rows) - 4:]))
    ex_lines, ex_counts = examples_section()
    out += ex_lines
    print("\n".join(ex_lines))
    path = os.path.join(ROOT, "bench", "FIDELITY.md")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"wrote {path}")
    return 1 if counts["mismatch"] or ex_counts["mismatch"] else 0


if __name__ == "__main__":
    sys.exit(main())
