"""Memory bounds of the engine and the sanitizer (issue 8, items 4, 5 and 13).

- Value storage is reused by liveness: a long chain of tile ops takes a few tiles per worker, not one
  per op (it took 1000 MiB for the chain below, which now runs under a 768 MiB address-space limit).
- A launch whose program frames do not fit the memory limit (`--max-memory`, `TILESCOPE_MAX_MEMORY`)
  fails at once with a message that says how much it needs and how to raise the limit.
- Findings of launches on buffers of other sizes are not merged; every launch site is listed.
"""
from __future__ import annotations

import json
import resource

import numpy as np
import pytest

from robust_support import KERNELS, PYTHON, clean_env, run


def chain_ttir(n: int, k: int) -> str:
    """x + 1 + 1 + ... (k additions) on tiles of n f32 elements, into out (tests/cpp/exec/plan_test.cpp)."""
    t = f"""module {{
  tt.func public @chain(%x: !tt.ptr<f32>, %out: !tt.ptr<f32>) attributes {{noinline = false}} {{
    %r = tt.make_range {{end = {n} : i32, start = 0 : i32}} : tensor<{n}xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<{n}x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %r : tensor<{n}x!tt.ptr<f32>>, tensor<{n}xi32>
    %os = tt.splat %out : !tt.ptr<f32> -> tensor<{n}x!tt.ptr<f32>>
    %op = tt.addptr %os, %r : tensor<{n}x!tt.ptr<f32>>, tensor<{n}xi32>
    %one = arith.constant dense<1.000000e+00> : tensor<{n}xf32>
    %v0 = tt.load %xp : tensor<{n}x!tt.ptr<f32>>
"""
    t += "".join(f"    %v{i} = arith.addf %v{i - 1}, %one : tensor<{n}xf32>\n" for i in range(1, k + 1))
    return t + f"    tt.store %op, %v{k} : tensor<{n}x!tt.ptr<f32>>\n    tt.return\n  }}\n}}\n"


def _limit_address_space(limit: int):
    def apply():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return apply


def test_a_long_chain_runs_in_a_few_tiles_of_memory(tmp_path):
    # 1000 additions on 2^18-element (1 MiB) tiles: one slot per value needed 1000 MiB per worker.
    n = 1 << 18
    (tmp_path / "chain.ttir").write_text(chain_ttir(n, 1000))
    p = run(["run", "chain.ttir", "--threads", "1", "--arg", f"x=f32[{n}]:arange", "--arg", f"out=f32[{n}]:zeros",
             "--save", "out=out.npy"], tmp_path, preexec_fn=_limit_address_space(768 << 20))
    assert p.returncode == 0, p.stderr
    out = np.load(tmp_path / "out.npy")
    assert np.array_equal(out, np.arange(n, dtype=np.float32) + 1000)


def test_a_launch_past_max_memory_is_a_clear_error(tmp_path):
    n = 1 << 18
    (tmp_path / "chain.ttir").write_text(chain_ttir(n, 3))
    # --no-races: both programs store all of `out` (a real data race, not what this tests).
    args = ["run", "chain.ttir", "--no-races", "--threads", "2", "--grid", "2", "--arg", f"x=f32[{n}]:ones",
            "--arg", f"out=f32[{n}]:zeros", "--save", "out=out.npy"]
    p = run(args + ["--max-memory", "1M"], tmp_path)
    assert p.returncode == 2, p.stderr
    for needle in ("this launch needs at least", "per program frame x 2 worker threads",
                   "more than the memory limit of 1.0 MiB", "raise the limit with --max-memory SIZE"):
        assert needle in p.stderr, p.stderr
    assert not (tmp_path / "out.npy").exists()
    p = run(args + ["--max-memory", "256MiB"], tmp_path)
    assert p.returncode == 0, p.stderr
    assert np.array_equal(np.load(tmp_path / "out.npy"), np.full(n, 4, np.float32))


@pytest.mark.parametrize("value", ["lots", "0", "-5", "12Q"])
def test_a_bad_max_memory_is_a_usage_error(tmp_path, value):
    (tmp_path / "chain.ttir").write_text(chain_ttir(16, 1))
    p = run(["run", "chain.ttir", "--arg", "x=f32[16]:ones", "--arg", "out=f32[16]:zeros", "--max-memory", value],
            tmp_path)
    assert p.returncode == 2 and "--max-memory" in p.stderr, p.stderr


def test_sanitize_gives_max_memory_to_the_program(tmp_path):
    p = run(["sanitize", "--max-memory", "3M", "--", "sh", "-c", 'echo "limit=$TILESCOPE_MAX_MEMORY"'], tmp_path)
    assert p.returncode == 0, p.stderr
    assert "limit=3145728" in p.stdout


def test_python_programs_get_the_limit_and_merged_findings_keep_apart(tmp_path):
    """One Python program under `tilescope sanitize`: a launch past the limit raises LaunchError with the
    message; overrun_kernel (no mask on its load, BLOCK 64) runs from two lines on 60-element arrays
    (offsets 60..63 outside) and from a third on an 8-element one (offsets 8..63): two findings, the
    first with both launch sites."""
    prog = tmp_path / "prog.py"
    prog.write_text(KERNELS + '''
import tilescope
big = np.ones(1 << 16, np.float32)
try:
    add_kernel[(1,)](big, big, np.zeros_like(big), big.size, BLOCK=1 << 16)
    print("NO-ERROR")
except tilescope.LaunchError as e:
    print("LAUNCH-ERROR", e)
overrun_kernel[(1,)](np.ones(60, np.float32), np.zeros(60, np.float32), 60, BLOCK=64)  # SITE-A
overrun_kernel[(1,)](np.ones(60, np.float32), np.zeros(60, np.float32), 60, BLOCK=64)  # SITE-B
overrun_kernel[(1,)](np.ones(8, np.float32), np.zeros(8, np.float32), 8, BLOCK=64)  # SITE-C
''')
    lines = prog.read_text().splitlines()
    site = {s: f"prog.py:{next(i + 1 for i, t in enumerate(lines) if t.endswith(s))} in <module>"
            for s in ("SITE-A", "SITE-B", "SITE-C")}
    p = run(["sanitize", "--max-memory", "1M", "--color", "never", "--json", "f.json", "--", PYTHON, str(prog)],
            tmp_path, env=clean_env(tmp_path), timeout=600)
    assert "LAUNCH-ERROR" in p.stdout, (p.stdout, p.stderr)
    assert "this launch needs at least" in p.stdout and "more than the memory limit of 1.0 MiB" in p.stdout, p.stdout
    found = json.loads((tmp_path / "f.json").read_text())
    loads = sorted((f for f in found if f["kind"] == "out-of-bounds-load"), key=lambda f: f["buffer"]["numel"])
    assert [f["buffer"]["shape"] for f in loads] == [[8], [60]], found
    small, large = loads
    assert (small["offsets"]["min"], small["offsets"]["max"]) == (8, 63)
    assert "element offsets 8..63" in small["summary"]
    assert small["launches"]["count"] == 1 and small["launch_stack"][-1].endswith(site["SITE-C"])
    assert (large["offsets"]["min"], large["offsets"]["max"]) == (60, 63)
    assert "element offsets 60..63" in large["summary"] and "over 2 launches" in large["summary"]
    assert large["launches"]["count"] == 2
    assert [s[-1].split("/")[-1] for s in large["launches"]["stacks"]] == [site["SITE-A"], site["SITE-B"]]
    assert large["programs"] == {"count": 2, "first": [[0, 0, 0]], "last": [0, 0, 0]}
    assert "launched from 2 places (2 launches)" in p.stderr, p.stderr
