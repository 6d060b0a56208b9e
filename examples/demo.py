"""`make demo` (also `tilescope demo`): what tilescope does, in the order a new user wants to see it.

1. The sanitizer on unmodified Triton programs: each bundled buggy example (examples/buggy_*.py) runs
   under `tilescope sanitize -- python examples/buggy_x.py` on the CPU; the program runs to its end
   with real outputs, and tilescope reports each bug with its kind, source line, buffer and offsets.
   A correct example shows what a clean run looks like (zero findings, exit status 0).
2. Under the hood, the engine: Triton-made TTIR run with `tilescope run`, outputs checked against numpy,
   then a buggy launch and an op the CPU cannot run.
3. NKI (AWS Trainium) kernels on the same engine: unmodified `import nki` programs (examples/nki_*.py,
   buggy_nki_*.py) under `tilescope sanitize`, and two constraints the NKI compiler checks
   (examples/error_nki_matmul_dst_in_sbuf.py, error_nki_psum_overflow.py), reported at their lines; the
   NKI profile (an estimated NeuronCore timeline).

Options: --quick (only the sanitizer part, first three buggy examples), --only NAME (one example).
"""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
TTIR = ROOT / "tests" / "ttir"
EXAMPLES = Path(__file__).resolve().parent
BIN = os.environ.get("TILESCOPE_BIN", str(ROOT / "build" / "tilescope"))
TTY = sys.stdout.isatty()


def banner(text: str) -> None:
    bar = "=" * 78
    print(f"\n{bar}\n{text}\n{bar}" if not TTY else f"\n\x1b[1m{bar}\n{text}\n{bar}\x1b[0m")


def docstring_summary(path: Path) -> tuple[str, str]:
    """(title, the "The bug (line N, ...)" paragraph) from an example's docstring."""
    import ast

    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    paras = [" ".join(p.split()) for p in doc.split("\n\n")]
    bug = next((p[p.index("The bug"):] for p in paras if "The bug" in p), "")
    title = paras[0].removeprefix("BUGGY: ") if paras else path.name
    return title, bug


def introduce(path: Path) -> None:
    """The example's banner: its title, and its bug's paragraph when it has one."""
    title, bug = docstring_summary(path)
    banner(f"{path.name}: {title}")
    if bug:
        print(textwrap.fill(bug, 100))
        print()


def expected(path: Path) -> set[tuple[str, int]]:
    """(kind, line) for each `expect: KIND` marker comment in an example (what tilescope should report)."""
    import re

    out = set()
    for i, line in enumerate(path.read_text().splitlines(), 1):
        m = re.search(r"#.*\bexpect:\s*([a-z0-9, -]+)$", line.rstrip())
        if m:
            out |= {(k.strip(), i) for k in m.group(1).split(",")}
    return out


def sanitize_example(path: Path) -> tuple[bool, str]:
    """Run one example under `tilescope sanitize`, show its output and the report; compare with its markers."""
    import json

    rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "findings.json"
        args = [BIN, "sanitize", "--color", "always" if TTY else "never", "--json", str(out), "--",
                sys.executable, str(rel)]
        print(f"$ tilescope sanitize -- python {rel}")
        p = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
        for line in p.stdout.strip().splitlines():
            print(f"  | {line}")
        print(p.stderr.rstrip())
        found = json.loads(out.read_text()) if out.exists() else None
    if found is None:
        return False, f"no report (exit status {p.returncode})"
    got = {(f["kind"], f["line"]) for f in found}
    want = expected(path)
    clean = not want
    ok = got == want and p.returncode == (0 if clean else 1)
    kinds = ", ".join(sorted({k for k, _ in got})) or "no findings"
    return ok, f"{kinds}" + ("" if ok else f"  (expected {sorted(want)}, got {sorted(got)}, exit {p.returncode})")


def sanitizer_part(only: str | None, quick: bool) -> list[tuple[str, bool, str]]:
    buggy = sorted(p for p in EXAMPLES.glob("buggy_*.py") if not p.name.startswith("buggy_nki_"))
    if only:
        buggy = [p for p in sorted(EXAMPLES.glob("buggy_*.py")) if p.stem == only or p.name == only]
    elif quick:
        buggy = buggy[:3]
    banner("1. tilescope sanitize: unmodified Triton programs with memory bugs, on the CPU")
    print("Each example below is an ordinary Triton program (torch CPU tensors, kernel[grid](...)).")
    print("tilescope captures every launch, runs it on its CPU engine, and reports each bug.")
    results = []
    for path in buggy:
        introduce(path)
        results.append((path.name, *sanitize_example(path)))
    if not only:
        banner("A correct kernel: zero findings, exit status 0")
        results.append(("softmax.py", *sanitize_example(EXAMPLES / "softmax.py")))
    return results


