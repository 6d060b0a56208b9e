"""Text tests with inline expectations (MLIR lit style): each tests/lit/*.ttir file is one test.

A file carries its command lines and its expectations in `//` comments, which the TTIR reader skips:

    // RUN: %tilescope run %s --grid 4 --arg x_ptr=f32[100]:randn --arg n=i32:100
    // RUN: %tilescope run %s --grid 1 | FileCheck %s
    // RUN: %tilescope run %s --grid 4 2>&1 | FileCheck %s --check-prefix=REPORT
        %x_5 = tt.load %x_4 : tensor<32x!tt.ptr<f32>>  // expected-finding {{out-of-bounds-load}}
        // expected-finding@+1 {{undefined-value}} {{28 lanes in 1 program}}
        // expected-error@-2:41 {{unsupported type 'q32'}}
        // CHECK: pid (0, 0, 0) idx (3) x: 3

RUN: one `tilescope run` command, run without a shell in the file's directory. `%tilescope` is the
binary (TILESCOPE_BIN), `%s` this file, `%t` a temporary path of this test; a trailing backslash
continues on the next RUN line. The runner appends `--json <temp> --color never`. Optional tail:
`2>&1` (stderr joins stdout) then `| FileCheck ARGS` (LLVM's FileCheck, Debian's llvm-14-tools, reads
that output). Every RUN line is checked against every expectation of the file:

- `expected-finding[@+N|@-N][:COL] {{KIND}} {{TEXT}}...`: a finding of KIND whose `ttir.line` is the
  annotated line (the comment's own line, or N lines below / above it) and, given COL, whose
  `ttir.col` is COL; each further `{{TEXT}}` must appear in its `summary`. Findings and expectations
  pair one to one: an unexpected finding fails the test as much as a missing one, so a file without
  expected-finding asserts that the kernel runs clean.
- `expected-error[@+N|@-N][:COL] {{TEXT}}`: tilescope exits 2 with `FILE:LINE:COL: MESSAGE` on stderr
  for that line (and column), MESSAGE containing TEXT; every located error must be expected.
- Exit status: 2 if an error is expected, else 1 if a finding is, else 0.
- Check lines (`// CHECK:`, `-NEXT:`, `-NOT:`, `-SAME:`, ... or another prefix given to FileCheck)
  are FileCheck's. An all-caps `// WORD:` comment that no RUN line's FileCheck reads is an error, as
  is a malformed annotation or one aimed at a line without code: a typo never passes silently.

Run files by hand: `TILESCOPE_BIN=build/tilescope python3 tests/python/test_lit.py tests/lit/X.ttir`.
"""
from __future__ import annotations

import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIT_DIR = ROOT / "tests" / "lit"
TIMEOUT_S = 120


def tilescope_bin() -> str:
    return os.environ.get("TILESCOPE_BIN") or str(ROOT / "build" / "tilescope")


def filecheck_bin() -> str | None:
    """$FILECHECK, else FileCheck on PATH, else the newest /usr/lib/llvm-N/bin/FileCheck (Debian)."""
    if os.environ.get("FILECHECK"):
        return os.environ["FILECHECK"]
    found = shutil.which("FileCheck")
    if found:
        return found
    versions = glob.glob("/usr/lib/llvm-*/bin/FileCheck")
    versions.sort(key=lambda p: int(re.search(r"llvm-(\d+)", p).group(1)))
    return versions[-1] if versions else None


@dataclass
class Expectation:
    what: str  # "finding" or "error"
    line: int  # the annotation's own line (1-based)
    target: int  # the TTIR line it describes
    col: int | None
    texts: list[str]  # finding: [kind, summary substrings...]; error: [message substring]
    source: str  # the annotation as written, for messages

    def where(self, path: Path) -> str:
        return f"{path.name}:{self.line}: {self.source}"


@dataclass
class Run:
    line: int
    argv: list[str]  # the tilescope command, substituted
    merge_stderr: bool
    filecheck: list[str] | None  # FileCheck's arguments, substituted


