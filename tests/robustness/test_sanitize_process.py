"""`tilescope sanitize` as a process: signals, exit status, temporary files (issue 8, items 7, 8, 14).

- SIGTERM, SIGINT and SIGHUP sent to tilescope go to the program's whole process group; tilescope
  waits for it, reports what it found, exits with the program's status and removes its temporary
  directory. No process of the program is left running.
- The program's own non-zero status always wins; `--exit-code` is the status for findings when the
  program itself succeeded.
- Every exit path removes the temporary directory (the run's private TMPDIR must end empty).

Most cases run `sh` instead of Python: a child that reports a finding writes, as the Python front
door does (tilescope/_state.py), a JSON file into $TILESCOPE_FINDINGS; the finding is the example of
the README's JSON schema.
"""
from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest

from robust_support import (KERNELS, PYTHON, alive, clean_env, kill_all, run, temp_left, tilescope_bin,
                            wait_for_exec, wait_for_file)

# The README's example finding (section "JSON schema").
FINDING = {
    "kind": "out-of-bounds-store", "kernel": "add_kernel",
    "summary": "out-of-bounds store to 'out_ptr' (1000 elements): element offsets 1000..1099 (up to 100 elements "
               "past the end); 100 lanes in 2 programs",
    "file": "examples/vector_add.py", "line": 62, "col": 29, "var": "",
    "source": "    tl.store(out_ptr + offs, x + y, mask=mask)", "op": "tt.store",
    "ttir": {"file": "add_kernel.ttir", "line": 25, "col": 5}, "inlined_from": [], "cause": None, "use": None,
    "programs": {"count": 2, "first": [[7, 0, 0], [8, 0, 0]]}, "lanes": {"count": 100, "first": [0, 1, 2, 3, 4]},
    "occurrences": 2,
    "buffer": {"name": "out_ptr", "dtype": "f32", "shape": [1000], "strides": [1], "bytes": 4000, "numel": 1000},
    "offsets": {"min": 1000, "max": 1099, "elements_before": 0, "elements_past": 100}, "addresses": None,
    "message": "", "launch_stack": ["script.py:40 in <module>", "script.py:31 in main"],
}


def _child(tmp_path: Path, status: int, findings: bool) -> list[str]:
    """An `sh` command that reports one finding (or none) to tilescope and exits with `status`."""
    doc = tmp_path / "child-findings.json"
    doc.write_text(json.dumps({"pid": 1, "argv": ["sh"], "launches": 1, "findings": [FINDING] if findings else []}))
    return ["sh", "-c", f'cp "{doc}" "$TILESCOPE_FINDINGS/findings-1.json"; exit {status}']


@pytest.mark.parametrize("status,findings,exit_code,expected", [
    (0, False, None, 0),
    (4, False, None, 4),
    (0, True, None, 1),
    (0, True, "7", 7),
    (0, True, "0", 0),
    (3, True, "0", 3),  # the program's failure is never hidden by --exit-code 0
    (3, True, "7", 3),  # nor replaced by the findings' status
    (3, True, None, 3),
])
def test_exit_status_rules(tmp_path, status, findings, exit_code, expected):
    opts = ["--exit-code", exit_code] if exit_code is not None else []
    p = run(["sanitize", "--color", "never", *opts, "--", *_child(tmp_path, status, findings)], tmp_path)
    assert p.returncode == expected, p.stderr
    assert ("out-of-bounds-store" in p.stderr) == findings, p.stderr
    assert f"exited with status {status}" in p.stderr, p.stderr
    assert temp_left(tmp_path) == []


def test_exit_code_zero_keeps_a_failing_python_programs_status(tmp_path):
    # The case as reported: real findings from a Python program that then exits 3, under --exit-code 0.
    prog = tmp_path / "fails.py"
    prog.write_text(KERNELS + '''
x = np.arange(100, dtype=np.float32)
out = np.zeros(100, np.float32)
overrun_kernel[(1,)](x, out, 100, BLOCK=128)
sys.exit(3)
''')
    p = run(["sanitize", "--color", "never", "--exit-code", "0", "--", PYTHON, str(prog)], tmp_path, timeout=300)
    assert p.returncode == 3, p.stderr
    assert "out-of-bounds-load" in p.stderr
    assert temp_left(tmp_path) == []


@pytest.mark.parametrize("argv,needle", [
    (["/nonexistent-cmd"], "cannot run"),
    (["sh", "-c", "exit 0"], None),
    (["sh", "-c", "kill -KILL $$"], None),
])
def test_every_exit_path_removes_the_temporary_directory(tmp_path, argv, needle):
    for _ in range(2):
        p = run(["sanitize", "--color", "never", "--", *argv], tmp_path)
        if needle:
            assert p.returncode == 2 and needle in p.stderr, p.stderr
        assert temp_left(tmp_path) == [], p.stderr
    # A report that cannot be written is an error, and still leaves nothing behind.
    p = run(["sanitize", "--json", str(tmp_path / "no-such-dir" / "f.json"), "--", "sh", "-c", "exit 0"], tmp_path)
    assert p.returncode == 2 and "f.json" in p.stderr, p.stderr
    assert temp_left(tmp_path) == []