def summary(results) -> bool:
    banner("Summary: what tilescope sanitize found in each example")
    for name, ok, what in results:
        print(f"  {'ok ' if ok else 'BAD'}  {name:38s} {what}")
    print("\nEach finding names the kind, the Python line, the buffer and how far outside it the access")
    print("went. Try your own program: tilescope sanitize -- python your_script.py (or -- pytest ...).")
    return all(ok for _, ok, _ in results)


def run(args: list[str]) -> subprocess.CompletedProcess:
    shown = " ".join(shlex.quote(a) for a in ["tilescope"] + args[1:])
    print(f"\n$ {shown}")
    p = subprocess.run(args, capture_output=True, text=True)
    for line in (p.stdout + p.stderr).strip().splitlines():
        print(f"  {line}")
    print(f"  (exit status {p.returncode})")
    return p


def check(name: str, got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> bool:
    ok = np.allclose(got, want, rtol=rtol, atol=atol)
    err = float(np.max(np.abs(got.astype(np.float64) - want)))
    print(f"  {name}: {'matches numpy' if ok else 'DOES NOT MATCH numpy'} (max abs error {err:.3g})")
    return ok


def engine_part() -> bool:
    if not (TTIR / "add.ttir").exists():
        print("\n(the engine part needs the repository's tests/ttir folder; skipped)")
        return True
    banner("2. Under the hood: the engine runs Triton-made TTIR (tilescope run), checked against numpy")
    rng = np.random.default_rng(0)
    ok = True
    with tempfile.TemporaryDirectory() as d:
        t = Path(d)
        # 1. vector add, 4096 elements, 32 programs of 128 lanes
        x, y = rng.standard_normal(4096, np.float32), rng.standard_normal(4096, np.float32)
        np.save(t / "x.npy", x)
        np.save(t / "y.npy", y)
        p = run([BIN, "run", str(TTIR / "add.ttir"), "--grid", "32", "--arg", f"x_ptr={t/'x.npy'}",
                 "--arg", f"y_ptr={t/'y.npy'}", "--arg", "out_ptr=f32[4096]:zeros", "--arg", "n=i32:4096",
                 "--save", f"out_ptr={t/'out.npy'}", "--time"])
        ok &= p.returncode == 0 and check("add", np.load(t / "out.npy"), x + y, 0, 0)

        # 2. row softmax, 64 rows of 100
        xs = (rng.standard_normal((64, 100)) * 3).astype(np.float32)
        np.save(t / "xs.npy", xs)
        p = run([BIN, "run", str(TTIR / "softmax.ttir"), "--grid", "64", "--arg", f"x_ptr={t/'xs.npy'}",
                 "--arg", "y_ptr=f32[64x100]:zeros", "--arg", "n_cols=i32:100", "--arg", "stride=i32:100",
                 "--save", f"y_ptr={t/'ys.npy'}"])
        e = np.exp(xs - xs.max(axis=1, keepdims=True))
        ok &= p.returncode == 0 and check("softmax", np.load(t / "ys.npy"), e / e.sum(axis=1, keepdims=True),
                                          1e-5, 1e-6)

        # 3. matmul, fp16 inputs, fp32 accumulate, 2x2 programs of 32x32 tiles with a K loop
        a = rng.standard_normal((64, 80)).astype(np.float16)
        b = rng.standard_normal((80, 48)).astype(np.float16)
        np.save(t / "a.npy", a)
        np.save(t / "b.npy", b)
        strides = ["M=i32:64", "N=i32:48", "K=i32:80", "sam=i32:80", "sak=i32:1", "sbk=i32:48", "sbn=i32:1",
                   "scm=i32:48", "scn=i32:1"]
        p = run([BIN, "run", str(TTIR / "matmul_f16.ttir"), "--grid", "2,2", "--arg", f"a_ptr={t/'a.npy'}",
                 "--arg", f"b_ptr={t/'b.npy'}", "--arg", "c_ptr=f32[64x48]:zeros",
                 *[x for s in strides for x in ("--arg", s)], "--save", f"c_ptr={t/'c.npy'}"])
        ok &= p.returncode == 0 and check("matmul", np.load(t / "c.npy"),
                                          a.astype(np.float64) @ b.astype(np.float64), 1e-4, 1e-4)

        # 4. a buggy launch: n says 4200 but the buffers hold 4096, and the grid covers 4224
        print("\nA buggy launch: n=4200 for 4096-element buffers. tilescope reports each access site with")
        print("its TTIR and Python locations; nothing outside the buffers is read or written.")
        p = run([BIN, "run", str(TTIR / "add.ttir"), "--grid", "33", "--arg", f"x_ptr={t/'x.npy'}",
                 "--arg", f"y_ptr={t/'y.npy'}", "--arg", "out_ptr=f32[4096]:zeros", "--arg", "n=i32:4200"])
        ok &= p.returncode == 1 and "out-of-bounds" in p.stderr

        # 5. inline PTX: a supported instruction runs; an unsupported one is a located error
        print("\nInline PTX (tl.inline_asm_elementwise) runs when it stays inside the evaluated subset")
        print("(README, \"Inline PTX\"); anything else is a located error before the launch, not a crash.")
        p = run([BIN, "run", str(TTIR / "inline_asm.ttir"), "--arg", "x_ptr=i32[32]:arange",
                 "--arg", "y_ptr=i32[32]:zeros", "--save", f"y_ptr={t/'asm.npy'}"])
        ok &= p.returncode == 0 and check("inline_asm (mov.b32: y = x)", np.load(t / "asm.npy"),
                                          np.arange(32, dtype=np.int32), 0, 0)
        p = run([BIN, "run", str(ROOT / "tests" / "lit" / "error_inline_asm_unsupported.ttir"), "--grid", "1",
                 "--arg", "x_ptr=i32[8]:arange"])
        ok &= p.returncode == 2 and "unsupported PTX instruction" in p.stderr
    return ok


def profile_part() -> bool:
    """`tilescope profile` on a correct example, recorded into a trace: what it moves and computes, as a GPU
    would see it, then the trace's summary (`tilescope show`)."""
    banner("tilescope profile: bytes, sectors, FLOPs and a roofline per launch and per Python line")
    rel = "examples/matmul.py"
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "demo.tstrace")
        args = [BIN, "profile", "--gpu", "H100", "--top", "3", "--trace", trace, "--", sys.executable, rel]
        print(f"$ tilescope profile --gpu H100 --top 3 --trace demo.tstrace -- python {rel}")
        p = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
        for line in p.stdout.strip().splitlines():
            print(f"  | {line}")
        print(p.stderr.rstrip())
        print("\nCounts are exact (every program runs); sectors follow Triton's layouts (bench/PROFILE.md compares")
        print("them with an H200). Also: tilescope profile --json p.json -- python your_script.py.")
        banner("tilescope show: the trace of that run (every launch, its accesses and its profile)")
        print("$ tilescope show demo.tstrace")
        s = subprocess.run([BIN, "show", trace], capture_output=True, text=True, cwd=ROOT)
        print(s.stdout.rstrip() or s.stderr.rstrip())
        print("\nOpen a trace in the browser with `tilescope view demo.tstrace`, replay a launch with `tilescope replay`.")
    return p.returncode == 0 and "hottest lines" in p.stderr and s.returncode == 0 and "launch" in s.stdout


