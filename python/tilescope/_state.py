"""Process-wide tilescope state: options, and the findings of every launch of this process.

Options come from the environment that ``tilescope sanitize`` sets for its child processes:
TILESCOPE_SANITIZE=1 (capture every launch), TILESCOPE_FINDINGS=<dir> (where this process writes
its findings, as JSON, for the parent to merge), TILESCOPE_THREADS=N, TILESCOPE_ABORT_ON_FIRST=1,
TILESCOPE_MAX_MEMORY=SIZE (the most memory a launch may take for the values of its programs: bytes, or
a number with K, M, G or T, powers of 1024; `tilescope sanitize --max-memory` sets it).
"""
from __future__ import annotations

import atexit
import json
import os
import re
import sys
import threading


def _size(name: str) -> int:
    """The size in bytes that environment variable `name` gives (K, M, G, T: powers of 1024), or 0
    (the engine's default) when it is unset or not a size (with a warning)."""
    text = os.environ.get(name, "").strip()
    if not text:
        return 0
    m = re.fullmatch(r"(\d+)\s*([KMGT]?)(i?B)?", text, re.IGNORECASE)
    if not m or int(m.group(1)) == 0:
        sys.stderr.write(f"tilescope: warning: {name}={text!r} is not a size (such as 16G); using the default\n")
        return 0
    return min(int(m.group(1)) * 1024 ** " KMGT".index(m.group(2).upper() or " "), 2**62)


sanitize_all = bool(os.environ.get("TILESCOPE_SANITIZE"))
threads = int(os.environ.get("TILESCOPE_THREADS") or 0)
max_memory = _size("TILESCOPE_MAX_MEMORY")
abort_on_first = os.environ.get("TILESCOPE_ABORT_ON_FIRST", "") not in ("", "0")
last_record = None  # the launch record of the last launch (JSON text, README "Launch record")
findings_dir = os.environ.get("TILESCOPE_FINDINGS") or None

_lock = threading.Lock()
_findings: list[dict] = []
_launches = 0
_exit_registered = False
_file = None


def findings() -> list[dict]:
    """Every finding of this process so far (dicts of the JSON schema)."""
    with _lock:
        return list(_findings)


def clear() -> None:
    with _lock:
        _findings.clear()
    try:
        from . import _native

        _native.clear()
    except ImportError:
        pass


def _findings_path() -> str:
    # Keyed by pid: a forked child (multiprocessing) must not overwrite its parent's file.
    global _file
    pid = os.getpid()
    if _file is None or _file[0] != pid:
        os.makedirs(findings_dir, exist_ok=True)
        _file = (pid, os.path.join(findings_dir, f"findings-{pid}-{os.urandom(4).hex()}.json"))
    return _file[1]


def write_findings() -> None:
    """Write this process's findings where the `tilescope sanitize` parent reads them."""
    if not findings_dir:
        return
    with _lock:
        doc = {"pid": os.getpid(), "argv": sys.argv, "launches": _launches, "findings": _findings}
        path = _findings_path()
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f)
        os.replace(tmp, path)


def _after_fork_in_child() -> None:
    # The parent reports its own findings; the child reports only what it finds itself.
    global _launches, _lock
    _lock = threading.Lock()
    _findings.clear()
    _launches = 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def analyses_json() -> str:
    """The analyses every launch runs, for ``_native.launch``: the sanitizer with this process's options."""
    return json.dumps([["sanitizer", {"abort_on_first": bool(abort_on_first)}]])


def record(findings_json: str, kernel: str, stack: list[str]) -> None:
    global _launches
    new = json.loads(findings_json) if findings_json else []
    with _lock:
        _launches += 1
        _findings.extend(new)
    _ensure_exit_hook()
    if new and findings_dir:
        # Written at every launch with findings as well as at exit, so that a process that dies
        # (os._exit, a crash, a killed test worker) still reports what was found.
        write_findings()
    if new and abort_on_first:
        if findings_dir:
            write_findings()
        else:
            print_report()
        sys.stdout.flush()  # os._exit does not flush: the program's output so far (device prints too)
        sys.stderr.flush()
        os._exit(int(os.environ.get("TILESCOPE_EXIT_CODE") or 1))


def _ensure_exit_hook() -> None:
    global _exit_registered
    if not _exit_registered:
        _exit_registered = True
        atexit.register(_at_exit)


def _at_exit() -> None:
    if findings_dir:
        write_findings()
    elif _findings:
        print_report()


def report_text(color: bool | None = None) -> str:
    """The text report of this process's findings."""
    if color is None:
        color = sys.stderr.isatty() and not os.environ.get("NO_COLOR")
    from . import _native

    return _native.report_text(color)


def print_report() -> None:
    sys.stderr.write(report_text())
    sys.stderr.flush()
