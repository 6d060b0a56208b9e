"""The bundled examples under `tilescope sanitize`.

- Each correct example (examples/<name>.py) checks its own outputs against torch and prints "OK"; under
  the sanitizer it must exit 0 with zero findings.
- Each buggy example (examples/buggy_<name>.py) marks the lines where a finding is expected with a
  comment `expect: KIND[, KIND...]`; under the sanitizer the findings (kind, line in that file) must be
  exactly that set, the exit status 1, and the program must still run to its end ("ran" is printed)
  with the real outputs.
The expected lines come from the example's source (marker comments), never from tilescope.
"""
from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
EXAMPLES = os.path.join(ROOT, "examples")
KINDS = {"out-of-bounds-load", "out-of-bounds-store", "out-of-bounds-atomic", "null-pointer", "int32-overflow",
         "undefined-value", "division-by-zero", "assert-failed", "data-race", "intra-program-race",
         "uninitialized-read"}

CORRECT = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(EXAMPLES, "*.py"))
                 if not os.path.basename(p).startswith(("buggy_", "demo")))
BUGGY = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(EXAMPLES, "buggy_*.py")))


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
    assert expected_findings(path), f"{name}: no `expect:` markers"


@pytest.mark.parametrize("name", CORRECT)
def test_correct_example_has_no_findings(name, tmp_path):
    p, findings = sanitize(name, tmp_path)
    assert p.returncode == 0 and findings == [], describe(p, findings)
    assert "OK" in p.stdout, describe(p, findings)


@pytest.mark.parametrize("name", BUGGY)
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
