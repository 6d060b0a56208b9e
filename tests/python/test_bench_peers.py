"""Smoke test of `make bench-peers` (bench/peers.py): the whole suite at tiny sizes, one run per tool.

One subprocess runs `bench/peers.py --quick --reps 1` (each measurement in its own forked child, as in the
benchmark); the tests read its JSON:
- every case ran under tilescope and the interpreter, and tilescope's outputs equal the interpreter's;
- tilescope and triton-viz both report the planted out-of-bounds read of `gemm_oob_kernel` at its line, and
  the one of `gemm_shift_oob_kernel` (triton-viz's own planted bug, at the sizes of its benchmark);
- each tool's one-time set-up of a process (imports, first launch of a tiny kernel) is measured;
- tilescope reports nothing on the correct kernels;
- what triton-viz 3.0 does instead of a result is pinned down: it cannot run block pointers
  (NotImplementedError "MakeBlockPtr is not supported yet."), and it does not compute outputs (its
  sanitizer evaluates the kernel symbolically and never stores), so its gemm output stays zero.
Skipped when triton-viz or Liger-Kernel is not installed (`make bench-peers` installs triton-viz).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PEERS = os.path.join(ROOT, "bench", "peers.py")

pytest.importorskip("triton_viz", reason="triton-viz not installed (make bench-peers installs it)")
pytest.importorskip("liger_kernel", reason="liger-kernel not installed")


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    out = tmp_path_factory.mktemp("peers") / "quick.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TILESCOPE_", "TRITON_INTERPRET"))}
    p = subprocess.run([sys.executable, PEERS, "--quick", "--reps", "1", "--no-results", "--json", str(out)],
                       capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    with open(out) as f:
        res = json.load(f)
    return {row["kernel"]: row for row in res["rows"]}


def planted_line() -> int:
    """The line of the `tl.load(` call whose mask carries the planted bug (both tools report the line
    where the call starts)."""
    with open(os.path.join(ROOT, "bench", "peers_kernels.py")) as f:
        lines = f.read().splitlines()
    marker = next(i for i, line in enumerate(lines) if "# planted: <= M" in line)
    return next(i + 1 for i in range(marker, -1, -1) if "tl.load(" in lines[i])


VIZ = "(triton-viz's sizes)"
KERNELS = ["gemm", "gemm_oob", f"gemm_oob {VIZ}", "indirect_load", "nested_loops", "block_ptr_advance", "layer_norm", "swiglu",
           "jsd (Liger)", "cross_entropy (Liger)", "fused_linear_jsd (Liger)",
           # triton-viz's own benchmark suite (benchmarks/bench_sanitizer.py), its kernels at tiny sizes here
           f"indirect_load {VIZ}", f"nested_loop {VIZ}", f"block_ptr_loop {VIZ}", f"liger_jsd {VIZ}",
           f"layer_norm, FlagGems' kernels {VIZ}", f"swiglu {VIZ}", f"cross_entropy (Liger) {VIZ}",
           f"fused_linear_jsd {VIZ}"]


def test_every_case_is_there(result):
    assert sorted(result) == sorted(KERNELS)


@pytest.mark.parametrize("kernel", KERNELS)
def test_tilescope_and_interpreter_ran_and_agree(result, kernel):
    t = result[kernel]["tools"]
    for tool in ("tilescope", "interpreter"):
        assert "error" not in t[tool], t[tool]["error"]
        assert t[tool]["n"] == 1 and t[tool]["median"] > 0 and t[tool]["warm"] > 0
    assert t["tilescope"]["outputs_match"] is True


@pytest.mark.parametrize("kernel", [k for k in KERNELS if not k.startswith("gemm_oob")])
def test_tilescope_is_silent_on_correct_kernels(result, kernel):
    assert result[kernel]["tools"]["tilescope"]["findings"] == []


def test_both_sanitizers_find_the_planted_oob(result):
    row = result["gemm_oob"]
    assert row["planted"]
    where = f"peers_kernels.py:{planted_line()}"
    assert row["tools"]["tilescope"]["findings"] == [f"out-of-bounds-load at {where}"]
    viz = row["tools"]["triton-viz"]["findings"]
    assert viz and all(f == f"out-of-bounds load at {where}" for f in viz), viz
    assert row["tools"]["interpreter"]["findings"] == []  # no checks: it reads the padding silently


@pytest.mark.parametrize("kernel", ["block_ptr_advance", f"block_ptr_loop {VIZ}"])
def test_triton_viz_cannot_run_block_pointers(result, kernel):
    viz = result[kernel]["tools"]["triton-viz"]
    assert "median" not in viz
    assert viz["error"] == "NotImplementedError: MakeBlockPtr is not supported yet."


def test_bfloat16_outputs_are_compared_with_torch_not_the_interpreter(result):
    # Liger's JSD in bfloat16 (triton-viz's liger_jsd benchmark): the reference is computed with torch in
    # float64; tilescope's outputs equal it (to a bfloat16 ulp), the interpreter's do not (it truncates
    # the bfloat16 stores and misreads the bfloat16 scalar that element_mul_kernel loads).
    row = result[f"liger_jsd {VIZ}"]
    assert row["reference"] == "torch"
    assert row["tools"]["tilescope"]["outputs_match"] is True
    assert row["tools"]["interpreter"]["outputs_match"] is False


def test_outputs_of_a_16_bit_dtype_are_compared_to_one_unit_in_the_last_place():
    import importlib.util

    import numpy as np

    spec = importlib.util.spec_from_file_location("peers", PEERS)
    peers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peers)
    ref = {"o": np.array([1.0, 0.5, 3.0], dtype=np.float32)}
    one_ulp = {"o": ref["o"] * (1 + 2.0 ** -7)}  # bfloat16 keeps 8 significant bits: one ulp at 1.0 is 2**-7
    two_ulp = {"o": ref["o"] * (1 + 2.0 ** -6)}
    assert peers._same(one_ulp, ref, {"o": "bfloat16"})
    assert not peers._same(two_ulp, ref, {"o": "bfloat16"})
    assert not peers._same(one_ulp, ref, {"o": "float32"})  # float32 outputs keep the 1e-3 tolerance
    assert not peers._same(one_ulp, ref)


def test_triton_viz_does_not_compute_outputs(result):
    # Its sanitizer runs the kernel on symbolic values; the output buffer C (zeros) is never written,
    # so it differs from the interpreter's product.
    viz = result["gemm"]["tools"]["triton-viz"]
    assert viz["findings"] == []
    assert viz["outputs_match"] is False


@pytest.mark.parametrize("kernel", KERNELS)
def test_a_second_run_of_the_program_reads_the_ttir_from_the_disk_cache(result, kernel):
    # The "first, cache warm" column: each of those runs skipped Triton's front end (only the cache key
    # and the read are left of it), so it measures what a second run of the same program waits for.
    ts = result[kernel]["tools"]["tilescope"]
    assert ts["cached_runs"] >= 1
    assert ts.get("cached_n") == ts["cached_runs"], "a run with the disk cache filled ran Triton's front end"


def test_both_sanitizers_find_the_planted_oob_of_triton_viz_s_own_gemm_benchmark(result):
    # gemm_shift_oob_kernel reads A one element too far (triton-viz's own planted bug): at a size that is
    # a multiple of the tiles only the last element of A's last row is past its end; both tools report
    # it, and tilescope's outputs (the out-of-bounds lane reads `other`, 0) equal the interpreter's, which
    # read the zero padding behind A.
    row = result["gemm_oob (triton-viz's sizes)"]
    for tool in ("tilescope", "triton-viz"):
        found = row["tools"][tool]["findings"]
        assert found and all("out-of-bounds" in f for f in found), (tool, found)
    assert row["tools"]["tilescope"]["outputs_match"] is True


def test_each_tool_s_one_time_set_up_is_measured(result):
    # The first kernel of a fresh process costs each tool its imports and set-up: timed apart from the
    # case (the warm-up launch) and reported next to the first launch.
    for row in result.values():
        for tool, info in row["tools"].items():
            if "median" in info:
                assert info["setup"] > 0, (row["kernel"], tool)
