"""Run a TTIR fixture through the `tilescope run` CLI and read back its outputs (shared by the tests)."""
from __future__ import annotations

import json
import os
import re
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


# Corpora made by other Triton versions (tests/ttir/generate.py run with that Triton), beside the
# corpus of record (triton 3.6) in tests/ttir itself.
OTHER_VERSIONS = ("3.4", "3.9")


def version_dir(version: str | None) -> str:
    """"" for the corpus of record, "triton-X.Y" for another version (relative to TTIR_DIR)."""
    return "" if version is None else f"triton-{version}"


def manifest(version: str | None = None) -> dict:
    with open(os.path.join(TTIR_DIR, version_dir(version), "manifest.json")) as f:
        return json.load(f)


def cases(version: str | None = None) -> list[tuple[str, dict, str]]:
    """(case id, fixture, .ttir file relative to TTIR_DIR) for every runnable file: the fixture, its
    other targets and its asm["source"] form (block pointers and un-inlined helpers still present)."""
    out = []
    d = version_dir(version)
    pre = f"{version}/" if version else ""
    for fx in manifest(version)["fixtures"]:
        out.append((pre + fx["name"], fx, os.path.join(d, fx["file"])))
        for v in fx["variants"]:
            out.append((pre + v["file"][:-5], fx, os.path.join(d, v["file"])))
        if fx.get("source_file"):
            out.append((pre + fx["name"] + ".source", fx, os.path.join(d, fx["source_file"])))
    return out


def ttir_arg_names(path: str, kernel: str) -> list[str]:
    """SSA names of the kernel's arguments, in order, as the TTIR file prints them."""
    text = open(path).read()
    m = re.search(r"tt\.func\s+public\s+@\"?" + re.escape(kernel) + r"\"?\(", text)
    if not m:
        return []
    names, depth, i = [], 1, m.end()
    start = i
    while i < len(text) and depth:  # the argument list, up to its closing parenthesis
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        i += 1
    return re.findall(r"%([A-Za-z_$.\-][\w$.\-]*|\d+)\s*:", text[start:i])


def cli_arg_names(fx: dict, path: str) -> dict[str, str]:
    """fixture argument name -> name to pass to --arg. Triton <= 3.4 prints no Python names: the
    arguments are %arg0, %arg1, ... (reference §0.4), so bind those by position."""
    names = ttir_arg_names(path, fx["kernel"])
    mine = [a["name"] for a in fx["args"]]
    if len(names) == len(mine) and all(re.fullmatch(r"arg\d+", n) for n in names):
        return dict(zip(mine, names))
    return {n: n for n in mine}


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
        extra: list | None = None, timeout: float = 300, poison: bool = False) -> Result:
    """Write every buffer as .npy (inputs from fixture_data unless given), run the CLI, and load every
    output and inout buffer it saved. `poison`: keep the sanitizer's undefined-value / int32-overflow /
    division-by-zero analyses on (off by default here: edge fixtures divide by zero on purpose, and the
    output tests want exit status 0 for them; out-of-bounds and asserts are always reported)."""
    os.makedirs(tmp, exist_ok=True)
    bufs = inputs if inputs is not None else fd.make_inputs(fx)
    ttir_path = os.path.join(TTIR_DIR, ttir_file or fx["file"])
    cmd = [tilescope_bin(), "run", ttir_path, "--kernel", fx["kernel"],
           "--grid", ",".join(str(g) for g in fx["grid"])]
    as_cli = cli_arg_names(fx, ttir_path)
    saved = {}
    for a in fx["args"]:
        name = a["name"]
        cname = as_cli[name]
        if a["kind"] == "scalar":
            v = a["value"]
            cmd += ["--arg", f"{cname}={fd.TTIR_SCALAR[a['dtype']]}:{v!r}" if isinstance(v, float)
                    else f"{cname}={fd.TTIR_SCALAR[a['dtype']]}:{v}"]
            continue
        path = os.path.join(tmp, f"in_{name}.npy")
        np.save(path, np.ascontiguousarray(bufs[name]))
        cmd += ["--arg", f"{cname}={path}"]
        if a["role"] in ("out", "inout"):
            saved[name] = os.path.join(tmp, f"out_{name}.npy")
            cmd += ["--save", f"{cname}={saved[name]}"]
    if threads is not None:
        cmd += ["--threads", str(threads)]
    if not poison:
        cmd += ["--no-poison"]
    cmd += extra or []
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    outs = {}
    for name, path in saved.items():
        if os.path.exists(path):
            outs[name] = np.load(path)
    return Result(p.returncode, p.stdout, p.stderr, outs, cmd)
