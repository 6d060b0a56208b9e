"""Run a TTIR fixture through the `tilescope run` CLI and read back its outputs (shared by the tests)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
TTIR_DIR = os.path.join(ROOT, "tests", "ttir")
sys.path.insert(0, TTIR_DIR)
import fixture_data as fd  # noqa: E402


def tilescope_bin() -> str:
    return os.environ.get("TILESCOPE_BIN") or os.path.join(ROOT, "build", "tilescope")


def manifest() -> dict:
    with open(os.path.join(TTIR_DIR, "manifest.json")) as f:
        return json.load(f)


def cases() -> list[tuple[str, dict, str]]:
    """(case id, fixture, .ttir file) for every runnable file: the fixture, its other targets and its
    asm["source"] form (block pointers and un-inlined helpers still present)."""
    out = []
    for fx in manifest()["fixtures"]:
        out.append((fx["name"], fx, fx["file"]))
        for v in fx["variants"]:
            out.append((v["file"][:-5], fx, v["file"]))
        if fx.get("source_file"):
            out.append((fx["name"] + ".source", fx, fx["source_file"]))
    return out


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str
    outputs: dict
    cmd: list

    def describe(self) -> str:
        return (f"$ {' '.join(self.cmd)}\nexit {self.returncode}\n--- stdout ---\n{self.stdout[-3000:]}\n"
                f"--- stderr ---\n{self.stderr[-3000:]}")


def run(fx: dict, tmp: str, ttir_file: str | None = None, inputs: dict | None = None, threads: int | None = None,
        extra: list | None = None, timeout: float = 300) -> Result:
    """Write every buffer as .npy (inputs from fixture_data unless given), run the CLI, and load every
    output and inout buffer it saved."""
    os.makedirs(tmp, exist_ok=True)
    bufs = inputs if inputs is not None else fd.make_inputs(fx)
    cmd = [tilescope_bin(), "run", os.path.join(TTIR_DIR, ttir_file or fx["file"]), "--kernel", fx["kernel"],
           "--grid", ",".join(str(g) for g in fx["grid"])]
    saved = {}
    for a in fx["args"]:
        name = a["name"]
        if a["kind"] == "scalar":
            v = a["value"]
            cmd += ["--arg", f"{name}={fd.TTIR_SCALAR[a['dtype']]}:{v!r}" if isinstance(v, float)
                    else f"{name}={fd.TTIR_SCALAR[a['dtype']]}:{v}"]
            continue
        path = os.path.join(tmp, f"in_{name}.npy")
        np.save(path, np.ascontiguousarray(bufs[name]))
        cmd += ["--arg", f"{name}={path}"]
        if a["role"] in ("out", "inout"):
            saved[name] = os.path.join(tmp, f"out_{name}.npy")
            cmd += ["--save", f"{name}={saved[name]}"]
    if threads is not None:
        cmd += ["--threads", str(threads)]
    cmd += extra or []
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    outs = {}
    for name, path in saved.items():
        if os.path.exists(path):
            outs[name] = np.load(path)
    return Result(p.returncode, p.stdout, p.stderr, outs, cmd)