def nki_part() -> list[tuple[str, bool, str]]:
    """NKI kernels under `tilescope sanitize`: a correct one, the buggy ones, and a compiler-style error."""
    banner("3. NKI kernels (AWS Trainium) on the same engine: unmodified `import nki` programs, on the CPU")
    print("`import nki` is tilescope's NKI under tilescope sanitize: each nki.isa call is checked against the")
    print("documented constraints and runs on the engine, with the same sanitizer, race detector and")
    print("uninitialized-memory analysis as Triton kernels.")
    results = []
    for path in [EXAMPLES / "nki_rmsnorm.py", *sorted(EXAMPLES.glob("buggy_nki_*.py"))]:
        introduce(path)
        results.append((path.name, *sanitize_example(path)))
    # The profile: a NeuronCore model, not the GPU roofline (README "NKI profile").
    rel = (EXAMPLES / "nki_rmsnorm.py").relative_to(ROOT)
    print(f"\n$ tilescope profile -- python {rel}   # the estimated engine timeline and DMA traffic")
    p = subprocess.run([BIN, "profile", "--", sys.executable, str(rel)], capture_output=True, text=True, cwd=ROOT)
    shown = [l for l in p.stderr.splitlines() if l.startswith(("kernel ", "  "))][:8]
    print("\n".join("  " + l for l in shown))
    results.append(("profile " + rel.name, p.returncode == 0 and any("estimated time" in l for l in shown),
                    "instructions per engine, DMA bytes, an estimated timeline"))
    # Two of the constraint errors (memory placement, PSUM capacity); test_examples runs all error_nki_*.py.
    for path in [EXAMPLES / "error_nki_matmul_dst_in_sbuf.py", EXAMPLES / "error_nki_psum_overflow.py"]:
        introduce(path)
        rel = path.relative_to(ROOT)
        print(f"$ tilescope sanitize -- python {rel}")
        p = subprocess.run([BIN, "sanitize", "--color", "never", "--", sys.executable, str(rel)], capture_output=True,
                           text=True, cwd=ROOT)
        err = [l for l in p.stderr.splitlines() if "NkiError:" in l]
        print("  " + (err[-1].split("NkiError: ", 1)[1] if err else p.stderr.strip()[-400:]))
        results.append((path.name, p.returncode != 0 and bool(err), "stopped at its line with the rule it breaks"
                        if err else f"no NKI error (exit status {p.returncode})"))
    return results