@dataclass
class LitFile:
    path: Path
    runs: list[Run] = field(default_factory=list)
    expectations: list[Expectation] = field(default_factory=list)
    check_prefixes: dict[str, int] = field(default_factory=dict)  # prefix -> first line using it
    problems: list[str] = field(default_factory=list)  # malformed RUN lines or annotations


def split_comment(line: str) -> tuple[str, str | None]:
    """(code, comment text after `//` or None); a `//` inside a "string" (a location's path) is code."""
    in_str = False
    i = 0
    while i < len(line):
        c = line[i]
        if in_str:
            if c == "\\":
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif line.startswith("//", i):
            return line[:i], line[i + 2:]
        i += 1
    return line, None


ANNOTATION = re.compile(r"expected-(?P<what>[A-Za-z]+)")
ANNOTATION_FULL = re.compile(
    r"expected-(?P<what>finding|error)(?:@(?P<off>[+-]\d+))?(?::(?P<col>\d+))?"
    r"(?P<texts>(?:\s*\{\{.*?\}\})+)\s*$")
CHECK_LINE = re.compile(r"^\s*(?P<prefix>[A-Z][A-Z0-9_]*(?:-[A-Z0-9_]+)*?)"
                        r"(?:-(?:NEXT|NOT|SAME|DAG|LABEL|EMPTY|COUNT-\d+))?:")
SUBST = re.compile(r"%(tilescope|s|t)(?![A-Za-z0-9_])")


def parse(path: Path, tmp: Path) -> LitFile:
    lit = LitFile(path)
    lines = path.read_text().splitlines()
    code_lines = {i + 1 for i, l in enumerate(lines) if split_comment(l)[0].strip()}
    subst = {"tilescope": tilescope_bin(), "s": str(path), "t": str(tmp / "t")}
    subst = {k: shlex.quote(v) for k, v in subst.items()}
    pending: tuple[int, str] | None = None  # a RUN line continued with a trailing backslash
    for no, text in enumerate(lines, 1):
        _, comment = split_comment(text)
        if comment is None:
            continue
        body = comment.strip()
        if body.startswith("RUN:") or pending:
            if not body.startswith("RUN:"):
                lit.problems.append(f"{path.name}:{pending[0]}: RUN line ends with '\\' "
                                    f"but line {no} is no RUN line")
                pending = None
                continue
            cmd = body[4:].strip()
            start, prev = pending if pending else (no, "")
            cmd = prev + " " + cmd if prev else cmd
            if cmd.endswith("\\"):
                pending = (start, cmd[:-1].rstrip())
                continue
            pending = None
            run = parse_run(path, start, SUBST.sub(lambda m: subst[m.group(1)], cmd), lit.problems)
            if run:
                lit.runs.append(run)
            continue
        m = ANNOTATION.search(body)
        if m:
            full = ANNOTATION_FULL.match(body, m.start())
            if not full:
                lit.problems.append(f"{path.name}:{no}: malformed annotation '{body}' (expected-finding or "
                                    "expected-error, optional @+N/@-N and :COL, then {{...}} texts)")
                continue
            target = no + int(full.group("off") or 0)
            texts = [t.strip() for t in re.findall(r"\{\{(.*?)\}\}", full.group("texts"))]
            col = int(full.group("col")) if full.group("col") else None
            exp = Expectation(full.group("what"), no, target, col, texts, body[m.start():])
            if target not in code_lines:
                lit.problems.append(f"{exp.where(path)}: line {target} has no code to describe")
            elif exp.what == "error" and len(texts) != 1:
                lit.problems.append(f"{exp.where(path)}: expected-error takes one {{{{message}}}}")
            else:
                lit.expectations.append(exp)
            continue
        c = CHECK_LINE.match(body)
        if c:
            lit.check_prefixes.setdefault(c.group("prefix"), no)
    if pending:
        lit.problems.append(f"{path.name}:{pending[0]}: RUN line ends with '\\' at the end of the file")
    if not lit.runs and not lit.problems:
        lit.problems.append(f"{path.name}: no RUN line")
    read = set()
    for r in lit.runs:
        if r.filecheck is not None:
            read |= filecheck_prefixes(r.filecheck)
    for prefix, no in lit.check_prefixes.items():
        if prefix not in read:
            lit.problems.append(f"{path.name}:{no}: check prefix '{prefix}' is read by no RUN line's "
                                "FileCheck")
    return lit


