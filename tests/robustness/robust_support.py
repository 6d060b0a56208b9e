"""Helpers of the robustness suite: which `tilescope` to run, a clean environment, process checks.

The suite runs the command line as a user (or an attacker) would: subprocesses, signals, damaged
files, failing writes. Every run gets its own TMPDIR so that a leaked temporary directory is seen.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TTIR_DIR = ROOT / "tests" / "ttir"


def tilescope_bin() -> str:
    """TILESCOPE_BIN (make test sets it to build/tilescope), else the build tree's binary."""
    return os.environ.get("TILESCOPE_BIN") or str(ROOT / "build" / "tilescope")


def clean_env(tmp_path: Path, **extra: str) -> dict:
    """The environment without any TILESCOPE_* variable, with a private TMPDIR (tmp_path/tmpdir) and
    a private TTIR cache (tmp_path/cache) unless `extra` says otherwise."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TILESCOPE")}
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir(exist_ok=True)
    env["TMPDIR"] = str(tmpdir)
    env["TILESCOPE_CACHE_DIR"] = str(tmp_path / "cache")
    env.update(extra)
    return env


def temp_left(tmp_path: Path) -> list[str]:
    """What tilescope left in the run's TMPDIR (it must leave nothing)."""
    d = tmp_path / "tmpdir"
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


def run(args: list[str], tmp_path: Path, env: dict | None = None, timeout: float = 120, **kw):
    """`tilescope ARGS` in tmp_path; the CompletedProcess (text)."""
    return subprocess.run([tilescope_bin(), *args], cwd=tmp_path, env=env or clean_env(tmp_path),
                          capture_output=True, text=True, timeout=timeout, **kw)


def alive(pid: int) -> bool:
    """Whether process `pid` exists and is not a zombie (a killed orphan may wait for its reaper)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def wait_for_file(path: Path, timeout: float, proc: subprocess.Popen | None = None) -> str:
    """The content of `path` once it exists and is non-empty; fails after `timeout` s or when
    `proc` ends first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.stat().st_size > 0:
            return path.read_text()
        if proc is not None and proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"the command ended ({proc.returncode}) before writing {path}:\n{out}\n{err}")
        time.sleep(0.05)
    raise AssertionError(f"{path} not written within {timeout} s")


def wait_for_exec(pid: int, name: str, timeout: float) -> None:
    """Wait until process `pid` runs the program `name` (its exec is done)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() == name:
                    return
        except FileNotFoundError:
            raise AssertionError(f"process {pid} ended before running {name}") from None
        time.sleep(0.02)
    raise AssertionError(f"process {pid} did not run {name} within {timeout} s")


def kill_all(pids) -> None:
    """SIGKILL each process of `pids` that the test started and that is still there."""
    for pid in pids:
        if pid and alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


PYTHON = sys.executable

# A Triton program on numpy arrays (no torch in the program itself, so that it starts quickly).
KERNELS = '''
import os, sys
import numpy as np
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def mul_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * y, mask=mask)


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * 3.0 + 1.0, mask=mask)


@triton.jit
def overrun_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)  # MARK-overrun: no mask
    tl.store(out_ptr + offs, x, mask=offs < n)


def check_all():
    """Launch the three clean kernels; print KERNEL-OK / KERNEL-WRONG for each against numpy."""
    n = 300
    x = np.arange(n, dtype=np.float32) - 7.0
    y = np.linspace(-2.0, 5.0, n, dtype=np.float32)
    for name, launch, want in [
        ("add", lambda o: add_kernel[(3,)](x, y, o, n, BLOCK=128), x + y),
        ("mul", lambda o: mul_kernel[(3,)](x, y, o, n, BLOCK=128), x * y),
        ("scale", lambda o: scale_kernel[(3,)](x, o, n, BLOCK=128), x * np.float32(3.0) + np.float32(1.0)),
    ]:
        out = np.zeros(n, np.float32)
        try:
            launch(out)
        except Exception as e:  # a wrong cache entry may not even compile
            print(f"{name}-ERROR {type(e).__name__}: {e}", flush=True)
            continue
        print(f"{name}-{'OK' if np.array_equal(out, want) else 'WRONG'}", flush=True)
'''
