"""tilescope.gen(): the LLM kernel generator from Python (README "The kernel generator").

It runs the `tilescope gen` command (the generator is C++: src/generate) and returns what it wrote:

    r = tilescope.gen("softmax over each row", reference="ref.py", base_url="http://127.0.0.1:8080/v1")
    if r.passed:
        print(r.python)            # the Triton Python of the correct, sanitizer-clean kernel
    r.report["attempts"][0]["feedback"]
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess


class GenError(Exception):
    """The generation could not run: a bad task file or option, no answer from the model's server, or a
    broken installation. The message is the command's."""


@dataclasses.dataclass
class GenResult:
    passed: bool  # a kernel that is correct at every size and has no sanitizer, race or uninit finding
    out: str  # the folder of the files below and the attempts
    report: dict  # report.json: every attempt with its stages, feedback, tokens and time
    kernel_json: str | None  # paths, or None when no attempt got that far
    kernel_ttir: str | None
    kernel_py: str | None

    @property
    def python(self) -> str | None:
        """The Triton Python source of the answer (the @triton.jit kernel and its launcher)."""
        if self.kernel_py is None:
            return None
        with open(self.kernel_py) as f:
            return f.read()


def gen(description: str | None = None, *, reference: str | None = None, task: str | None = None,
        sizes: list | None = None, out: str | None = None, attempts: int = 3, decoding: str = "auto",
        max_tokens: int = 4096, temperature: float | None = None, max_ops: int = 96, seed: int = 0,
        base_url: str | None = None, model: str | None = None, timeout: float | None = None,
        progress: bool = True) -> GenResult:
    """Ask a model (any OpenAI-compatible server: the LLM settings, README "LLM settings", or `base_url` and
    `model`) for a kernel that does what `reference` (a task file, docs/gen-tasks.md) or the suite's `task`
    computes, repaired from tilescope's located feedback up to `attempts` times. `description` replaces the
    task file's. `sizes`: dicts that replace the task's sizes. `progress`: the command's progress lines on
    stderr. Raises GenError when the generation cannot run (not when the model fails: see `passed`)."""
    import sys
    import tempfile
    import threading

    from .__main__ import binary

    if (reference is None) == (task is None):
        raise GenError("tilescope.gen: give reference= (a task file) or task= (a task of the suite)")
    if sizes is not None and (not isinstance(sizes, (list, tuple)) or not all(isinstance(x, dict) for x in sizes)):
        raise GenError(f"tilescope.gen: sizes= is a list of dicts (such as [{{'n': 1000}}]), not {sizes!r}")
    cmd = [binary(), "gen"]
    cmd += ["--reference", os.fspath(reference)] if reference is not None else ["--task", str(task)]
    for x in sizes or []:
        cmd += ["--sizes", json.dumps(x)]
    if out:
        cmd += ["-o", os.fspath(out)]
    cmd += ["--attempts", str(attempts), "--decoding", str(decoding), "--max-tokens", str(max_tokens),
            "--max-ops", str(max_ops), "--seed", str(seed), "--json"]
    if temperature is not None:
        cmd += ["--temperature", str(temperature)]
    for flag, value in (("--base-url", base_url), ("--model", model), ("--timeout", timeout)):
        if value is not None:
            cmd += [flag, str(value)]
    if description:
        cmd += ["--", str(description)]  # a description that starts with "-" is not an option
    env = dict(os.environ)
    env.setdefault("TILESCOPE_PYTHON", sys.executable)
    with tempfile.TemporaryFile("w+") as stdout:
        p = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE, text=True, env=env)
        lines = []

        def relay():  # the command's progress, shown as it comes (progress=True) and kept for the error
            for line in p.stderr:
                lines.append(line)
                if progress:
                    sys.stderr.write(line)
                    sys.stderr.flush()

        t = threading.Thread(target=relay, daemon=True)
        t.start()
        rc = p.wait()
        t.join()
        stdout.seek(0)
        text = stdout.read()
    errors = [ln.strip() for ln in lines if ln.startswith("tilescope:") and "error" in ln]
    if rc not in (0, 1):
        why = errors[-1] if errors else "".join(lines[-5:]).strip() or f"exit status {rc}"
        raise GenError(f"tilescope gen failed: {why}")
    try:
        report = json.loads(text)
    except ValueError:
        raise GenError(f"tilescope gen printed no report (exit status {rc}): {''.join(lines[-5:]).strip()}") from None
    folder = report["out"]

    def path(name):
        return os.path.join(folder, name) if name in report.get("files", []) else None

    return GenResult(bool(report["passed"]), folder, report, path("kernel.json"), path("kernel.ttir"),
                     path("kernel.py"))
