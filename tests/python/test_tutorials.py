"""Triton's tutorials 01 (vector add) and 02 (fused softmax), unmodified, under `tilescope sanitize`: the
fast subset of `make test-tutorials` (bench/tutorials.py; results of all of them in bench/TUTORIALS.md).

Each must exit 0 with no findings and pass its own check: 01 prints the largest difference between
torch's and Triton's sums (it must be 0), 02 asserts torch.allclose against torch.softmax. Both then
run their benchmark section, which must finish and print its table (times are NaN under tilescope).
The tutorials are read from TRITON_SRC or ../shared/third_party/triton-3.6 (never copied here).
"""
from __future__ import annotations

import importlib.util
import os

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


@pytest.mark.parametrize("rid, table", [("01", "vector-add-performance:"), ("02", "softmax-performance:")])
def test_tutorial_unmodified(rid, table):
    r = tutorials.run_one(rid, _directory(), timeout=300)
    out = r["output_tail"]
    assert r["status"] == 0, out
    assert r["findings"] == 0, out
    assert r["own_checks"] is not False, (r["checked"], out)
    assert r["passed"]
    assert r["launches"] >= 1
    assert table in out and "NaN" in out  # the benchmark section finished
    if rid == "01":
        assert "The maximum difference between torch and triton is 0.0" in out
