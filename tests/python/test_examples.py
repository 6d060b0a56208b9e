"""The bundled examples under `tilescope sanitize`.

- Each correct example (examples/<name>.py) checks its own outputs against torch and prints "OK"; under
  the sanitizer it must exit 0 with zero findings.
- Each buggy example (examples/buggy_<name>.py) marks the lines where a finding is expected with a
  comment `expect: KIND[, KIND...]`; under the sanitizer the findings (kind, line in that file) must be
  exactly that set, the exit status 1, and the program must still run to its end ("ran" is printed)
  with the real outputs.
- The buggy examples of VALUE_CHECKS also have their outputs checked with numpy: wrong exactly as the
  bug makes them. Those of WRONG_VALUES have no finding at all (the bug is in the values only).
The expected lines come from the example's source (marker comments), never from tilescope.
"""
from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
EXAMPLES = os.path.join(ROOT, "examples")
KINDS = {"out-of-bounds-load", "out-of-bounds-store", "out-of-bounds-atomic", "null-pointer", "int32-overflow",
         "undefined-value", "division-by-zero", "assert-failed", "data-race", "intra-program-race",
         "uninitialized-read"}

# Buggy examples whose outputs the test checks too (main() returns its tensors): each check computes
# with numpy what the bug makes of the inputs, and what the right answer is, and asserts that the
# kernel wrote the former and not the latter. The examples of WRONG_VALUES have no finding to show
# (every access is in bounds): their wrong values are the bug.


def _check_index_shift(x, y):
    n = len(x)
    np.testing.assert_array_equal(y[: n - 1], 2 * x[1:])  # every y[i] is 2 * x[i + 1]
    assert not np.allclose(y, 2 * x)


def _check_missing_k_tail(a, b, c):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    k_done = (a.shape[1] // 32) * 32  # the whole K tiles of BLOCK_K = 32
    assert k_done < a.shape[1]
    np.testing.assert_allclose(c, a64[:, :k_done] @ b64[:k_done], rtol=2e-3, atol=2e-2)
    assert np.abs(c - a64 @ b64).max() > 0.5  # the dropped columns' share is missing


def _check_softmax_no_max(x, y):
    with np.errstate(over="ignore"):
        overflow = np.isinf(np.exp(x.astype(np.float32)))  # float32 exp past 88.72
    bad_rows = overflow.any(axis=1)
    assert bad_rows.any() and not bad_rows.all()
    # inf / inf is NaN where exp overflowed; finite / inf is 0 elsewhere in those rows
    np.testing.assert_array_equal(np.isnan(y[bad_rows]), overflow[bad_rows])
    assert (y[bad_rows][~overflow[bad_rows]] == 0).all()
    x64 = x[~bad_rows].astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y[~bad_rows], e / e.sum(axis=1, keepdims=True), atol=1e-6)


VALUE_CHECKS = {"buggy_index_shift": _check_index_shift, "buggy_matmul_missing_k_tail": _check_missing_k_tail,
                "buggy_softmax_no_max": _check_softmax_no_max}
WRONG_VALUES = {"buggy_matmul_missing_k_tail", "buggy_softmax_no_max"}

CORRECT = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(EXAMPLES, "*.py"))
                 if not os.path.basename(p).startswith(("buggy_", "demo", "error_")))
# Programs that stop with a located error before anything runs (an NKI constraint the compiler checks):
# the `# BUG:` line carries `expect-error: OP`.
ERRORS = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(EXAMPLES, "error_*.py")))
BUGGY = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(EXAMPLES, "buggy_*.py")))
WITH_FINDINGS = [n for n in BUGGY if n not in WRONG_VALUES]


def tilescope_cmd() -> list[str]:
    exe = os.environ.get("TILESCOPE_BIN")
    if exe and os.path.exists(exe):
        return [exe]
    return [sys.executable, "-m", "tilescope"]


def expected_findings(path: str) -> set[tuple[str, int]]:
    """(kind, line) for every `expect: kind, kind` marker comment in the example's source."""
    out = set()
    with open(path) as f:
        for i, line in enumerate(f, 1):
            m = re.search(r"#.*\bexpect:\s*([a-z0-9, -]+)$", line.rstrip())
            if m:
                for kind in (k.strip() for k in m.group(1).split(",")):
                    assert kind in KINDS, f"{path}:{i}: unknown kind {kind!r} in marker"
                    out.add((kind, i))
    return out


def bug_line(path: str) -> int:
    with open(path) as f:
        lines = [i for i, line in enumerate(f, 1) if "# BUG:" in line and "`# BUG:`" not in line]
    assert len(lines) == 1, f"{path}: expected exactly one `# BUG:` marker, found lines {lines}"
    return lines[0]


def sanitize(name: str, tmp_path) -> tuple[subprocess.CompletedProcess, list[dict]]:
    out = tmp_path / f"{name}.json"
    script = os.path.join("examples", name + ".py")
    cmd = tilescope_cmd() + ["sanitize", "--json", str(out), "--", sys.executable, script]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert out.exists(), f"no findings file from {' '.join(cmd)}\nexit {p.returncode}\n{p.stdout}\n{p.stderr}"
    data = json.loads(out.read_text())
    findings = data.get("findings", data) if isinstance(data, dict) else data
    return p, findings


def loc(f: dict) -> tuple[str, int]:
    where = f.get("location") or f  # the README schema: file/line/col at the top level of a finding
    return os.path.basename(where.get("file") or ""), int(where.get("line") or 0)


