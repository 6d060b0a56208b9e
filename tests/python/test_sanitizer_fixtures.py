"""The sanitizer through `tilescope run`: every correct TTIR fixture gives zero findings (exit 0, an empty
JSON list), and the buggy kernels of tests/cpp/analysis give exactly the expected finding (kind, op,
Python line, counts) in --json and --sarif.

Expected lines are found by searching the kernel source for the statement; counts are worked out by
hand from the kernel and its inputs.
"""
from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest

import tsrun

ROOT = tsrun.ROOT
ANALYSIS = os.path.join(ROOT, "tests", "cpp", "analysis")

# Fixtures that are buggy on purpose, with the findings they must give (kind, op) and nothing else.
EXPECTED = {
    "device_assert_fail": {("assert-failed", "tt.assert")},
    # edge_int divides by zero on purpose (GPU edge values, reference §5): a // 0 and a % 0, signed and
    # unsigned, all stored.
    "edge_int": {("division-by-zero", "arith.divsi"), ("division-by-zero", "arith.remsi"),
                 ("division-by-zero", "arith.divui"), ("division-by-zero", "arith.remui")},
}
# Fixtures the engine refuses with a located "unsupported op" error (Triton 3.9's tt.atomic_poll): not
# sanitizer cases; test_fixtures.py checks their errors.
UNSUPPORTED = {"atomic_poll"}


def all_cases():
    """tsrun.cases() (Triton 3.6, the corpus of record) plus the other Triton versions' directories."""
    out = list(tsrun.cases())
    for sub in sorted(os.listdir(tsrun.TTIR_DIR)):
        man = os.path.join(tsrun.TTIR_DIR, sub, "manifest.json")
        if not sub.startswith("triton-") or not os.path.exists(man):
            continue
        with open(man) as f:
            for fx in json.load(f).get("fixtures", []):
                files = [fx["file"]] + [v["file"] for v in fx.get("variants", [])]
                files += [fx["source_file"]] if fx.get("source_file") else []
                for fl in files:
                    if os.path.exists(os.path.join(tsrun.TTIR_DIR, sub, fl)):
                        out.append((f"{sub}/{fl[:-5]}", fx, f"{sub}/{fl}"))
    return out


CASES = [c for c in all_cases() if c[1]["name"] not in UNSUPPORTED]


def run_fixture(case_file, fx, tmp):
    out = os.path.join(tmp, "findings.json")
    sarif = os.path.join(tmp, "findings.sarif")
    r = tsrun.run(fx, tmp, case_file, extra=["--json", out, "--sarif", sarif, "--color", "never"], poison=True)
    return r, out, sarif


@pytest.mark.parametrize("case_id,fx,case_file", CASES, ids=[c[0] for c in CASES])
def test_fixture_findings(case_id, fx, case_file, tmp_path):
    r, out, sarif = run_fixture(case_file, fx, str(tmp_path))
    assert r.returncode in (0, 1), r.describe()
    findings = json.load(open(out))
    got = {(f["kind"], f["op"]) for f in findings}
    want = EXPECTED.get(fx["name"], set())
    assert got == want, r.describe()
    assert len(findings) == len(want), r.describe()
    assert r.returncode == (1 if want else 0), r.describe()
    log = json.load(open(sarif))
    assert log["version"] == "2.1.0"
    assert len(log["runs"][0]["results"]) == len(want)
    if not want:
        assert "error[" not in r.stderr


def kernel_line(needle: str, path: str = os.path.join(ANALYSIS, "kernels.py")) -> int:
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if needle in line:
                return i
    raise AssertionError(f"{needle!r} not in {path}")


def cli(ttir: str, args: list[str], tmp, grid: str = "1"):
    out = os.path.join(str(tmp), "f.json")
    cmd = [tsrun.tilescope_bin(), "run", os.path.join(ANALYSIS, ttir), "--grid", grid, "--json", out,
           "--color", "never"]
    for a in args:
        cmd += ["--arg", a]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert p.returncode in (0, 1), p.stderr
    return p, json.load(open(out))


