"""The Python front door: @tilescope.trace, `tilescope sanitize -- python/pytest ...`, launch capture.

Runs against the installed package (`make setup` installs it). Expected outputs come from torch /
numpy; expected findings (kind and line) from the kernels' source below, found by marker comments.
"""
from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import tilescope

THIS = os.path.abspath(__file__)


def line_of(marker: str, path: str = THIS) -> int:
    """1-based line of the only line of `path` that contains `marker`."""
    with open(path) as f:
        hits = [i + 1 for i, line in enumerate(f) if marker in line and "line_of(" not in line]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


# ---------------------------------------------------------------------------------------------
# Kernels (traced: their launches run on tilescope's engine)


@tilescope.trace("sanitizer")
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@tilescope.trace("sanitizer")
@triton.jit
def add_nomask_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)  # MARK-nomask-load
    tl.store(out_ptr + offs, x * 2, mask=offs < n)


@tilescope.trace("sanitizer")
@triton.jit
def copy2d_kernel(src_ptr, dst_ptr, rows, cols, s_row, s_col, d_row, d_col, BR: tl.constexpr, BC: tl.constexpr):
    r = tl.program_id(0) * BR + tl.arange(0, BR)[:, None]
    c = tl.arange(0, BC)[None, :]
    m = (r < rows) & (c < cols)
    v = tl.load(src_ptr + r * s_row + c * s_col, mask=m)  # MARK-copy2d-load
    tl.store(dst_ptr + r * d_row + c * d_col, v, mask=m)


@tilescope.trace("sanitizer")
@triton.jit
def assert_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.device_assert(x >= 0, "x must be non-negative")  # MARK-assert


@tilescope.trace("sanitizer")
@triton.jit
def print_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_print("v", x)


_autotune_calls = {"pre": 0, "configs": set()}


def _config_pre_hook(nargs):
    _autotune_calls["pre"] += 1


@tilescope.trace("sanitizer")
@triton.autotune(
    configs=[triton.Config({"BLOCK": 64}, pre_hook=_config_pre_hook),
             triton.Config({"BLOCK": 128}, pre_hook=_config_pre_hook)],
    key=["n"], reset_to_zero=["out_ptr"])
@triton.heuristics(values={"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def scale_kernel(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        x = tl.load(x_ptr + offs)
        tl.atomic_add(out_ptr + offs, x * alpha)
    else:
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.atomic_add(out_ptr + offs, x * alpha, mask=offs < n)


# Triton's autotuner skips a configuration that fails to compile (Autotuner._bench: a
# CompileTimeAssertionFailure counts as an infinite time); the first one here does.
@tilescope.trace("sanitizer")
@triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 64}),
                          triton.Config({"BLOCK": 128})], key=["n"])
@triton.jit
def double_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK >= 64, "BLOCK must be at least 64")
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


@tilescope.trace("sanitizer")
@triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})], key=["n"])
@triton.jit
def never_compiles_kernel(x_ptr, n, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK >= 64, "BLOCK must be at least 64")
    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0, mask=tl.arange(0, BLOCK) < n)


@triton.jit
def untraced_kernel(x_ptr):
    tl.store(x_ptr, 1.0)


@tilescope.trace("sanitizer")
@triton.jit
def bad_compile_kernel(x_ptr):
    offs = tl.arange(0, 3)  # not a power of two: Triton refuses it
    tl.store(x_ptr + offs, 1.0)


@pytest.fixture(autouse=True)
def fresh():
    tilescope.clear_findings()
    yield
    tilescope.clear_findings()


def kinds_lines(findings):
    return sorted((f["kind"], f["line"]) for f in findings)


# ---------------------------------------------------------------------------------------------
# The decorator


def test_decorator_correct_kernel_outputs_and_no_findings():
    x, y = torch.randn(1000), torch.randn(1000)
    out = torch.empty(1000)
    add_kernel[(triton.cdiv(1000, 128),)](x, y, out, 1000, BLOCK=128)
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)
    assert tilescope.findings() == []


def test_decorator_grid_lambda_gets_meta():
    x, y = torch.randn(300), torch.randn(300)
    out = torch.zeros(300)
    seen = {}

    def grid(meta):
        seen.update(meta)
        return (triton.cdiv(300, meta["BLOCK"]),)

    add_kernel[grid](x, y, out, 300, BLOCK=64)
    assert seen["BLOCK"] == 64 and seen["n"] == 300
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)
    assert tilescope.findings() == []


def test_missing_mask_is_reported_at_the_load_line():
    x = torch.randn(100)
    out = torch.zeros(100)
    add_nomask_kernel[(1,)](x, out, 100, BLOCK=128)
    torch.testing.assert_close(out, x * 2)  # the program continues with the real outputs
    f = tilescope.findings()
    assert kinds_lines(f) == [("out-of-bounds-load", line_of("MARK-nomask-load"))]
    assert f[0]["buffer"]["name"] == "x_ptr"
    assert f[0]["buffer"]["shape"] == [100]
    assert f[0]["offsets"]["min"] == 100 and f[0]["offsets"]["max"] == 127
    assert f[0]["lanes"]["count"] == 28
    # the launch stack names this test (user frames), not Triton's or tilescope's
    assert any(s.startswith(f"{THIS}:") and "test_missing_mask" in s for s in f[0]["launch_stack"])
    assert not any("site-packages/triton" in s or "/tilescope/_" in s for s in f[0]["launch_stack"])


def test_integer_specialization_one_and_large_values():
    # n == 1 becomes a constexpr (it vanishes from the TTIR signature); a multiple of 16 gets the
    # divisibility attribute; both must still bind and run correctly.
    for n in (1, 16, 17, 4096):
        x, y = torch.randn(n), torch.randn(n)
        out = torch.zeros(n)
        add_kernel[(triton.cdiv(n, 64),)](x, y, out, n, BLOCK=64)
        torch.testing.assert_close(out, x + y, rtol=0, atol=0)
    assert tilescope.findings() == []
    st = add_kernel._tilescope_state
    ttirs = [k.asm["ttir"] for k in st.kernels.values()]
    assert any("%n: i32" not in t for t in ttirs)  # the n == 1 specialization
    assert any("%n: i32 {tt.divisibility = 16" in t for t in ttirs)


def test_autotune_runs_one_config_with_hooks_and_heuristics():
    _autotune_calls["pre"] = 0
    n = 1000
    x = torch.randn(n)
    out = torch.full((n,), 5.0)  # reset_to_zero clears it before the launch, as after tuning
    scale_kernel[lambda META: (triton.cdiv(n, META["BLOCK"]),)](x, out, n, 2.0)
    torch.testing.assert_close(out, x * 2.0)
    # the chosen config's pre_hook ran twice: before its kernel was compiled (as in Autotuner._bench) and before
    # the launch; no benchmarking (Triton's autotuner also runs it before every timed run)
    assert _autotune_calls["pre"] == 2
    assert tilescope.findings() == []
    # EVEN (heuristics) is True for n = 1024 with either block: the unmasked branch, still in bounds
    x = torch.randn(1024)
    out = torch.zeros(1024)
    scale_kernel[lambda META: (triton.cdiv(1024, META["BLOCK"]),)](x, out, 1024, 0.5)
    torch.testing.assert_close(out, x * 0.5)
    assert tilescope.findings() == []