def filecheck_prefixes(args: list[str]) -> set[str]:
    """The prefixes FileCheck reads with these arguments (CHECK unless --check-prefix(es) is given)."""
    out: set[str] = set()
    i = 0
    while i < len(args):
        a = args[i].lstrip("-")
        for opt in ("check-prefix", "check-prefixes"):
            if a == opt and i + 1 < len(args):
                out |= set(args[i + 1].split(","))
                i += 1
            elif a.startswith(opt + "="):
                out |= set(a[len(opt) + 1:].split(","))
        i += 1
    return out or {"CHECK"}


def parse_run(path: Path, no: int, cmd: str, problems: list[str]) -> Run | None:
    try:
        words = shlex.split(cmd)
    except ValueError as e:
        problems.append(f"{path.name}:{no}: RUN line: {e}")
        return None
    filecheck = None
    if "|" in words:
        k = words.index("|")
        words, filecheck = words[:k], words[k + 1:]
        if not filecheck or filecheck[0] != "FileCheck" or "|" in filecheck:
            problems.append(f"{path.name}:{no}: RUN line: only '| FileCheck ARGS' may follow the command")
            return None
        filecheck = filecheck[1:]
    merge = bool(words) and words[-1] == "2>&1"
    if merge:
        words = words[:-1]
    if len(words) < 2 or words[0] != tilescope_bin() or words[1] != "run":
        problems.append(f"{path.name}:{no}: RUN line must be '%tilescope run ...'")
        return None
    shellish = [w for w in words if w in (">", "<", ";", "&&", "||", "&", "2>&1") or w.startswith(">")]
    if shellish or "--json" in words or "--color" in words:
        problems.append(f"{path.name}:{no}: RUN line: no shell syntax and no --json/--color "
                        "(the runner adds them)")
        return None
    return Run(no, words, merge, filecheck)


def describe(f: dict) -> str:
    t = f.get("ttir") or {}
    return f"{f['kind']} at line {t.get('line')}:{t.get('col')} ({f.get('op')}): {f.get('summary')}"


def finding_matches(e: Expectation, f: dict) -> bool:
    t = f.get("ttir") or {}
    return (f["kind"] == e.texts[0] and t.get("line") == e.target and (e.col is None or t.get("col") == e.col)
            and all(s in f.get("summary", "") for s in e.texts[1:]))


def check_run(lit: LitFile, run: Run, tmp: Path, index: int) -> list[str]:
    """Problems of one RUN line against the file's expectations (empty: it passed)."""
    path = lit.path
    json_path = tmp / f"findings-{index}.json"
    if json_path.exists():
        json_path.unlink()
    argv = run.argv + ["--json", str(json_path), "--color", "never"]
    proc = subprocess.run(argv, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT if run.merge_stderr else subprocess.PIPE,
                          cwd=path.parent, timeout=TIMEOUT_S)
    stdout = proc.stdout.decode(errors="replace")
    stderr = "" if run.merge_stderr else proc.stderr.decode(errors="replace")
    problems: list[str] = []
    errors = [e for e in lit.expectations if e.what == "error"]
    wanted = [e for e in lit.expectations if e.what == "finding"]
    want_rc = 2 if errors else 1 if wanted else 0
    if proc.returncode != want_rc:
        problems.append(f"exit status {proc.returncode}, expected {want_rc}")

    # Located errors: "FILE:LINE:COL: MESSAGE" for this file, anywhere in the error output.
    located = [(int(m.group(1)), int(m.group(2)), m.group(3))
               for m in re.finditer(re.escape(str(path)) + r":(\d+):(\d+): (.*)", stderr or stdout)]
    for e in errors:
        hit = next((x for x in located if x[0] == e.target and (e.col is None or x[1] == e.col)
                    and e.texts[0] in x[2]), None)
        if hit:
            located.remove(hit)
        else:
            problems.append(f"{e.where(path)}: no such error at line {e.target}")
    for line, col, msg in located:
        problems.append(f"unexpected error at line {line}:{col}: {msg}")

    findings: list[dict] = []
    if json_path.exists():
        findings = json.loads(json_path.read_text())
    elif proc.returncode != 2:
        problems.append("tilescope wrote no findings JSON")
    unmatched = list(findings)
    # The most specific expectations pick first, so a bare {{kind}} cannot take another's finding.
    for e in sorted(wanted, key=lambda e: -(len(e.texts) + (e.col is not None))):
        hit = next((f for f in unmatched if finding_matches(e, f)), None)
        if hit:
            unmatched.remove(hit)
        else:
            problems.append(f"{e.where(path)}: no such finding at line {e.target}")
    for f in unmatched:
        problems.append(f"unexpected finding: {describe(f)}")

    if run.filecheck is not None:
        fc = filecheck_bin()
        if fc is None:
            problems.append("FileCheck not found (make setup installs Debian's llvm-14-tools; "
                            "or set FILECHECK)")
        else:
            check = subprocess.run([fc] + run.filecheck, input=proc.stdout, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, timeout=TIMEOUT_S)
            if check.returncode != 0:
                problems.append("FileCheck failed:\n" + indent(check.stdout.decode(errors="replace")))

    if problems:
        problems.append(f"actual findings ({len(findings)}):"
                        + "".join(f"\n  {describe(f)}" for f in findings))
        problems.append("stdout" + (" and stderr" if run.merge_stderr else "") + ":\n" + indent(stdout))
        if not run.merge_stderr:
            problems.append("stderr:\n" + indent(stderr))
    return problems