def gen_part() -> list[tuple[str, bool, str]]:
    """The kernel generator's evaluation, without a model: our own kernel ASTs of three tasks through every
    stage, one of them broken on purpose to show the feedback a model would get, and the Triton Python."""
    banner("4. The LLM kernel generator: every reply proven on the CPU against a PyTorch reference")
    print("A model answers with a kernel AST under a JSON Schema; each reply is validated, lowered to TTIR,")
    print("compiled by Triton, run at every size against the task's PyTorch reference under the sanitizer,")
    print("and what fails goes back to the model, located. Here, the suite's own ASTs stand in for replies.")
    import json

    results = []
    with tempfile.TemporaryDirectory() as tmp:
        args = [BIN, "gen", "eval", "--fixtures", "--tasks", "vector_add,row_softmax,matmul_bias_relu", "-o", tmp]
        p = run(args)
        results.append(("gen eval --fixtures (3 tasks)", p.returncode == 0, "every stage passed, round trip exact"))
        suite = Path(tmp) / "suite"
        suite.mkdir()
        (suite / "vector_add.py").write_text((ROOT / "tasks" / "vector_add.py").read_text())
        doc = json.loads((ROOT / "tasks" / "vector_add.json").read_text())
        for op in doc["ops"]:
            if op["op"] == "load":
                op["operands"] = [x for x in op["operands"] if x != "mask"]
        (suite / "vector_add.json").write_text(json.dumps(doc))
        print("\nThe same task with the masks of its loads removed, as a model might write it:")
        p = run([BIN, "gen", "eval", "--fixtures", "--suite", str(suite), "-o", str(Path(tmp) / "bad")])
        results.append(("gen eval --fixtures (loads unmasked)", p.returncode == 1 and "out-of-bounds-load" in p.stderr,
                        "the out-of-bounds loads, at their ops"))
        q = subprocess.run([BIN, "gen", "python", str(ROOT / "tasks" / "row_softmax.json")], capture_output=True,
                           text=True)
        print("\n$ tilescope gen python tasks/row_softmax.json   # the AST as Triton Python (first lines)")
        lines = q.stdout.splitlines()
        at = next((i for i, l in enumerate(lines) if l.startswith("@triton.jit")), 0)
        print("\n".join("  " + l for l in lines[at:at + 10]))
        results.append(("gen python row_softmax", q.returncode == 0 and "@triton.jit" in q.stdout, "Triton Python"))
    print("\nWith a model: tilescope gen --task row_softmax --base-url http://127.0.0.1:8080/v1 (README, \"The kernel")
    print("generator\"); tilescope gen eval --baseline compares it with the same model writing Triton Python.")
    return results


def main() -> int:
    import argparse

    ap = argparse.ArgumentParser(description="tilescope demo")
    ap.add_argument("--quick", action="store_true", help="only the sanitizer part, three buggy examples")
    ap.add_argument("--only", help="run one example (a file name in examples/)")
    a = ap.parse_args()
    results = sanitizer_part(a.only, a.quick)
    ok = True
    if not (a.quick or a.only):
        ok &= engine_part()
        ok &= profile_part()
        results += nki_part()
        results += gen_part()
    ok &= summary(results)
    print("\ndemo:", "all steps behaved as expected" if ok else "SOMETHING WENT WRONG")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
