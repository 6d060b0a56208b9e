"""The cases of tests/gpu/sync_cases.py under tilescope's race detector and uninitialized-memory tracking,
against what they are.

Each case (the bugs of real reports and their correct forms) runs on the CPU through the front door with
every launch sanitized; the race findings of the case must be exactly what ``sync_cases.EXPECT`` says it
is (independent of tilescope: "race" -> data-race, "intra-program-race" -> intra-program-race, anything
else -> no race finding), its uninitialized-read findings exactly those of the cases that read never-written
memory, and a case with a race-free reference must reproduce it. EXPECT itself is checked against the H200
runs of the same cases (tests/gpu/data/sync_h200.json), which also show which races a GPU makes visible.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "gpu"))
import sync_cases  # noqa: E402

RUNNER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import torch, tilescope
tilescope.install()
import sync_cases
out = {}
for name, case in sync_cases.CASES.items():
    tilescope.clear_findings()
    got, ref = case("cpu")
    fs = tilescope.findings()
    out[name] = {"kinds": sorted({f["kind"] for f in fs}),
                 "lines": sorted({(f["kind"], f["line"], f["other"]["line"] if f.get("other") else 0) for f in fs}),
                 "matches": None if ref is None else bool(torch.equal(got.cpu().float(), ref.float()))}
print("@@" + json.dumps(out))
"""


def run_cases(threads: int) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TILESCOPE")}
    env["TILESCOPE_SANITIZE"] = "1"
    env["TILESCOPE_THREADS"] = str(threads)
    p = subprocess.run([sys.executable, "-c", RUNNER, os.path.join(ROOT, "tests", "gpu")], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=600)
    line = [x for x in p.stdout.splitlines() if x.startswith("@@")]
    assert p.returncode == 0 and line, p.stdout[-3000:] + p.stderr[-3000:]
    return json.loads(line[0][2:])


@pytest.fixture(scope="module")
def results():
    return run_cases(4)


@pytest.fixture(scope="module")
def results_one_thread():
    return run_cases(1)


RACE_KINDS = {"data-race", "intra-program-race"}
WANT = {"race": {"data-race"}, "intra-program-race": {"intra-program-race"}}


@pytest.mark.parametrize("name", sorted(sync_cases.CASES))
def test_case_race_findings(results, name):
    r = results[name]
    want = WANT.get(sync_cases.EXPECT[name], set())
    got = set(r["kinds"]) & RACE_KINDS
    if name == "scatter_add_race":  # duplicate indices inside one program too: both kinds
        want = want | {"intra-program-race"}
    assert got == want, r
    if sync_cases.EXPECT[name] == "" and r["matches"] is not None:  # correct cases compute the reference
        assert r["matches"], r


@pytest.mark.parametrize("name", sorted(sync_cases.CASES))
def test_case_uninitialized_read_findings(results, name):
    # Reads of never-written memory: exactly the cases that are that bug (an atomic_add into torch.empty, a
    # tail no program wrote read by the next kernel); the correct forms (the buffer zeroed first, every
    # element written, partials from torch.empty that every program writes before the last reads) none.
    r = results[name]
    want = {"uninitialized-read"} if sync_cases.EXPECT[name] == "uninitialized-read" else set()
    assert set(r["kinds"]) & {"uninitialized-read"} == want, r


def test_expectations_agree_with_the_gpu():
    # EXPECT is checked against what the H200 did with the same kernels: a case whose results were wrong or
    # varied over the runs is a bug in EXPECT, and every correct case gave the reference every time.
    with open(os.path.join(ROOT, "tests", "gpu", "data", "sync_h200.json")) as f:
        truth = json.load(f)
    assert set(truth["cases"]) == set(sync_cases.CASES), "re-record tests/gpu/data/sync_h200.json"
    for name, r in truth["cases"].items():
        wrong = r["distinct_results"] > 1 or (r["matches_reference"] is not None and r["matches_reference"] < r["runs"])
        if wrong:
            assert sync_cases.EXPECT[name], name
        if not sync_cases.EXPECT[name]:
            assert r["matches_reference"] == r["runs"] and r["distinct_results"] == 1, name


def test_same_findings_with_one_thread_and_four(results, results_one_thread):
    # Happens-before is logical: the schedule (one worker running programs in order, or four interleaving
    # them) changes neither the kinds nor the pairs of sites.
    for name in sync_cases.CASES:
        assert results[name]["lines"] == results_one_thread[name]["lines"], name