def indent(text: str, limit: int = 6000) -> str:
    if len(text) > limit:
        text = text[:limit] + f"\n... ({len(text) - limit} more characters)"
    return "".join("    " + l + "\n" for l in text.splitlines()) or "    (empty)\n"


def run_lit_file(path: Path, tmp: Path) -> list[str]:
    """Every problem of one lit file (empty: it passed). Each RUN line's problems are headed by it."""
    lit = parse(path, tmp)
    if lit.problems:
        return lit.problems
    out: list[str] = []
    for i, run in enumerate(lit.runs):
        problems = check_run(lit, run, tmp, i)
        if problems:
            shown = " ".join(shlex.quote(a) for a in run.argv)
            out.append(f"{path.name}:{run.line}: RUN: {shown}" + (" 2>&1" if run.merge_stderr else "")
                       + (" | FileCheck " + " ".join(run.filecheck) if run.filecheck is not None else ""))
            out.extend(problems)
    return out


LIT_FILES = sorted(LIT_DIR.glob("*.ttir"))


def test_lit_directory_has_cases():
    assert len(LIT_FILES) >= 20, f"tests/lit holds {len(LIT_FILES)} .ttir files"


@pytest.mark.parametrize("path", LIT_FILES, ids=[p.name for p in LIT_FILES])
def test_lit(path: Path, tmp_path: Path):
    problems = run_lit_file(path, tmp_path)
    assert not problems, "\n".join(problems)


# The runner's own tests: a small kernel that passes as written, and edits of it that each must make
# the runner report a problem, so a wrong or mistyped expectation can never pass silently.
# x has 12 elements and the unmasked load reads 16: one out-of-bounds-load, offsets 12..15; the print
# shows lane 3 of x = arange(12) as Triton's %f prints 3.0.
SELF_TEST = """// RUN: %tilescope run %s --arg x_ptr=f32[12]:arange --arg out_ptr=f32[16]:zeros | FileCheck %s
module {
  tt.func public @k(%x_ptr: !tt.ptr<f32>, %out_ptr: !tt.ptr<f32>) attributes {noinline = false} {
    %offs = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %x = tt.splat %x_ptr : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %x_0 = tt.addptr %x, %offs : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    // expected-finding@+1 {{out-of-bounds-load}} {{element offsets 12..15}}
    %x_1 = tt.load %x_0 : tensor<16x!tt.ptr<f32>>
    // CHECK: x: 3.000000
    tt.print " x: " {hex = false, isSigned = array<i32: 0>} : %x_1 : tensor<16xf32>
    %o = tt.splat %out_ptr : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %o_2 = tt.addptr %o, %offs : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    tt.store %o_2, %x_1 : tensor<16x!tt.ptr<f32>>
    tt.return
  }
}
"""
FINDING = "// expected-finding@+1 {{out-of-bounds-load}} {{element offsets 12..15}}"
LOAD = "%x_1 = tt.load %x_0 : tensor<16x!tt.ptr<f32>>"
STORE = "tt.store %o_2, %x_1 : tensor<16x!tt.ptr<f32>>"

