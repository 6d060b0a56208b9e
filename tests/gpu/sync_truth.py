"""What a GPU and compute-sanitizer say about the cases of tests/gpu/sync_cases.py.

    python3 tests/gpu/sync_truth.py --out tests/gpu/data        # on a machine with a CUDA GPU

runs each case REPEAT times and records how many runs matched the race-free reference and how many
distinct results the GPU gave (a race shows as results that differ from run to run, or that are wrong;
a run that looks right proves nothing), then runs all cases once under compute-sanitizer's racecheck
and initcheck (`--tool racecheck|initcheck`) and records the errors each tool reported per case.
Writes `sync_h200.json`. tests/python/test_sync_cases.py runs the same cases under tilescope; the README
quotes the comparison.

`--run-once` (used by the compute-sanitizer runs) runs every case once and prints a marker line before
each, so that the tool's reports can be attributed to the case that caused them.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sync_cases  # noqa: E402

MARK = "@@case "


def run_once():
    for name, case in sync_cases.CASES.items():
        print(MARK + name, flush=True)
        case("cuda")
        torch.cuda.synchronize()
        print(MARK + "end", flush=True)


def repeat(name, n):
    matches, distinct = 0, set()
    for _ in range(n):
        out, ref = sync_cases.CASES[name]("cuda")
        torch.cuda.synchronize()
        out = out.cpu()
        distinct.add(out.numpy().tobytes())
        if ref is not None and torch.equal(out.to(ref.dtype), ref):
            matches += 1
    return {"runs": n, "matches_reference": matches if ref is not None else None, "distinct_results": len(distinct)}


ERROR_LINE = re.compile(r"^========= (?!ERROR SUMMARY)(\S.*)$")


def sanitizer(tool):
    exe = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
    cmd = [exe, "--tool", tool, "--print-limit", "1000", sys.executable, os.path.abspath(__file__), "--run-once"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=500)
    per_case, current, first = {}, None, {}
    for line in p.stdout.splitlines():
        if line.startswith(MARK):
            current = line[len(MARK):].strip()
            current = None if current == "end" else current
            if current:
                per_case.setdefault(current, 0)
            continue
        m = ERROR_LINE.match(line)
        if m and current and not line.startswith("=========     ") and "Program hit" not in line:
            per_case[current] += 1
            first.setdefault(current, m.group(1).strip())
    summary = re.findall(r"ERROR SUMMARY: (\d+) error", p.stdout)
    summary_lines = [ln.strip("= ").strip() for ln in p.stdout.splitlines() if "SUMMARY" in ln]
    return {
        "command": " ".join(["compute-sanitizer", "--tool", tool, "--print-limit", "1000", "python", "sync_truth.py",
                             "--run-once"]),
        "exit_code": p.returncode,
        "error_summary": int(summary[-1]) if summary else None,
        "summary_lines": summary_lines,
        "errors_per_case": per_case,
        "first_error_per_case": first,
        "stderr_tail": p.stderr[-2000:],
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/gpu/data")
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--run-once", action="store_true")
    ap.add_argument("--no-sanitizer", action="store_true")
    a = ap.parse_args()
    if a.run_once:
        run_once()
        return
    import triton
    result = {
        "device": torch.cuda.get_device_name(),
        "capability": list(torch.cuda.get_device_capability()),
        "triton": triton.__version__,
        "torch": torch.__version__,
        "repeat": a.repeat,
        "cases": {},
    }
    for name in sync_cases.CASES:
        r = repeat(name, a.repeat)
        r["expect"] = sync_cases.EXPECT[name]
        result["cases"][name] = r
        print(name, r, flush=True)
    if not a.no_sanitizer:
        for tool in ("racecheck", "initcheck"):
            result[tool] = sanitizer(tool)
            print(tool, json.dumps(result[tool]["errors_per_case"]), result[tool]["error_summary"], flush=True)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "sync_h200.json"), "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