# A program with a child of its own (`inner`, in the same process group): both must end when
# tilescope is signalled. The inner shell replaces itself with `sleep`, so its pid is the sleeper's.
def _family(tmp_path: Path, findings: bool) -> list[str]:
    doc = tmp_path / "child-findings.json"
    doc.write_text(json.dumps({"pid": 1, "argv": ["sh"], "launches": 1, "findings": [FINDING] if findings else []}))
    inner = f'echo $$ > "{tmp_path}/inner.pid"; exec sleep 600'
    return ["sh", "-c", f'cp "{doc}" "$TILESCOPE_FINDINGS/findings-1.json"; echo $$ > "{tmp_path}/outer.pid"; '
                        f"sh -c '{inner}'; echo after"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
def test_signals_reach_the_whole_program_and_the_report_is_made(tmp_path, sig):
    ts = subprocess.Popen([tilescope_bin(), "sanitize", "--color", "never", "--", *_family(tmp_path, True)],
                          cwd=tmp_path, env=clean_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    pids = [ts.pid]
    try:
        pids.append(int(wait_for_file(tmp_path / "outer.pid", 60, ts)))
        pids.append(int(wait_for_file(tmp_path / "inner.pid", 60, ts)))
        wait_for_exec(pids[2], "sleep", 60)  # a signal before the exec could be lost in the shell
        os.kill(ts.pid, sig)
        out, err = ts.communicate(timeout=30)
        assert ts.returncode == 128 + sig, (ts.returncode, err)
        assert "out-of-bounds-store" in err and "1 finding" in err, err
        deadline = time.monotonic() + 10
        while any(alive(p) for p in pids[1:]) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(pids[1]) and not alive(pids[2]), "the program was left running"
        assert "after" not in out
        assert temp_left(tmp_path) == []
    finally:
        kill_all(pids)


def test_sigterm_during_a_python_program_reports_its_findings(tmp_path):
    prog = tmp_path / "long.py"
    prog.write_text(KERNELS + f'''
import subprocess, time
x = np.arange(100, dtype=np.float32)
out = np.zeros(100, np.float32)
overrun_kernel[(1,)](x, out, 100, BLOCK=128)
helper = subprocess.Popen(["sleep", "600"])
open({str(tmp_path / "pids")!r}, "w").write(f"{{os.getpid()}} {{helper.pid}}")
time.sleep(600)
''')
    ts = subprocess.Popen([tilescope_bin(), "sanitize", "--color", "never", "--", PYTHON, str(prog)], cwd=tmp_path,
                          env=clean_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pids = [ts.pid]
    try:
        pids += [int(x) for x in wait_for_file(tmp_path / "pids", 240, ts).split()]
        ts.send_signal(signal.SIGTERM)
        out, err = ts.communicate(timeout=60)
        assert ts.returncode == 128 + signal.SIGTERM, (ts.returncode, err)
        assert "out-of-bounds-load" in err and "1 finding" in err, err
        deadline = time.monotonic() + 10
        while any(alive(p) for p in pids[1:]) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(alive(p) for p in pids[1:]), "the program or its helper was left running"
        assert temp_left(tmp_path) == []
    finally:
        kill_all(pids)


def _read_until(fd: int, needle: bytes, timeout: float, buf: bytearray) -> bool:
    deadline = time.monotonic() + timeout
    while needle not in buf and time.monotonic() < deadline:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # EIO: the terminal's last user closed it
                return needle in buf
            if not chunk:
                return needle in buf
            buf += chunk
    return needle in buf


def test_terminal_reads_and_ctrl_c_reach_the_program(tmp_path):
    # On a terminal the program is the foreground job: it can read the terminal (no SIGTTIN stop),
    # and ^C interrupts it; tilescope then reports and exits with the program's status (130).
    env = clean_env(tmp_path)
    argv = [tilescope_bin(), "sanitize", "--color", "never", "--", "sh", "-c",
            'read line; echo "GOT $line"; sh -c \'echo $$ > sleeper.pid; exec sleep 600\'; echo after']
    pid, fd = pty.fork()
    if pid == 0:  # the child: a new session whose controlling terminal is the pty
        try:
            os.chdir(tmp_path)
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    buf = bytearray()
    try:
        time.sleep(0.5)
        os.write(fd, b"hello\r")
        assert _read_until(fd, b"GOT hello", 30, buf), bytes(buf)
        wait_for_exec(int(wait_for_file(tmp_path / "sleeper.pid", 30)), "sleep", 30)
        os.write(fd, b"\x03")
        assert _read_until(fd, b"exited with status 130", 30, buf), bytes(buf)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            _read_until(fd, b"\0", 0.1, buf)
        assert done, "tilescope did not exit after ^C"
        assert os.waitstatus_to_exitcode(status) == 130, bytes(buf)
        assert b"after" not in buf
        assert temp_left(tmp_path) == []
    finally:
        kill_all([pid])
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
        os.close(fd)