def test_noncontiguous_views_correct_and_out_of_view():
    base = torch.randn(16, 12)
    src = base[:, ::3]  # 16 x 4, strides (12, 3): the buffer is the extent the view reaches
    dst = torch.zeros(4, 16).t()  # 16 x 4 transposed view, strides (1, 16)
    copy2d_kernel[(2,)](src, dst, 16, 4, src.stride(0), src.stride(1), dst.stride(0), dst.stride(1), BR=8, BC=4)
    torch.testing.assert_close(dst, src, rtol=0, atol=0)
    assert tilescope.findings() == []
    # a wrong column stride (4 instead of 3) reads past the last element the view can reach
    out = torch.zeros(16, 4)
    copy2d_kernel[(2,)](src, out, 16, 4, src.stride(0), 4, 4, 1, BR=8, BC=4)
    f = tilescope.findings()
    assert kinds_lines(f) == [("out-of-bounds-load", line_of("MARK-copy2d-load"))]
    assert f[0]["buffer"]["shape"] == [16, 4] and f[0]["buffer"]["strides"] == [12, 3]
    assert f[0]["buffer"]["numel"] == 15 * 12 + 3 * 3 + 1


def test_numpy_arrays_zero_copy():
    a = np.arange(500, dtype=np.float32)
    b = np.ones(500, dtype=np.float32)
    out = np.zeros(500, dtype=np.float32)
    add_kernel[(4,)](a, b, out, 500, BLOCK=128)
    np.testing.assert_array_equal(out, a + 1)
    # a strided numpy view (strides in bytes (24, 8) -> elements (6, 2))
    src = np.arange(64 * 6, dtype=np.float32).reshape(64, 6)[:, ::2]
    dst = np.zeros((64, 3), dtype=np.float32)
    copy2d_kernel[(8,)](src, dst, 64, 3, 6, 2, 3, 1, BR=8, BC=4)
    np.testing.assert_array_equal(dst, src)
    assert tilescope.findings() == []


def test_device_assert_is_kept_and_reported():
    x = torch.tensor([1.0, -2.0, 3.0, -4.0])
    assert_kernel[(1,)](x, 4, BLOCK=4)
    f = tilescope.findings()
    assert kinds_lines(f) == [("assert-failed", line_of("MARK-assert"))]
    assert "non-negative" in f[0]["message"]


def test_device_print_goes_through_sys_stdout(capsys):
    # capsys replaces sys.stdout only: text written straight to file descriptor 1 would not be seen.
    x = torch.tensor([7, -1, 30, 4], dtype=torch.int32)
    print_kernel[(2,)](x, BLOCK=4)
    out = capsys.readouterr().out
    # Triton's device_print format: `pid (x, y, z) idx (i) <prefix><value>`, prefix " v: ".
    expected = [f"pid ({p}, 0, 0) idx ({i}) v: {v}" for p in range(2) for i, v in enumerate([7, -1, 30, 4])]
    assert sorted(out.splitlines()) == sorted(expected)


def test_untraced_kernel_is_left_to_triton():
    # without a GPU, Triton itself cannot launch: the error must be Triton's, not tilescope's
    with pytest.raises(Exception) as e:
        untraced_kernel[(1,)](torch.zeros(1))
    assert "tilescope" not in str(e.value).lower()


def test_kernel_that_cannot_compile_raises_a_clear_error():
    with pytest.raises(triton.compiler.errors.CompilationError) as e:
        bad_compile_kernel[(1,)](torch.zeros(4))
    assert "power of 2" in str(e.value) or "arange" in str(e.value)
    # the process goes on: the next launch works
    x, y = torch.randn(10), torch.randn(10)
    out = torch.zeros(10)
    add_kernel[(1,)](x, y, out, 10, BLOCK=16)
    torch.testing.assert_close(out, x + y)


def test_unsupported_ttir_is_a_located_python_exception():
    from tilescope import _native

    with pytest.raises(_native.TilescopeError) as e:
        _native.compile("module {\n  tt.func public @k() {\n    %0 = tt.frobnicate : i32\n    tt.return\n  }\n}\n",
                        "bad.ttir")
    assert "bad.ttir:3" in str(e.value)


def test_bad_launch_arguments_raise():
    with pytest.raises(Exception) as e:
        add_kernel[(1,)](torch.zeros(4), "not a tensor", torch.zeros(4), 4, BLOCK=4)
    assert "y_ptr" in str(e.value) or "specialize" in str(e.value)


# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("grid,message", [
    ((4194304, 2097152, 2097152), "grid dimension y is 2097152: CUDA allows 0 to 65535"),  # product past 2^63
    ((2147483647, 2147483647, 4), "grid dimension y is 2147483647: CUDA allows 0 to 65535"),  # product 0 mod 2^64
    ((2**31,), "grid dimension x is 2147483648: CUDA allows 0 to 2147483647"),
    ((1, 1, 65536), "grid dimension z is 65536: CUDA allows 0 to 65535"),
    ((-1,), "grid dimension x is -1: CUDA allows 0 to 2147483647"),
    ((2**64,), "grid dimension x is 18446744073709551616, past CUDA's limits"),  # past the engine's int64
])
def test_grids_past_cuda_limits_raise_launch_errors(grid, message):
    x = torch.zeros(4)
    with pytest.raises(tilescope.LaunchError, match=message):
        add_kernel[grid](x, x, x, 4, BLOCK=4)
    assert not x.any()


def test_autotune_skips_configurations_that_do_not_compile(capsys):
    n = 1000
    x = torch.randn(n)
    out = torch.zeros(n)
    double_kernel[lambda META: (triton.cdiv(n, META["BLOCK"]),)](x, out, n)
    torch.testing.assert_close(out, x * 2)
    assert double_kernel.best_config.kwargs == {"BLOCK": 64}  # the first that compiles, as Triton picks
    err = capsys.readouterr().err
    assert "autotune of kernel 'double_kernel': skipped the configuration {BLOCK: 16," in err, err
    assert "CompileTimeAssertionFailure: BLOCK must be at least 64" in err, err
    assert "BLOCK: 64" not in err and "BLOCK: 128" not in err
    # When no configuration compiles, Triton launches the first and its error reaches the program.
    from triton.compiler.errors import CompileTimeAssertionFailure

    with pytest.raises(CompileTimeAssertionFailure, match="BLOCK must be at least 64"):
        never_compiles_kernel[(1,)](torch.zeros(4), 4)


# `tilescope sanitize -- ...` on unmodified programs