def test_undefined_sum_reported_at_the_reduce(tmp_path):
    p, fs = cli("undef_sum.ttir", ["x_ptr=f32[16]:ones", "out_ptr=f32[1]:zeros", "n=i32:10"], tmp_path)
    assert p.returncode == 1
    assert len(fs) == 1
    f = fs[0]
    assert (f["kind"], f["op"], f["line"]) == ("undefined-value", "tt.reduce", kernel_line("s = tl.sum(x, axis=0)"))
    assert f["cause"]["op"] == "tt.load"
    assert f["cause"]["line"] == kernel_line("x = tl.load(x_ptr + offs, mask=mask)")
    assert f["lanes"] == {"count": 6, "first": [10, 11, 12, 13, 14]}
    assert f["programs"] == {"count": 1, "first": [[0, 0, 0]], "last": [0, 0, 0]}
    assert f["source"] == "    s = tl.sum(x, axis=0)"
    assert "error[undefined-value]" in p.stderr


def test_where_before_sum_is_clean(tmp_path):
    p, fs = cli("where_sum.ttir", ["x_ptr=f32[16]:ones", "out_ptr=f32[1]:zeros", "n=i32:10"], tmp_path)
    assert (p.returncode, fs) == (0, [])


def test_int32_overflow_at_the_multiply(tmp_path):
    p, fs = cli("overflow.ttir", ["x_ptr=f32[16]:ones", "out_ptr=f32[80]:zeros", f"stride=i32:{1 << 30}"], tmp_path,
                grid="5")
    assert p.returncode == 1
    ov = [f for f in fs if f["kind"] == "int32-overflow"]
    assert len(ov) == 1
    f = ov[0]
    assert (f["op"], f["line"], f["var"]) == ("arith.muli", kernel_line("start = pid * stride"), "start")
    # pids 2, 3, 4 overflow (4 * 2^30 wraps to 0: in bounds, still reported)
    assert f["programs"] == {"count": 3, "first": [[2, 0, 0], [3, 0, 0], [4, 0, 0]], "last": [4, 0, 0]}
    assert f["use"]["op"] == "tt.load"
    oob = [f for f in fs if f["kind"] == "out-of-bounds-load"]
    assert len(oob) == 1 and oob[0]["programs"]["first"] == [[1, 0, 0], [2, 0, 0], [3, 0, 0]]
    assert len(fs) == 2


def test_division_by_zero(tmp_path):
    a = os.path.join(str(tmp_path), "a.npy")
    b = os.path.join(str(tmp_path), "b.npy")
    np.save(a, np.arange(100, 116, dtype=np.int32))
    np.save(b, np.array([1] * 7 + [0] + [1] * 8, dtype=np.int32))
    p, fs = cli("divide.ttir", [f"a_ptr={a}", f"b_ptr={b}", "out_ptr=i32[16]:zeros", "n=i32:16"], tmp_path)
    assert [(f["kind"], f["op"], f["line"]) for f in fs] == [("division-by-zero", "arith.divsi", kernel_line("q = a // b"))]
    assert fs[0]["lanes"] == {"count": 1, "first": [7]}
    # lane 7 masked off at the store (n = 7): not consumed, no finding
    p, fs = cli("divide.ttir", [f"a_ptr={a}", f"b_ptr={b}", "out_ptr=i32[16]:zeros", "n=i32:7"], tmp_path)
    assert (p.returncode, fs) == (0, [])


def test_out_of_bounds_atomic_offsets(tmp_path):
    p, fs = cli("atomic_hist.ttir", ["idx_ptr=i32[16]:arange", "hist_ptr=i32[10]:zeros"], tmp_path)
    assert len(fs) == 1
    f = fs[0]
    assert (f["kind"], f["line"]) == ("out-of-bounds-atomic", kernel_line("tl.atomic_add(hist_ptr + idx, 1)"))
    assert f["offsets"] == {"min": 10, "max": 15, "elements_before": 0, "elements_past": 6}
    assert f["buffer"]["name"] == "hist_ptr" and f["buffer"]["numel"] == 10
    assert "up to 6 elements past the end" in p.stderr


def test_masked_rows_not_consumed(tmp_path):
    p, fs = cli("undef_rows.ttir", ["x_ptr=f32[32]:ones", "out_ptr=f32[4]:zeros", "rows=i32:3"], tmp_path)
    assert (p.returncode, fs) == (0, [])
