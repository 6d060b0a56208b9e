"""tt.print text against an H200's: tilescope runs tests/lit/print_*.ttir with the arguments the GPU run
had (tests/gpu/print_reference.py) and must print exactly the GPU's lines (tests/gpu/data/print_h200.txt.gz).

Lines compare as sets: the GPU prints an element once per thread that holds it, in thread order,
tilescope once, row-major. Pointer values are compared as "0x<hex>" only (the addresses differ).
"""
from __future__ import annotations

import gzip
import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GPU_LINES = ROOT / "tests" / "gpu" / "data" / "print_h200.txt.gz"

# section of print_h200.txt.gz -> (tests/lit file, `tilescope run` arguments as the GPU launch had them)
CASES = {
    "index": ("print_index_width.ttir", ["--grid", "1"]),
    "scalar": ("print_scalar.ttir",
               ["--grid", "2,2,1", "--arg", "x_ptr=f32[1]:full=1.25", "--arg", "n=i64:-5000000000"]),
    "operands": ("print_operands.ttir", ["--grid", "1", "--arg", "x_ptr=f32[4]:arange"]),
    "hex": ("print_hex.ttir", ["--grid", "1"]),
    "dtypes": ("print_dtypes.ttir", ["--grid", "1", "--arg", "x_ptr=i32[4]:zeros"]),
}


def tilescope_bin() -> str:
    return os.environ.get("TILESCOPE_BIN") or str(ROOT / "build" / "tilescope")


def normalise(lines) -> set[str]:
    return {re.sub(r"ptr: 0x[0-9a-f]+$", "ptr: 0x<address>", line) for line in lines}


def gpu_sections() -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current = None
    with gzip.open(GPU_LINES, "rt") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("=== "):
                current = sections.setdefault(line[4:], [])
            elif current is not None and line.startswith("pid ("):
                current.append(line)
    return sections


@pytest.mark.parametrize("section", list(CASES))
def test_print_text_matches_the_gpu(section: str):
    lit, args = CASES[section]
    gpu = gpu_sections()[section]
    assert gpu, f"no GPU lines for {section}"
    proc = subprocess.run([tilescope_bin(), "run", str(ROOT / "tests" / "lit" / lit), *args],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    ours = [line for line in proc.stdout.splitlines() if line]
    assert len(ours) == len(set(ours)), "tilescope printed a line twice"
    assert normalise(ours) == normalise(gpu), (
        f"only tilescope: {sorted(normalise(ours) - normalise(gpu))[:10]}\n"
        f"only the GPU: {sorted(normalise(gpu) - normalise(ours))[:10]}")
