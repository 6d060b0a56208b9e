"""Smoke test of bench/peer_suite.py: one small Liger-Kernel test file, unmodified, under tilescope and under
TRITON_INTERPRET=1 (the full run is `make test-peers`, results in bench/PEERS.md).

Needs liger-kernel and transformers installed (Liger's tests import it) and the liger-kernel sdist, which the
script takes from .peer/ or downloads from PyPI; skipped when any of these is missing.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SCRIPT = os.path.join(ROOT, "bench", "peer_suite.py")

for mod in ("liger_kernel", "transformers", "tilescope._native"):
    if importlib.util.find_spec(mod.split(".")[0]) is None:
        pytest.skip(f"{mod} is not installed", allow_module_level=True)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("peers") / "results.json"
    fetch = subprocess.run([sys.executable, SCRIPT, "--fetch-only"], capture_output=True, text=True, timeout=600)
    if fetch.returncode != 0:
        pytest.skip(f"cannot obtain Liger-Kernel's tests: {fetch.stdout}{fetch.stderr}")
    r = subprocess.run([sys.executable, SCRIPT, "--smoke", "--no-md", "--json", str(out), "--timeout", "300"],
                       capture_output=True, text=True, timeout=1500)
    assert out.exists(), f"peer_suite wrote no results:\n{r.stdout}\n{r.stderr}"
    with open(out) as f:
        return json.load(f), r


def passed(results: dict, mode: str) -> set[str]:
    return {k for run in results["results"][mode] for k, t in run["tests"].items() if t["outcome"] == "passed"}


def test_tilescope_passes_what_the_interpreter_passes(smoke):
    results, r = smoke
    ts, it = passed(results, "tilescope"), passed(results, "interpret")
    assert ts, f"no Liger test passed under tilescope:\n{r.stdout}"
    assert len(ts) >= len(it), (len(ts), len(it))
    assert it <= ts, f"passed under the interpreter only: {sorted(it - ts)}"
    assert r.returncode == 0, r.stdout


def test_every_test_ran_under_both(smoke):
    results, _ = smoke
    for mode in ("tilescope", "interpret"):
        (run,) = results["results"][mode]
        assert not run["collect_errors"], run["collect_errors"]
        assert run["tests"], f"{mode}: no test ran:\n{run['tail']}"
        assert not any(t["outcome"] == "crashed" for t in run["tests"].values())
    assert set(results["results"]["tilescope"][0]["tests"]) == set(results["results"]["interpret"][0]["tests"])


def test_no_sanitizer_findings_in_liger_kernels(smoke):
    results, _ = smoke
    (run,) = results["results"]["tilescope"]
    assert run["findings"] == [], run["findings"][:3]