# (id, text to replace, replacement, a piece of the report the runner must give)
SELF_TEST_EDITS = [
    ("finding-on-wrong-line", FINDING, FINDING.replace("@+1", "@-1"), "no such finding at line 6"),
    ("finding-wrong-kind", FINDING, FINDING.replace("-load", "-store"), "no such finding at line 8"),
    ("finding-wrong-summary", FINDING, FINDING.replace("12..15", "12..14"), "no such finding at line 8"),
    ("finding-wrong-column", FINDING, FINDING.replace("@+1", "@+1:9"), "no such finding at line 8"),
    ("finding-not-annotated", "    " + FINDING + "\n", "",
     "unexpected finding: out-of-bounds-load at line 7:5"),
    ("finding-never-reported", STORE, "// expected-finding@+1 {{null-pointer}}\n    " + STORE,
     "no such finding at line 14"),
    ("check-line-wrong", "CHECK: x: 3.000000", "CHECK: x: 3.500000", "FileCheck failed"),
    ("check-line-unread", " | FileCheck %s", "", "check prefix 'CHECK' is read by no RUN line's FileCheck"),
    ("annotation-aimed-at-comment", FINDING, FINDING.replace("@+1", "@+2"), "line 9 has no code"),
    ("annotation-without-braces", FINDING, FINDING.replace("{{out-of-bounds-load}}", "out-of-bounds-load"),
     "malformed annotation"),
    ("annotation-unknown", FINDING, FINDING.replace("expected-finding", "expected-warning"),
     "malformed annotation"),
    ("no-run-line", "// RUN:", "// no run:", "no RUN line"),
    ("error-never-raised", STORE, "// expected-error@+1 {{bad store}}\n    " + STORE,
     "exit status 1, expected 2"),
    ("error-not-annotated", LOAD, LOAD.replace("%x_0", "%nope"),
     "unexpected error at line 8:20: use of undefined"),
    ("error-wrong-message", FINDING + "\n    " + LOAD,
     "// expected-error@+1 {{unknown op}}\n    " + LOAD.replace("%x_0", "%nope"), "no such error at line 8"),
]


def write_self_test(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "self_test.ttir"
    path.write_text(text)
    return path


def test_runner_passes_the_unedited_self_test(tmp_path):
    assert run_lit_file(write_self_test(tmp_path, SELF_TEST), tmp_path) == []


@pytest.mark.parametrize("old,new,report", [e[1:] for e in SELF_TEST_EDITS],
                         ids=[e[0] for e in SELF_TEST_EDITS])
def test_runner_fails_a_wrong_expectation(tmp_path, old, new, report):
    assert SELF_TEST.count(old) == 1
    problems = run_lit_file(write_self_test(tmp_path, SELF_TEST.replace(old, new)), tmp_path)
    text = "\n".join(problems)
    assert problems and report in text, text


def test_runner_failure_shows_the_actual_findings(tmp_path):
    path = write_self_test(tmp_path, SELF_TEST.replace("    " + FINDING + "\n", ""))
    text = "\n".join(run_lit_file(path, tmp_path))
    assert "actual findings (1):" in text
    assert "out-of-bounds load from 'x_ptr' (12 elements): element offsets 12..15" in text
    assert "stderr:" in text and "error[out-of-bounds-load]" in text


if __name__ == "__main__":
    failed = 0
    for arg in sys.argv[1:] or [str(p) for p in LIT_FILES]:
        with tempfile.TemporaryDirectory() as d:
            problems = run_lit_file(Path(arg).resolve(), Path(d))
        print(("FAIL " if problems else "PASS ") + arg)
        for p in problems:
            print(p)
        failed += bool(problems)
    sys.exit(1 if failed else 0)