SCRIPT_HEADER = """
import sys, torch, triton, triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs)  # MARK-script-bug
    tl.store(out_ptr + offs, x + y, mask=mask)
"""


def write(tmp_path, name, body):
    p = tmp_path / name
    p.write_text(textwrap.dedent(SCRIPT_HEADER) + textwrap.dedent(body))
    return str(p)


def sanitize(args, cwd, env_extra=None, module=False):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TILESCOPE")}
    env.update(env_extra or {})
    exe = [sys.executable, "-m", "tilescope"]
    return subprocess.run(exe + ["sanitize", "--color", "never"] + args, cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_sanitize_python_script_correct(tmp_path):
    s = write(tmp_path, "ok.py", """
        x, y = torch.randn(1024), torch.randn(1024)
        out = torch.empty(1024)
        add_kernel[(8,)](x, y, out, 1024, BLOCK=128)
        assert torch.equal(out, x + y)
        print("OUTPUT-OK", sys.argv[1:])
    """)
    js = tmp_path / "f.json"
    p = sanitize(["--json", str(js), "--", sys.executable, s, "a1", "--flag"], tmp_path)
    assert p.returncode == 0, p.stderr
    assert "OUTPUT-OK ['a1', '--flag']" in p.stdout
    assert json.loads(js.read_text()) == []
    assert "no findings" in p.stderr


def test_sanitize_python_script_buggy(tmp_path):
    s = write(tmp_path, "bug.py", """
        x, y = torch.randn(1000), torch.randn(1000)
        out = torch.empty(1000)
        for _ in range(3):
            add_kernel[(8,)](x, y, out, 1000, BLOCK=128)
        assert torch.equal(out, x + y)
        print("CONTINUED")
    """)
    js, sarif = tmp_path / "f.json", tmp_path / "f.sarif"
    p = sanitize(["--json", str(js), "--sarif", str(sarif), "--", sys.executable, s], tmp_path)
    assert p.returncode == 1, p.stderr
    assert "CONTINUED" in p.stdout
    f = json.loads(js.read_text())
    bug_line = line_of("MARK-script-bug", s)
    assert kinds_lines(f) == [("out-of-bounds-load", bug_line)]  # three launches, one site
    assert f[0]["file"] == s and f[0]["buffer"]["name"] == "y_ptr"
    assert f[0]["programs"]["count"] == 3 and f[0]["lanes"]["count"] == 3 * 24
    assert f[0]["launch_stack"][-1].startswith(f"{s}:")
    assert f"{s}:{bug_line}" in p.stderr  # the text report
    log = json.loads(sarif.read_text())
    assert log["version"] == "2.1.0"
    res = log["runs"][0]["results"]
    assert len(res) == 1 and res[0]["ruleId"].endswith("out-of-bounds-load") or "out-of-bounds-load" in json.dumps(res)
    # --exit-code
    p = sanitize(["--exit-code", "7", "--", sys.executable, s], tmp_path)
    assert p.returncode == 7


def test_sanitize_passes_the_child_status_through(tmp_path):
    s = write(tmp_path, "st.py", """
        sys.exit(3)
    """)
    assert sanitize(["--", sys.executable, s], tmp_path).returncode == 3


def test_sanitize_abort_on_first(tmp_path):
    s = write(tmp_path, "ab.py", """
        x, y = torch.randn(1000), torch.randn(1000)
        out = torch.empty(1000)
        add_kernel[(8,)](x, y, out, 1000, BLOCK=128)
        print("NOT-REACHED")
    """)
    js = tmp_path / "f.json"
    p = sanitize(["--abort-on-first", "--json", str(js), "--", sys.executable, s], tmp_path)
    assert p.returncode == 1
    assert "NOT-REACHED" not in p.stdout
    assert [f["kind"] for f in json.loads(js.read_text())] == ["out-of-bounds-load"]


def test_sanitize_reports_races_and_no_races_turns_them_off(tmp_path):
    s = write(tmp_path, "race.py", """
        @triton.jit
        def same_out_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(out_ptr + offs, tl.load(x_ptr + tl.program_id(0) * BLOCK + offs))  # MARK-race

        x, out = torch.randn(64), torch.empty(16)
        same_out_kernel[(4,)](x, out, BLOCK=16)
        print("RAN")
    """)
    js = tmp_path / "f.json"
    p = sanitize(["--json", str(js), "--threads", "2", "--", sys.executable, s], tmp_path)
    assert p.returncode == 1 and "RAN" in p.stdout, p.stderr
    f = json.loads(js.read_text())
    line = line_of("MARK-race", s)
    assert kinds_lines(f) == [("data-race", line)]
    assert f[0]["race"] == "WAW" and f[0]["other"]["line"] == line and f[0]["buffer"]["name"] == "out_ptr"
    assert f[0]["offsets"]["min"] == 0 and f[0]["offsets"]["max"] == 15
    assert f[0]["programs"]["first"][0] == [0, 0, 0] and f[0]["hint"]
    assert "second access (WAW)" in p.stderr
    p = sanitize(["--no-races", "--json", str(js), "--", sys.executable, s], tmp_path)
    assert p.returncode == 0 and json.loads(js.read_text()) == [], p.stderr


def test_decorator_races_option(tmp_path):
    s = write(tmp_path, "trace_races.py", """
        import json, tilescope

        def make(**opts):
            @tilescope.trace("sanitizer", **opts)
            @triton.jit
            def same_out_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
                offs = tl.arange(0, BLOCK)
                tl.store(out_ptr + offs, tl.load(x_ptr + tl.program_id(0) * BLOCK + offs))
            return same_out_kernel

        x, out = torch.randn(64), torch.empty(16)
        make()[(4,)](x, out, BLOCK=16)
        print("ON", sorted({f["kind"] for f in tilescope.findings()}))
        tilescope.clear_findings()
        make(races=False)[(4,)](x, out, BLOCK=16)
        print("OFF", tilescope.findings())
        try:
            make(race=False)
        except TypeError as e:
            print("BAD", e)
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TILESCOPE")}
    p = subprocess.run([sys.executable, s], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert "ON ['data-race']" in p.stdout, p.stdout + p.stderr
    assert "OFF []" in p.stdout, p.stdout + p.stderr
    assert "BAD tilescope.trace: unknown option(s) race" in p.stdout, p.stdout + p.stderr


def test_sanitize_notes_skipped_autotune_configurations_in_its_report(tmp_path):
    s = write(tmp_path, "tuned.py", """
        @triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 128})], key=["n"])
        @triton.jit
        def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            tl.static_assert(BLOCK >= 64, "BLOCK must be at least 64")
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

        x = torch.randn(300)
        out = torch.zeros(300)
        copy_kernel[lambda META: (triton.cdiv(300, META["BLOCK"]),)](x, out, 300)
        assert torch.equal(out, x)
        print("TUNED-OK", copy_kernel.best_config.kwargs)
    """)
    p = sanitize(["--", sys.executable, s], tmp_path)
    assert p.returncode == 0, p.stderr
    assert "TUNED-OK {'BLOCK': 128}" in p.stdout, p.stdout + p.stderr
    note = ("tilescope: note: autotune of kernel 'copy_kernel': skipped the configuration {BLOCK: 16, num_warps: 4, "
            "num_ctas: 1, num_stages: 3, maxnreg: None}, which does not compile (CompileTimeAssertionFailure: "
            "BLOCK must be at least 64)")
    assert note in p.stderr, p.stderr
    # The note is part of the final report, before its summary line.
    assert p.stderr.index(note) < p.stderr.index("tilescope: no findings"), p.stderr


def test_sanitize_compile_error_is_a_python_exception(tmp_path):
    s = write(tmp_path, "ce.py", """
        @triton.jit
        def bad(x_ptr):
            tl.store(x_ptr + tl.arange(0, 3), 1.0)
        try:
            bad[(1,)](torch.zeros(4))
        except Exception as e:
            print("CAUGHT", type(e).__name__)
        x, y = torch.randn(64), torch.randn(64)
        out = torch.empty(64)
        add_kernel[(1,)](x, y, out, 64, BLOCK=64)
        print("STILL-RUNNING", torch.equal(out, x + y))
    """)
    p = sanitize(["--", sys.executable, s], tmp_path)
    assert p.returncode == 0, p.stderr
    assert "CAUGHT CompilationError" in p.stdout
    assert "STILL-RUNNING True" in p.stdout


def test_sanitize_pytest_suite(tmp_path):
    t = write(tmp_path, "test_tiny.py", """
        def test_ok():
            x, y = torch.randn(256), torch.randn(256)
            out = torch.empty(256)
            add_kernel[(2,)](x, y, out, 256, BLOCK=128)
            assert torch.equal(out, x + y)

        def test_tail():
            x, y = torch.randn(200), torch.randn(200)
            out = torch.empty(200)
            add_kernel[(2,)](x, y, out, 200, BLOCK=128)
            assert torch.equal(out, x + y)
    """)
    js = tmp_path / "f.json"
    p = sanitize(["--json", str(js), "--", sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", t],
                 tmp_path)
    assert "2 passed" in p.stdout, p.stdout + p.stderr
    assert p.returncode == 1
    f = json.loads(js.read_text())
    assert kinds_lines(f) == [("out-of-bounds-load", line_of("MARK-script-bug", t))]
    assert any("test_tail" in s for s in f[0]["launch_stack"])


def test_console_command_and_module_agree(tmp_path):
    # `tilescope` (console script) and `python -m tilescope` both reach the bundled executable
    env = {k: v for k, v in os.environ.items() if not k.startswith("TILESCOPE")}
    p = subprocess.run([sys.executable, "-m", "tilescope", "sanitize", "--help"], env=env, capture_output=True,
                       text=True)
    assert p.returncode == 0 and "--abort-on-first" in p.stdout
    import shutil

    exe = shutil.which("tilescope")
    if exe:
        p = subprocess.run([exe, "sanitize", "--help"], env=env, capture_output=True, text=True)
        assert p.returncode == 0 and "--exit-code" in p.stdout


def test_sanitize_merges_child_processes_and_takes_commands_without_dashes(tmp_path):
    child = write(tmp_path, "child.py", """
        x, y = torch.randn(100), torch.randn(100)
        out = torch.empty(100)
        add_kernel[(1,)](x, y, out, 100, BLOCK=128)
        print("CHILD-DONE")
    """)
    parent = write(tmp_path, "parent.py", f"""
        import subprocess
        x, y = torch.randn(128), torch.randn(128)
        out = torch.empty(128)
        add_kernel[(1,)](x, y, out, 128, BLOCK=128)   # clean
        subprocess.run([sys.executable, {child!r}], check=True)
    """)
    js = tmp_path / "f.json"
    p = sanitize(["--json", str(js), sys.executable, parent], tmp_path)  # no `--`
    assert "CHILD-DONE" in p.stdout, p.stderr
    assert p.returncode == 1
    f = json.loads(js.read_text())
    assert kinds_lines(f) == [("out-of-bounds-load", line_of("MARK-script-bug", child))]
    assert f[0]["file"] == child
    assert "2 process(es)" in p.stderr


def test_sanitize_usage_errors(tmp_path):
    assert sanitize(["--no-such-option", "--", sys.executable, "-c", "pass"], tmp_path).returncode == 2
    p = sanitize([], tmp_path)
    assert p.returncode == 2 and "no command" in p.stderr
    p = sanitize(["--", "/nonexistent/program"], tmp_path)
    assert p.returncode == 2 and "cannot run" in p.stderr


class FakeDeviceTensor:
    """Stands for a CUDA tensor (this machine has none): device memory is a separate CPU storage that
    only copies reach, so a zero-copy launch would leave it unchanged."""

    class _Device:
        type = "cuda"

    class _Storage:
        copies_back = 0

        def __init__(self, s):
            self.s = s

        def cpu(self):
            return self.s.clone()  # a device -> host copy

        def copy_(self, host):
            FakeDeviceTensor._Storage.copies_back += 1
            self.s.copy_(host)

    def __init__(self, t):
        self.t = t
        self.dtype = t.dtype
        self.shape = t.shape
        self.device = self._Device()

    def data_ptr(self):
        return self.t.data_ptr()  # only for Triton's alignment check; never dereferenced by tilescope

    def element_size(self):
        return self.t.element_size()

    def stride(self):
        return self.t.stride()

    def storage_offset(self):
        return self.t.storage_offset()

    def untyped_storage(self):
        return self._Storage(self.t.untyped_storage())


def test_device_tensors_are_copied_in_and_back():
    base_x, base_y = torch.randn(80), torch.randn(80)
    out_storage = torch.zeros(90)
    x, y = FakeDeviceTensor(base_x[10:]), FakeDeviceTensor(base_y[10:])  # views with a storage offset
    out = FakeDeviceTensor(out_storage[5:75])
    FakeDeviceTensor._Storage.copies_back = 0
    add_kernel[(1,)](x, y, out, 70, BLOCK=128)
    assert FakeDeviceTensor._Storage.copies_back == 3
    torch.testing.assert_close(out_storage[5:75], base_x[10:] + base_y[10:], rtol=0, atol=0)
    assert torch.all(out_storage[:5] == 0) and torch.all(out_storage[75:] == 0)
    assert tilescope.findings() == []


def test_ttir_disk_cache_is_reused_and_gives_the_same_results(tmp_path):
    # The first process compiles with Triton and writes the TTIR cache; the second reads it (and gets
    # the same outputs and the same finding); a changed kernel source is a new cache entry.
    cache = tmp_path / "cache"
    body = """
        x, y = torch.randn(1024), torch.randn(1024)
        out = torch.empty(1024)
        add_kernel[(1024 // 128,)](x, y, out, 1024, BLOCK=128)
        assert torch.equal(out, x + y)
        print("OUTPUT-OK")
    """
    s = write(tmp_path, "cached.py", body)
    env = {"TILESCOPE_CACHE_DIR": str(cache)}
    p1 = sanitize(["--", sys.executable, s], tmp_path, env)
    assert p1.returncode == 0, p1.stderr
    entries = sorted(cache.iterdir())
    assert len(entries) == 1 and entries[0].suffix == ".ttir"
    assert "tt.func public @add_kernel" in entries[0].read_text()
    mtime = entries[0].stat().st_mtime_ns
    p2 = sanitize(["--", sys.executable, s], tmp_path, env)
    assert p2.returncode == 0, p2.stderr
    assert "OUTPUT-OK" in p2.stdout
    assert [e.stat().st_mtime_ns for e in cache.iterdir()] == [mtime]  # read, not rewritten
    # Another kernel file and specialization (another BLOCK) is another entry.
    s3 = write(tmp_path, "cached2.py", body.replace("128", "256"))
    p3 = sanitize(["--", sys.executable, s3], tmp_path, env)
    assert p3.returncode == 0, p3.stderr
    assert len(list(cache.iterdir())) == 2


def run_cached(script, tmp_path, returncode=0, **env):
    """Runs `script` under `tilescope sanitize` with the TTIR cache in tmp_path/cache, tmp_path on the
    import path and no .pyc (an edit of a helper within the same second would otherwise import the old
    bytecode), `env` added; asserts that it printed OUTPUT-OK and exited with `returncode` (1: findings).
    Returns the process and the cache's entries (name -> modification time)."""
    cache = tmp_path / "cache"
    env = {"TILESCOPE_CACHE_DIR": str(cache), "PYTHONPATH": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1",
           **{k: str(v) for k, v in env.items()}}
    p = sanitize(["--", sys.executable, script], tmp_path, env)
    assert p.returncode == returncode and "OUTPUT-OK" in p.stdout, p.stdout + p.stderr
    return p, {e.name: e.stat().st_mtime_ns for e in cache.iterdir()}


def test_kernel_sources_parsed_once_give_the_ttirs_of_fresh_parses(tmp_path):
    # tilescope keeps the tree of each @jit function's source across specializations and helper call
    # sites (_capture._ParsedOnce). The TTIRs must equal those Triton makes parsing every time: the same
    # launches run in two processes, one with the parse cache not installed, and every dumped TTIR is
    # compared. The kernel exercises what Triton's code generator walks more than once: a helper called
    # from two sites with two types, loops (visited twice to find loop-carried values) with augmented
    # assignments, a reduction's combine function, branches on constexprs. Also: a JITFunction subclass
    # whose parse() edits its tree gets a fresh one, and the GC paused for the compile is restored.
    s = write(tmp_path, "parsed.py", """
        import ast, gc, os
        import tilescope
        from tilescope import _capture

        if os.environ["KEEP_PARSES"] == "0":
            _capture._install_parse_cache = lambda: None
        parses = []
        real_parse = ast.parse
        ast.parse = lambda src, *a, **k: (parses.append(1), real_parse(src, *a, **k))[1]

        @triton.jit
        def combine(a, b):
            return a + b * 1

        @triton.jit
        def step(acc, x, SCALE: tl.constexpr):
            acc += x * SCALE
            return acc

        @tilescope.trace("sanitizer")
        @triton.jit
        def rows_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, MODE: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            acc = tl.zeros((BLOCK,), dtype=tl.float32)
            count = tl.zeros((BLOCK,), dtype=tl.int32)
            for i in range(0, n, BLOCK):
                x = tl.load(x_ptr + i + offs, mask=i + offs < n, other=0.0)
                acc = step(acc, x, 2)
                count = step(count, (i + offs < n).to(tl.int32), 1)
                if MODE == "twice":
                    acc += x
            total = tl.reduce(acc, 0, combine) + 1.0
            tl.store(out_ptr, total)
            tl.store(out_ptr + 1, tl.sum(count, 0).to(tl.float32))

        x = torch.arange(100, dtype=torch.float32)
        for block, mode in ((16, "once"), (32, "twice"), (64, "once"), (16, "twice")):
            out = torch.zeros(2)
            rows_kernel[(1,)](x, out, 100, BLOCK=block, MODE=mode)
            want = x.sum() * (3 if mode == "twice" else 2) + 1.0
            assert torch.allclose(out, torch.tensor([want, 100.0])), (block, mode, out)
            if block == 16 and mode == "once":
                print("FIRST", len(parses))
        print("PARSES", len(parses))
        # The cyclic GC, paused while Triton's code generator runs, is on again after each compile, also
        # after one that fails, and stays off in a program that turned it off.
        assert gc.isenabled()

        @tilescope.trace("sanitizer")
        @triton.jit
        def failing_kernel(x_ptr, BLOCK: tl.constexpr):
            tl.static_assert(BLOCK > 64, "BLOCK must be above 64")
            tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)

        try:
            failing_kernel[(1,)](x, BLOCK=16)
            raise SystemExit("no compile error")
        except triton.compiler.errors.CompileTimeAssertionFailure:
            pass
        assert gc.isenabled()
        gc.disable()
        rows_kernel[(1,)](x, torch.zeros(2), 100, BLOCK=32, MODE="once")
        assert not gc.isenabled()
        gc.enable()
        # A subclass whose parse() edits the tree it gets (a prologue) sees a fresh tree at each compile.
        class Prologue(triton.runtime.jit.JITFunction):
            def parse(self):
                tree = super().parse()
                tree.body[0].body.insert(0, ast.parse("v = v + 1").body[0])
                return tree

        def fill(out_ptr, v, BLOCK: tl.constexpr):
            tl.store(out_ptr + tl.arange(0, BLOCK), tl.full((BLOCK,), v, tl.float32))

        fill_kernel = tilescope.trace("sanitizer")(Prologue(fill))
        for block in (4, 8, 16):
            out = torch.zeros(block)
            fill_kernel[(1,)](out, 5.0, BLOCK=block)
            assert torch.equal(out, torch.full((block,), 6.0)), (block, out)
        # Triton's one way to change a kernel's source: the next specialization is made from the new text.
        rows_kernel._unsafe_update_src(rows_kernel.src.replace("+ 1.0", "+ 5.0"))
        out = torch.zeros(2)
        rows_kernel[(1,)](x, out, 100, BLOCK=128, MODE="once")
        assert torch.allclose(out, torch.tensor([x.sum() * 2 + 5.0, 100.0])), out
        assert tilescope.findings() == []
        print("OUTPUT-OK")
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TILESCOPE")}
    dumps, parses = {}, {}
    for keep in ("0", "1"):
        d = tmp_path / f"ttir-{keep}"
        p = subprocess.run([sys.executable, s], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                           env={**env, "KEEP_PARSES": keep, "TILESCOPE_CACHE_DIR": "", "TILESCOPE_DUMP_TTIR": str(d)})
        assert p.returncode == 0 and "OUTPUT-OK" in p.stdout, p.stdout + p.stderr
        parses[keep] = [int(p.stdout.split(f"{what} ")[1].split()[0]) for what in ("FIRST", "PARSES")]
        dumps[keep] = sorted(f.read_text() for f in d.iterdir())
    assert len(dumps["1"]) == 9 and dumps["1"] == dumps["0"]
    # Parsed at the first specialization only (the kernel, its helpers, Triton's own @jit functions it
    # calls); without the cache, each of the three later specializations parses at least the kernel and
    # its two helpers again.
    (first, total), (first_fresh, total_fresh) = parses["1"], parses["0"]
    assert first == total and first_fresh > first and total_fresh - first_fresh >= 3 * 3, parses


def test_ttir_disk_cache_key_follows_helpers_and_constants_in_other_files(tmp_path):
    # The cache key is a fingerprint of the kernel's source and of what it names (_srckey.py): a @jit
    # helper in another file, a global constexpr, and a constexpr reached through a module attribute
    # (which Triton's own key leaves out). Each process checks its output against the constants the
    # test wrote (passed in the environment), so a stale cached TTIR fails it.
    helpers = tmp_path / "kernel_helpers.py"

    def write_helpers(bump, offset):
        helpers.write_text(textwrap.dedent(f"""
            import triton, triton.language as tl

            OFFSET = tl.constexpr({offset})

            @triton.jit
            def bump(x):
                return x + {bump}
        """))

    s = write(tmp_path, "uses_helpers.py", """
        import os
        import kernel_helpers

        SCALE = tl.constexpr(float(os.environ["SCALE"]))

        @triton.jit
        def k(x_ptr, y_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs)
            tl.store(y_ptr + offs, kernel_helpers.bump(x) * SCALE + kernel_helpers.OFFSET)

        x = torch.randn(64)
        y = torch.empty(64)
        k[(1,)](x, y, BLOCK=64)
        want = (x + float(os.environ["BUMP"])) * float(os.environ["SCALE"]) + float(os.environ["OFFSET"])
        torch.testing.assert_close(y, want)
        print("OUTPUT-OK")
    """)

    def run(bump, scale, offset):
        return run_cached(s, tmp_path, BUMP=bump, SCALE=scale, OFFSET=offset)[1]

    write_helpers(1.0, 0.5)
    first = run(1.0, 2.0, 0.5)
    assert len(first) == 1
    assert run(1.0, 2.0, 0.5) == first  # the same source and values: read, not rewritten
    write_helpers(3.0, 0.5)  # the helper's body edited in its own file
    assert len(run(3.0, 2.0, 0.5)) == 2
    assert len(run(3.0, 5.0, 0.5)) == 3  # another value of the kernel's global constexpr
    write_helpers(3.0, 7.0)  # a constexpr reached through the module attribute
    assert len(run(3.0, 5.0, 7.0)) == 4
    write_helpers(1.0, 0.5)  # back to the first source and values: the first entry again
    assert len(run(1.0, 2.0, 0.5)) == 4


def test_ttir_disk_cache_key_follows_enum_constants_jit_arguments_and_the_def_line(tmp_path):
    # Three more things a kernel's TTIR depends on (review of the fingerprint key): an Enum member as a
    # global constexpr, a @jit function passed as a constexpr argument (edited in its own file), and
    # the `def` line (the TTIR's locations: a decorator split over more lines moves the kernel down).
    acts = tmp_path / "acts_mod.py"
    body = """
        import enum, os
        import acts_mod

        class Act(enum.Enum):
            IDENTITY = 1
            NEGATE = 2

        ACT = tl.constexpr(Act[os.environ["ACT"]])
        NEGATE = tl.constexpr(Act.NEGATE)

        @triton.jit{decorator_args}
        def k(x_ptr, y_ptr, F: tl.constexpr):
            offs = tl.arange(0, 16)
            x = F(tl.load(x_ptr + offs))
            if ACT == NEGATE:
                x = -x
            tl.store(y_ptr + offs, x)

        x, y = torch.ones(16), torch.empty(16)
        k[(1,)](x, y, F=acts_mod.f)
        want = (1.0 + float(os.environ["BUMP"])) * (-1.0 if os.environ["ACT"] == "NEGATE" else 1.0)
        assert y.tolist() == [want] * 16, (y.tolist(), want)
        print("OUTPUT-OK")
        k[(1,)](x, torch.empty(8), F=acts_mod.f)  # a store past the end, reported at its line
    """

    def run(act, bump, decorator_args=""):
        acts.write_text(f"import triton\n\n@triton.jit\ndef f(x):\n    return x + {bump}\n")
        s = write(tmp_path, "enum_kernel.py", body.replace("{decorator_args}", decorator_args))
        p, _ = run_cached(s, tmp_path, returncode=1, ACT=act, BUMP=bump)  # the store past the end
        line = next(i for i, t in enumerate(open(s).read().splitlines(), 1) if "tl.store(y_ptr" in t)
        assert f"enum_kernel.py:{line}:" in p.stderr, p.stderr  # the finding's line: the TTIR's locations

    run("IDENTITY", 1.0)
    run("NEGATE", 1.0)
    run("NEGATE", 2.0)
    run("NEGATE", 2.0, "(\n            do_not_specialize=[],\n        )")  # indented as the body, which write() dedents


def test_ttir_disk_cache_key_follows_static_methods_numpy_scalars_and_globals_behind_locals(tmp_path):
    # A second review's cases: a @jit helper behind a @staticmethod in another file, a numpy scalar as a
    # global constexpr, and a global that Triton reads where a local of the same name was not assigned
    # (a branch not taken); the kernel has a whitespace-only line (its source is then not a suffix of
    # the text it was read from) and module globals that share names with its locals, and still hits.
    helpers = tmp_path / "sm_helpers.py"
    body = """
        import os
        import numpy as np
        import sm_helpers

        MODE = tl.constexpr(np.int64(os.environ["MODE"]))
        SCALE = tl.constexpr(float(os.environ["SCALE"]))
        TWICE = tl.constexpr(False)
        x = torch.ones(16)
        offs = np.arange(3)

        @triton.jit
        def k(x_ptr, y_ptr):
            offs = tl.arange(0, 16)
            x = sm_helpers.Ops.bump(tl.load(x_ptr + offs))
            if TWICE:
                SCALE = 2.0
            WS_LINE
            if int(MODE) == 2:
                x = -x
            tl.store(y_ptr + offs, x * SCALE)

        y = torch.empty(16)
        k[(1,)](x, y)
        want = (1.0 + float(os.environ["BUMP"])) * (-1.0 if os.environ["MODE"] == "2" else 1.0) * float(os.environ["SCALE"])
        assert y.tolist() == [want] * 16, (y.tolist(), want)
        print("OUTPUT-OK")
    """
    s = write(tmp_path, "sm_kernel.py", body)
    text = open(s).read()
    with open(s, "w") as f:
        f.write(text.replace("    WS_LINE\n", "    \n"))  # a line of four spaces in the kernel

    def run(bump, mode, scale):
        helpers.write_text(f"import triton\n\nclass Ops:\n    @staticmethod\n    @triton.jit\n    def bump(x):\n"
                           f"        return x + {bump}\n")
        return run_cached(s, tmp_path, BUMP=bump, MODE=mode, SCALE=scale)[1]

    assert "\n    \n" in open(s).read()  # the whitespace-only line is there
    first = run(1.0, 1, 1.0)
    assert run(1.0, 1, 1.0) == first and len(first) == 1  # read, not rewritten
    assert len(run(2.0, 1, 1.0)) == 2
    assert len(run(2.0, 2, 1.0)) == 3
    assert len(run(2.0, 2, 3.0)) == 4


def test_ttir_disk_cache_key_follows_a_helper_in_a_lazily_imported_submodule(tmp_path):
    # A package whose __getattr__ imports submodules on demand (PEP 562): the kernel's helper is not
    # in the package until Triton's front end asks for it, so the key must still see an edit of it.
    pkg = tmp_path / "lazy_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent("""
        import importlib

        def __getattr__(name):
            try:
                return importlib.import_module(f".{name}", __name__)
            except ModuleNotFoundError:
                raise AttributeError(name) from None
    """))
    s = write(tmp_path, "uses_lazy.py", """
        import os
        import lazy_pkg

        @triton.jit
        def k(x_ptr, y_ptr):
            offs = tl.arange(0, 16)
            tl.store(y_ptr + offs, lazy_pkg.helpers.bump(tl.load(x_ptr + offs)))

        x, y = torch.randn(16), torch.empty(16)
        k[(1,)](x, y)
        torch.testing.assert_close(y, x + float(os.environ["BUMP"]))
        print("OUTPUT-OK")
    """)
    for bump in (1.0, 2.0, 1.0):
        (pkg / "helpers.py").write_text(f"import triton\n\n@triton.jit\ndef bump(x):\n    return x + {bump}\n")
        _, entries = run_cached(s, tmp_path, BUMP=bump)
    assert len(entries) == 2


def test_a_kernel_read_from_the_ttir_cache_keeps_tritons_changed_global_check(tmp_path):
    # Triton refuses to launch a kernel again after a global it read at compile time changed; a kernel
    # whose TTIR came from the disk cache (second process) must be refused the same way.
    s = write(tmp_path, "global_changes.py", """
        G = tl.constexpr(3)

        @triton.jit
        def k(y_ptr):
            tl.store(y_ptr + tl.arange(0, 4), tl.full((4,), G, tl.int32))

        y = torch.zeros(4, dtype=torch.int32)
        k[(1,)](y)
        assert y.tolist() == [3] * 4
        G = tl.constexpr(4)
        try:
            k[(1,)](y)
        except RuntimeError as e:
            print("REFUSED", e)
    """)
    env = {"TILESCOPE_CACHE_DIR": str(tmp_path / "cache")}
    for _ in range(2):  # compiled, then read from the cache
        p = sanitize(["--", sys.executable, s], tmp_path, env)
        assert p.returncode == 0, p.stderr
        assert "REFUSED Global variable G has changed since we compiled this kernel" in p.stdout, p.stdout + p.stderr
    assert len(list((tmp_path / "cache").iterdir())) == 1


def test_read_only_arrays_are_never_written_and_grid_limits_hold(tmp_path):
    # A store into a read-only numpy array (np.frombuffer of immutable bytes) must neither crash nor
    # change the bytes; a grid past CUDA's y limit (65535) is a LaunchError, as it fails on a GPU.
    s = write(tmp_path, "ro.py", """
        import numpy as np
        import tilescope

        @triton.jit
        def fill(y_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(y_ptr + offs, offs.to(tl.float32) + 1, mask=offs < n)

        b = bytes(16)
        y = np.frombuffer(b, np.float32)
        fill[(1,)](y, 4, BLOCK=4)
        assert b == bytes(16) and not y.any()
        try:
            fill[(1, 70000)](np.zeros(4, np.float32), 4, BLOCK=4)
        except tilescope.LaunchError as e:
            assert "65535" in str(e)
            print("LIMIT-OK")
    """)
    p = sanitize(["--", sys.executable, s], tmp_path)
    assert p.returncode == 0, p.stderr
    assert "LIMIT-OK" in p.stdout


def test_errors_carry_a_structured_diagnostic(tmp_path):
    # PTX outside tilescope's subset (a load) cannot run: the launch raises LaunchError whose `diagnostic` names the op,
    # its TTIR position and its Python line (found by searching the script, independently of tilescope).
    s = write(tmp_path, "asm.py", """
        import json
        import tilescope

        @triton.jit
        def k(x_ptr):
            x = tl.load(x_ptr + tl.arange(0, 4))
            y = tl.inline_asm_elementwise("ld.global.b32 $0, [$1];", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1)
            tl.store(x_ptr + tl.arange(0, 4), y)

        try:
            k[(1,)](torch.zeros(4, dtype=torch.int32))
        except tilescope.LaunchError as e:
            print("DIAG", json.dumps(e.diagnostic))
    """)
    p = sanitize(["--", sys.executable, s], tmp_path)
    assert p.returncode == 0, p.stderr
    line = next(i for i, t in enumerate(open(s).read().splitlines(), 1) if "inline_asm_elementwise" in t)
    d = json.loads(p.stdout.split("DIAG ", 1)[1].splitlines()[0])
    assert d["severity"] == "error"
    assert d["op"] == "tt.elementwise_inline_asm"
    assert "unsupported op" in d["message"]
    assert "unsupported PTX instruction 'ld.global.b32'" in d["message"]
    assert d["ttir"]["line"] > 0 and d["ttir"]["file"].endswith(".ttir")
    assert d["python"]["file"].endswith("asm.py") and d["python"]["line"] == line


def test_each_launch_is_one_launch_record(tmp_path):
    # The launch record the front door made (README, "Launch record"): every runtime argument in TTIR
    # order with the tensor's dtype, shape, strides and extent, the grid, and Triton's specialization
    # (BLOCK a constexpr; n == 1 specialized to a constant; 16-aligned pointers).
    s = write(tmp_path, "rec.py", """
        import json
        import tilescope
        from tilescope import _state

        x = torch.zeros(8, 16)
        add_kernel[(2, 1)](x, x, x, 100, BLOCK=64)
        r = json.loads(_state.last_record())
        print("REC", json.dumps(r))
        add_kernel[(1,)](x, x, x, 1, BLOCK=64)
        print("REC1", _state.last_record())
    """)
    p = sanitize(["--", sys.executable, s], tmp_path)
    assert p.returncode in (0, 1), p.stderr
    r = json.loads(p.stdout.split("REC ", 1)[1].splitlines()[0])
    assert r["kernel"] == "" and r["grid"] == [2, 1, 1]
    assert [a["name"] for a in r["args"]] == ["x_ptr", "y_ptr", "out_ptr", "n"]
    x = r["args"][0]
    assert x["kind"] == "buffer" and x["dtype"] == "f32" and x["shape"] == [8, 16] and x["strides"] == [16, 1]
    assert x["bytes"] == 8 * 16 * 4
    assert r["args"][3] == {"name": "n", "kind": "scalar", "value": 100}
    assert r["specialization"]["constexprs"] == {"BLOCK": "64"}
    assert set(r["specialization"]["divisible_by_16"]) >= {"x_ptr", "y_ptr", "out_ptr"}
    assert r["specialization"]["equal_to_1"] == []
    assert "ttir" not in r and r["stack"]
    r1 = json.loads(p.stdout.split("REC1 ", 1)[1].splitlines()[0])
    assert [a["name"] for a in r1["args"]] == ["x_ptr", "y_ptr", "out_ptr"]  # n == 1 became a constant
    assert r1["specialization"]["equal_to_1"] == ["n"]
    assert r1["specialization"]["constexprs"] == {"n": "1", "BLOCK": "64"}


def test_ctrl_c_stops_a_long_launch(tmp_path):
    # SIGINT during a launch of 10^8 programs raises KeyboardInterrupt in the program within seconds.
    s = write(tmp_path, "long.py", """
        import time

        @triton.jit
        def k(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(x_ptr + offs % n, offs.to(tl.float32), mask=offs < n)

        x = torch.zeros(1024)
        print("START", flush=True)
        t0 = time.time()
        try:
            k[(100_000_000,)](x, 1024, BLOCK=16)
        except KeyboardInterrupt:
            print("INTERRUPTED", round(time.time() - t0), flush=True)
    """)
    import signal
    env = {k: v for k, v in os.environ.items() if not k.startswith("TILESCOPE")}
    env["TILESCOPE_SANITIZE"] = "1"
    proc = subprocess.Popen([sys.executable, s], cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "START"
    import time
    time.sleep(6)  # past compilation (a second or two), well inside the launch (minutes)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert "INTERRUPTED" in out


SPIN = """
    import time

    @triton.jit
    def spin_kernel(x_ptr, out_ptr):
        i = tl.load(x_ptr)
        while i >= 0:  # MARK-spin: i stays in {0, 1} unless it starts negative
            i = (i + 1) % 2
        tl.store(out_ptr, i)

    out = torch.zeros(1, dtype=torch.int32)
    spin_kernel[(1,)](torch.full((1,), -1, dtype=torch.int32), out)  # compiled; ends at once
"""


def test_ctrl_c_stops_one_program_in_an_endless_loop(tmp_path):
    # Issue 8 item 2: the cancel flag was checked only between programs, so SIGINT never ended a
    # launch whose one program loops forever. Now it is checked at every loop iteration.
    s = write(tmp_path, "spin.py", textwrap.dedent(SPIN) + textwrap.dedent("""
        print("START", flush=True)
        t0 = time.time()
        try:
            spin_kernel[(1,)](torch.zeros(1, dtype=torch.int32), out)
        except KeyboardInterrupt:
            print("INTERRUPTED", round(time.time() - t0, 1), flush=True)
    """))
    import signal
    import time
    env = {k: v for k, v in os.environ.items() if not k.startswith("TILESCOPE")}
    env["TILESCOPE_SANITIZE"] = "1"
    env["TILESCOPE_MAX_STEPS"] = "0"  # no limit: only Ctrl-C can end this launch
    proc = subprocess.Popen([sys.executable, s], cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "START"
        time.sleep(1)  # inside the launch: the kernel is compiled already
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert "INTERRUPTED" in out, out


@tilescope.trace("sanitizer")
@triton.jit
def loop_sum_kernel(out_ptr, n):
    acc = tl.zeros((), dtype=tl.int64)
    for i in range(n):
        acc += i
    tl.store(out_ptr, acc)


def test_launch_limits_changed_between_launches_apply_to_the_next_launch(monkeypatch):
    # TILESCOPE_MAX_STEPS and TILESCOPE_THREADS are read at each launch (the parsed values are kept
    # only while the variables stay the same).
    x, y = torch.arange(64, dtype=torch.float32), torch.ones(64)
    out, total = torch.zeros(64), torch.zeros(1, dtype=torch.int64)
    monkeypatch.setenv("TILESCOPE_MAX_STEPS", "30")
    with pytest.raises(tilescope.LaunchError, match="the limit is 30 per program"):
        loop_sum_kernel[(1,)](total, 100)
    monkeypatch.setenv("TILESCOPE_MAX_STEPS", "100000")
    loop_sum_kernel[(1,)](total, 100)
    assert total.item() == 4950
    monkeypatch.setenv("TILESCOPE_MAX_STEPS", "lots")
    with pytest.raises(tilescope.LaunchError, match="TILESCOPE_MAX_STEPS=lots"):
        add_kernel[(4,)](x, y, out, 64, BLOCK=16)
    monkeypatch.setenv("TILESCOPE_MAX_STEPS", "10000")
    monkeypatch.setenv("TILESCOPE_THREADS", "-5")
    with pytest.raises(tilescope.LaunchError, match="TILESCOPE_THREADS -5"):
        add_kernel[(4,)](x, y, out, 64, BLOCK=16)
    monkeypatch.setenv("TILESCOPE_THREADS", "2")
    add_kernel[(4,)](x, y, out, 64, BLOCK=16)
    assert torch.equal(out, x + y)


def test_step_limit_ends_a_hung_kernel_with_its_python_line(tmp_path):
    s = write(tmp_path, "spin.py", textwrap.dedent(SPIN) + "spin_kernel[(2,)](torch.zeros(1, dtype=torch.int32), out)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TILESCOPE")}
    env["TILESCOPE_SANITIZE"] = "1"
    env["TILESCOPE_MAX_STEPS"] = "10000"
    p = subprocess.run([sys.executable, s], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert p.returncode == 1, p.stderr
    assert "LaunchError" in p.stderr and "operations without finishing" in p.stderr, p.stderr
    assert "the limit is 10000 per program" in p.stderr, p.stderr
    line = next(i for i, text in enumerate(open(s), 1) if "MARK-spin" in text)
    assert f"spin.py:{line}:" in p.stderr, p.stderr  # located at the while loop
    env["TILESCOPE_MAX_STEPS"] = "lots"
    p = subprocess.run([sys.executable, s], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert p.returncode == 1 and "TILESCOPE_MAX_STEPS=lots" in p.stderr, p.stderr
    env["TILESCOPE_MAX_STEPS"] = "10000"
    env["TILESCOPE_THREADS"] = "-5"
    p = subprocess.run([sys.executable, s], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert p.returncode == 1 and "TILESCOPE_THREADS -5" in p.stderr and "1024" in p.stderr, p.stderr
