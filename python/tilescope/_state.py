"""Process-wide tilescope state: options, and the findings of every launch of this process.

Options come from the environment that ``tilescope sanitize`` sets for its child processes:
TILESCOPE_SANITIZE=1 (capture every launch), TILESCOPE_FINDINGS=<dir> (where this process writes
its findings, as JSON, for the parent to merge), TILESCOPE_THREADS=N, TILESCOPE_MAX_STEPS=N,
TILESCOPE_ABORT_ON_FIRST=1, TILESCOPE_MAX_MEMORY=SIZE (the most memory a launch may take for the values
of its programs: bytes, or a number with K, M, G or T, powers of 1024; `tilescope sanitize --max-memory`
sets it). TILESCOPE_THREADS and TILESCOPE_MAX_STEPS are read at each launch (launch_limits), so a bad
value is an error of that launch, not of the program's start-up.

The findings file of a process is ``<dir>/findings-<pid>-<random>.json``: ``{"pid", "argv",
"launches", "findings": [the JSON schema's objects], "notes": [lines for the report], "complete"}``,
written to a temporary file and renamed over it: at the process's first launch, at every launch with
findings, and at exit (only that last write says ``"complete": true``; a process that leaves through
os._exit or a crash leaves an earlier one, and the parent says its count may be short). When it cannot be written (a full or read-only TMPDIR), nothing
is raised in the program: the process says so once on stderr, prints its own report on stderr at
exit, and tells the parent through the FIFO ``<dir>/failures`` (made by src/cli/sanitize.cpp): one
line of JSON ``{"pid", "findings", "launches", "error"}`` when its file goes missing or stale, and
``{"pid", "ok": true}`` once a later write succeeds, so that the parent's report never says "no
findings" for findings it did not receive. Change both sides together.
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
max_memory = _size("TILESCOPE_MAX_MEMORY")
abort_on_first = os.environ.get("TILESCOPE_ABORT_ON_FIRST", "") not in ("", "0")
races = os.environ.get("TILESCOPE_RACES", "1") != "0"  # `tilescope sanitize --no-races` sets it to 0
# `tilescope profile` sets TILESCOPE_PROFILE to the profile analysis's options (JSON: {"gpu", "num_warps"}):
# every launch then runs under the profiler alone, and the per-launch reports go into the findings file
# ("profiles"). `tilescope.profile()` (a context manager) sets `profilers` for launches in its block.
_profile_env = os.environ.get("TILESCOPE_PROFILE")
profile_options = None
if _profile_env:
    try:
        profile_options = json.loads(_profile_env)
        if not isinstance(profile_options, dict):
            raise ValueError("not a JSON object")
    except ValueError as e:
        sys.stderr.write(f"tilescope: warning: TILESCOPE_PROFILE={_profile_env!r} is not the profiler's options "
                         f"({e}); using the defaults\n")
        profile_options = {}
profilers: list = []  # active tilescope.profile() blocks, innermost last
_profiles: list[dict] = []  # this process's per-launch profile reports (under `tilescope profile`)


def last_record() -> str | None:
    """The launch record of this process's last launch (README, "Launch record") as JSON text, without
    the TTIR; None before the first launch. Made when asked for, not at each launch."""
    from . import _native

    return _native.last_record()


findings_dir = os.environ.get("TILESCOPE_FINDINGS") or None
# `tilescope sanitize --trace FILE` (or `tilescope trace`): every launch is recorded into this trace file.
trace_path = os.environ.get("TILESCOPE_TRACE") or ""

_lock = threading.Lock()
_findings: list[dict] = []
_launches = 0
_notes: list[str] = []
_exit_registered = False
_file = None
_write_error = None  # why the last write of the findings file failed (None: it succeeded, or none yet)


def launch_limits() -> tuple[int, int]:
    """(threads, max_steps) for ``_native.launch`` from TILESCOPE_THREADS (worker threads, 0 = all cores)
    and TILESCOPE_MAX_STEPS (operations one program may run, 0 = no limit; default: the engine's).
    Raises TilescopeError for a value that is not a number in range (the engine's own checks)."""
    global _limits
    env = (os.environ.get("TILESCOPE_THREADS", ""), os.environ.get("TILESCOPE_MAX_STEPS", ""))
    if _limits is None or _limits[0] != env:
        _limits = (env, _parse_limits(*env))  # read at each launch, parsed when it changes
    return _limits[1]


_limits = None  # ((TILESCOPE_THREADS, TILESCOPE_MAX_STEPS), launch_limits()) of the last launch


def _parse_limits(threads_text: str, steps_text: str) -> tuple[int, int]:
    from . import _native

    threads = _native.parse_threads(threads_text.strip() or "0", "TILESCOPE_THREADS")
    text = steps_text.strip()
    if not text:
        return threads, _native.DEFAULT_MAX_STEPS
    if not text.isdigit():
        raise _native.TilescopeError(f"TILESCOPE_MAX_STEPS={text}: give a number of operations, or 0 for no limit")
    return threads, int(text)


def findings() -> list[dict]:
    """Every finding of this process so far (dicts of the JSON schema)."""
    with _lock:
        return list(_findings)


def clear() -> None:
    with _lock:
        _findings.clear()
        _notes.clear()
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
        _file = (pid, os.path.join(findings_dir, f"findings-{pid}-{os.urandom(4).hex()}.json"))
    return _file[1]


def _write_atomically(path: str, data: bytes) -> None:
    """`data` as the whole content of `path`: a temporary file in the same directory, every write
    checked, renamed over `path`; raises OSError and leaves no temporary file on failure."""
    tmp = f"{path}.{os.urandom(4).hex()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _tell_parent(message: dict) -> None:
    """One line of JSON to the parent's failures FIFO (see the module docstring); never blocks, never
    raises: a line under PIPE_BUF bytes is written whole or not at all."""
    try:
        fd = os.open(os.path.join(findings_dir, "failures"), os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.write(fd, (json.dumps(message)[:3000] + "\n").encode())
    except OSError:
        pass
    finally:
        os.close(fd)


def _warn(message: str) -> None:
    try:
        sys.stderr.write(f"tilescope: warning: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed or failing stderr: nowhere left to say it
        pass


def write_findings(complete: bool = False) -> bool:
    """Write this process's findings where the `tilescope sanitize` parent reads them (`complete`: the
    write at exit). Never raises: a failure is reported (see the module docstring) and the findings stay
    in memory. Returns whether the file now holds them."""
    global _write_error
    if not findings_dir:
        return True
    with _lock:
        doc = {"pid": os.getpid(), "argv": sys.argv, "launches": _launches, "findings": _findings,
               "notes": _notes, "complete": complete}
        if profile_options is not None:
            doc["profiles"] = _profiles
        try:
            data = json.dumps(doc).encode()
            os.makedirs(findings_dir, exist_ok=True)
            _write_atomically(_findings_path(), data)
        except (OSError, ValueError, TypeError) as e:
            reason = getattr(e, "strerror", None) or str(e)
            if _write_error is None:
                _warn(f"cannot write this process's findings to {findings_dir} ({reason}); they are printed "
                      f"on stderr when it exits")
                _tell_parent({"pid": os.getpid(), "findings": len(_findings), "launches": _launches,
                              "error": reason})
            _write_error = reason
            return False
        if _write_error is not None:
            _tell_parent({"pid": os.getpid(), "ok": True})
            _write_error = None
        return True


def note(text: str) -> None:
    """A line for the end-of-run report (once per distinct text): the process's report at exit, or the
    `tilescope sanitize` parent's report. The caller also says it on stderr when it happens."""
    with _lock:
        if text in _notes:
            return
        _notes.append(text)
    _ensure_exit_hook()


def trace_error(reason: str | None) -> None:
    """A launch ran but the trace could not record it (`reason`): a warning on stderr once per distinct
    reason, and a note for the end-of-run report. The program goes on."""
    if not reason:
        return
    msg = f"the trace could not record a launch: {reason}"
    if msg not in _notes:
        _warn(msg)
    note(msg)


def _after_fork_in_child() -> None:
    # The parent reports its own findings; the child reports only what it finds itself.
    global _launches, _lock, _write_error
    _lock = threading.Lock()
    _findings.clear()
    _notes.clear()
    _profiles.clear()
    _launches = 0
    _write_error = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def analyses_json(races_on: bool | None = None, uninit: bool = True, num_warps: int | None = None) -> str:
    """The analyses every launch runs, for ``_native.launch``: the sanitizer with this process's options,
    the race detector unless `races_on` (default: this process's ``races``) is false, and reads of
    uninitialized memory (unless TILESCOPE_UNINIT=0 or `uninit` is false: the kernel's
    ``@tilescope.trace(uninit=False)``). While profiling (`tilescope profile`, or a ``tilescope.profile()``
    block): the profile analysis alone, with the launch's `num_warps` for its sector model."""
    from . import _uninit

    if profile_options is not None or profilers:
        # Profiling: the profile analysis alone (its counts do not depend on the sanitizer's).
        opts = dict(profilers[-1].options if profilers else profile_options)
        if num_warps and "num_warps" not in opts:
            opts["num_warps"] = int(num_warps)
        return json.dumps([["profile", opts]])
    key = (bool(abort_on_first), bool(races if races_on is None else races_on), bool(uninit and _uninit.enabled))
    text = _analyses_text.get(key)
    if text is None:
        a = [["sanitizer", {"abort_on_first": key[0]}]]
        if key[1]:
            a.append(["races", {}])
        if key[2]:
            a.append(["uninit", {}])
        text = _analyses_text[key] = json.dumps(a)
    return text


_analyses_text: dict[tuple, str] = {}  # (abort_on_first, races, uninit) -> analyses_json's text


def record(findings_json: str, kernel: str, stack: list[str], reports_json: str = "") -> None:
    global _launches
    new = json.loads(findings_json) if findings_json and findings_json != "[]" else []
    reports = json.loads(reports_json) if reports_json and reports_json != "{}" else {}
    profile = reports.get("profile")
    with _lock:
        first = _launches == 0
        _launches += 1
        _findings.extend(new)
        if profile is not None:
            if profilers:
                profilers[-1].launches.append(profile)
            elif profile_options is not None:
                _profiles.append(profile)
    _ensure_exit_hook()
    if new and abort_on_first:
        # This process ends here: its last write is the whole of it.
        if not findings_dir or not write_findings(complete=True):
            print_report()
        try:
            sys.stdout.flush()  # os._exit does not flush: the program's output so far (device prints too)
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os._exit(int(os.environ.get("TILESCOPE_EXIT_CODE") or 1))
    if (new or first) and findings_dir:
        # Written at the first launch and at every launch with findings as well as at exit, so that a
        # process that dies (os._exit, a crash, a killed test worker) still reports what was found,
        # and that it ran kernels at all.
        write_findings()


def _ensure_exit_hook() -> None:
    global _exit_registered
    if not _exit_registered:
        _exit_registered = True
        atexit.register(_at_exit)


def _at_exit() -> None:
    if findings_dir:
        if not write_findings(complete=True):
            # The parent cannot read them: this process's report goes on stderr instead.
            print_report(with_notes=True)
            if _write_error is not None:
                _tell_parent({"pid": os.getpid(), "findings": len(_findings), "launches": _launches,
                              "error": _write_error})
    elif _findings or _notes:
        print_report(with_notes=True)


def report_text(color: bool | None = None) -> str:
    """The text report of this process's findings."""
    if color is None:
        color = sys.stderr.isatty() and not os.environ.get("NO_COLOR")
    from . import _native

    return _native.report_text(color)


def print_report(with_notes: bool = False) -> None:
    try:
        text = report_text()
        if with_notes:
            text += "".join(f"tilescope: note: {n}\n" for n in _notes)
        sys.stderr.write(text)
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed or failing stderr
        pass