def describe(p: subprocess.CompletedProcess, findings: list[dict]) -> str:
    rows = [f"  {f.get('kind')} at {':'.join(map(str, loc(f)))} (kernel {f.get('kernel')})" for f in findings]
    return (f"exit {p.returncode}\nfindings:\n" + "\n".join(rows) + f"\n--- stdout ---\n{p.stdout[-3000:]}"
            f"\n--- stderr ---\n{p.stderr[-5000:]}")


def test_there_are_enough_examples():
    assert len(CORRECT) >= 12, CORRECT
    assert len(BUGGY) >= 7, BUGGY


@pytest.mark.parametrize("name", BUGGY)
def test_buggy_example_documents_its_bug_line(name):
    # The docstring says "The bug (line N, ...)"; N must be the line carrying the `# BUG:` marker.
    path = os.path.join(EXAMPLES, name + ".py")
    with open(path) as f:
        m = re.search(r"The bug \(line (\d+)", f.read())
    assert m, f"{name}: the docstring does not say which line the bug is on"
    assert int(m.group(1)) == bug_line(path)
    if name in WRONG_VALUES:
        assert not expected_findings(path), f"{name}: a wrong-values example expects no finding"
    else:
        assert expected_findings(path), f"{name}: no `expect:` markers"


@pytest.mark.parametrize("name", CORRECT)
def test_correct_example_has_no_findings(name, tmp_path):
    p, findings = sanitize(name, tmp_path)
    assert p.returncode == 0 and findings == [], describe(p, findings)
    assert "OK" in p.stdout, describe(p, findings)


@pytest.mark.parametrize("name", WITH_FINDINGS)
def test_buggy_example_exact_findings(name, tmp_path):
    path = os.path.join(EXAMPLES, name + ".py")
    want = expected_findings(path)
    p, findings = sanitize(name, tmp_path)
    got = set()
    for f in findings:
        file, line = loc(f)
        assert file == name + ".py", f"finding outside the example's source:\n{describe(p, findings)}"
        got.add((f["kind"], line))
    assert got == want, f"want {sorted(want, key=lambda x: x[1])}\n{describe(p, findings)}"
    assert p.returncode == 1, describe(p, findings)
    # the program itself ran to its end (tilescope never dereferences the bad lanes and continues)
    assert f"{name}: ran" in p.stdout, describe(p, findings)


def expected_error(text: str) -> str:
    """The docstring's "Expected error:" block: its indented lines joined with spaces."""
    m = re.search(r"^Expected error:\n((?:    .*\n)+)", text, re.M)
    assert m, "the docstring has no 'Expected error:' block"
    return " ".join(line.strip() for line in m.group(1).splitlines())


@pytest.mark.parametrize("name", ERRORS)
def test_error_example_stops_at_its_bug_line(name):
    """An error example stops with an NkiError located at its `# BUG:` line (which carries `expect-error`),
    whose message after the location starts with the docstring's "Expected error:" text."""
    path = os.path.join(EXAMPLES, name + ".py")
    line = bug_line(path)
    with open(path) as f:
        text = f.read()
    assert "expect-error" in text.splitlines()[line - 1]
    assert f"The bug (line {line}," in text
    want = expected_error(text)
    p = subprocess.run(tilescope_cmd() + ["sanitize", "--", sys.executable, os.path.join("examples", name + ".py")],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert p.returncode != 0, p.stdout + p.stderr
    stderr = p.stderr.replace(ROOT + os.sep, "")  # paths in the message as the docstring writes them
    assert re.search(rf"NkiError: \S*{name}\.py:{line}:\d+: " + re.escape(want), stderr), f"want: {want}\n{p.stderr}"


@pytest.mark.parametrize("name", sorted(VALUE_CHECKS))
def test_buggy_example_values_show_the_bug(name, tmp_path):
    """Under the sanitizer: the findings of the markers (none for WRONG_VALUES), and the outputs main()
    returns are wrong exactly as the bug makes them (VALUE_CHECKS)."""
    path = os.path.join(EXAMPLES, name + ".py")
    out, arrays = tmp_path / "findings.json", tmp_path / "arrays.npz"
    code = ("import runpy, sys, numpy as np; ts = runpy.run_path(sys.argv[1])['main'](); "
            "np.savez(sys.argv[2], *[t.cpu().numpy() for t in ts])")
    p = subprocess.run(tilescope_cmd() + ["sanitize", "--json", str(out), "--", sys.executable, "-c", code, path,
                                          str(arrays)], capture_output=True, text=True, cwd=ROOT, timeout=900)
    data = json.loads(out.read_text())
    findings = data.get("findings", data) if isinstance(data, dict) else data
    assert {(f["kind"], loc(f)[1]) for f in findings} == expected_findings(path), describe(p, findings)
    assert p.returncode == (0 if name in WRONG_VALUES else 1), describe(p, findings)
    with np.load(arrays) as z:
        VALUE_CHECKS[name](*[z[k] for k in sorted(z.files, key=lambda k: int(k.split("_")[1]))])


def test_demo_engine_part():
    """`make demo`'s second part (examples/demo.py, engine_part): Triton-made TTIR through `tilescope run`,
    outputs against numpy, a buggy launch, inline PTX. It checks itself; it must say every step behaved."""
    exe = os.environ.get("TILESCOPE_BIN")
    if not exe or not os.path.exists(exe):
        pytest.fail("TILESCOPE_BIN must name the built tilescope executable (make test-python sets it)")
    code = "import sys; sys.path.insert(0, sys.argv[1]); import demo; sys.exit(0 if demo.engine_part() else 1)"
    p = subprocess.run([sys.executable, "-c", code, EXAMPLES], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "TILESCOPE_BIN": exe})
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
