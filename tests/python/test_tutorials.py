"""Triton's tutorials 01 (vector add), 02 (fused softmax), 04 (low-memory dropout) and 08 (grouped GEMM),
unmodified, under `tilescope sanitize`: the fast subset of `make test-tutorials` (bench/tutorials.py; results of
all of them in bench/TUTORIALS.md), and issue 9's done-criterion.

Each must exit 0 with no findings and correct results: 01 prints the largest difference between torch's and
Triton's sums (it must be 0); 02 asserts torch.allclose against torch.softmax; 08 asserts torch.allclose of
every product of its group against torch.matmul, for the pointer-array kernel (a tensor of data_ptr() values)
and the TMA-descriptor kernel; 04 checks nothing itself, so its printed tables are checked here against the
definition of dropout (output = input / (1 - p) where kept, else 0; the same seed gives the same mask).
01, 02 and 08 then run their benchmark section, which must finish and print its table (times are NaN under
tilescope). The tutorials are read from TRITON_SRC or ../shared/third_party/triton-3.6 (never copied here).
"""
from __future__ import annotations

import importlib.util
import os
import re

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
_spec = importlib.util.spec_from_file_location("tilescope_bench_tutorials", os.path.join(ROOT, "bench", "tutorials.py"))
tutorials = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tutorials)


def _directory():
    try:
        return tutorials.tutorials_dir(None)
    except SystemExit as e:
        pytest.skip(f"Triton's tutorials are not on this machine: {e}")


@pytest.mark.parametrize("rid, table", [("01", "vector-add-performance:"), ("02", "softmax-performance:"),
                                        ("04", None), ("08", "group-gemm-performance:")])
def test_tutorial_unmodified(rid, table):
    if rid == "04" and importlib.util.find_spec("tabulate") is None:
        pytest.skip("tutorial 04 prints its results with tabulate, which is not installed (requirements.txt)")
    r = tutorials.run_one(rid, _directory(), timeout=300)
    out = r["output_tail"]
    assert r["status"] == 0, out
    assert r["findings"] == 0, out
    assert r["own_checks"] is not False, (r["checked"], out)
    assert r["passed"]
    assert r["launches"] >= 1
    if table:
        assert table in out and "NaN" in out  # the benchmark section finished
    if rid == "01":
        assert "The maximum difference between torch and triton is 0.0" in out
    if rid == "04":
        check_dropout_tables(out)
    if rid == "08":
        assert r["launches"] >= 2  # the pointer-array kernel and the TMA one, each checked by its asserts


def _rows(out: str) -> dict[str, list[list[float]]]:
    """Tutorial 04's tabulate rows: label -> the list of its rows' numbers (a label may repeat)."""
    rows: dict[str, list[list[float]]] = {}
    for line in out.splitlines():
        m = re.match(r"(input|keep mask|output(?: \(seed = \d+\))?)\s+(-?[0-9].*)$", line)
        if m:
            rows.setdefault(m.group(1), []).append([float(v) for v in m.group(2).split()])
    return rows


def check_dropout_tables(out: str) -> None:
    rows = _rows(out)
    assert len(rows.get("input", [])) == 2 and len(rows["output (seed = 123)"]) == 2, out
    # first table: dropout with an explicit mask, p = 0.5
    x, keep, y = rows["input"][0], rows["keep mask"][0], rows["output"][0]
    assert len(x) == len(keep) == len(y) == 10
    for xi, ki, yi in zip(x, keep, y):
        assert yi == pytest.approx(2 * xi if ki else 0.0, rel=1e-4, abs=1e-5), (xi, ki, yi)
    # second table: seeded dropout, p = 0.5; the same seed gives the same output, each kept value doubled
    x = rows["input"][1]
    a, b = rows["output (seed = 123)"]
    c = rows["output (seed = 512)"][0]
    assert a == b
    assert a != c  # another seed, another mask (2^-10 chance of equality for 10 elements)
    for out_row in (a, c):
        for xi, yi in zip(x, out_row):
            assert yi == 0.0 or yi == pytest.approx(2 * xi, rel=1e-4, abs=1e-5), (xi, yi)
    assert 0 < sum(1 for v in a if v != 0) < 10
