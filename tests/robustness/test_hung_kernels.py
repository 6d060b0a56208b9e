"""Kernels that never finish, Ctrl-C, and thread counts (issue 8, items 2, 3 and 16).

- SIGINT stops a launch whose one program loops forever, within a loop iteration: `tilescope run`
  exits 130, `tilescope sanitize -- python ...` too (the program gets KeyboardInterrupt).
- The step limit (`--max-steps`) ends a hung kernel with a located error (tests/lit has the exact
  count; here the sanitize path and its option checks).
- Thread counts have one rule (0 for all cores, up to 1024) on every path, and a thread the system
  will not start is a clear error, not an abort.
"""
from __future__ import annotations

import re
import resource
import signal
import subprocess
import time
from pathlib import Path

import pytest

from robust_support import PYTHON, alive, clean_env, kill_all, run, temp_left, tilescope_bin, wait_for_file

# One program that prints, then loops forever (i stays in {0, 1}): the print says the launch runs.
SPIN_TTIR = """module {
  tt.func public @spin_kernel(%x_ptr: !tt.ptr<i32>, %out_ptr: !tt.ptr<i32>) attributes {noinline = false} {
    %c2_i32 = arith.constant 2 : i32
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %i = tt.load %x_ptr : !tt.ptr<i32>
    tt.print " spinning from " {hex = false, isSigned = array<i32: 1>} : %i : i32
    %i_0 = scf.while (%i_1 = %i) : (i32) -> i32 {
      %0 = arith.cmpi sge, %i_1, %c0_i32 : i32
      scf.condition(%0) %i_1 : i32
    } do {
    ^bb0(%i_1: i32):
      %i_2 = arith.addi %i_1, %c1_i32 : i32
      %i_3 = arith.remsi %i_2, %c2_i32 : i32
      scf.yield %i_3 : i32
    }
    tt.store %out_ptr, %i_0 : !tt.ptr<i32>
    tt.return
  }
}
"""

# The same loop in a Triton program: compiled by a first launch that ends at once, then launched
# with a start that never ends.
SPIN_PY = """
import sys
import numpy as np
import triton
import triton.language as tl


@triton.jit
def spin_kernel(x_ptr, out_ptr):
    i = tl.load(x_ptr)
    while i >= 0:  # MARK-spin
        i = (i + 1) % 2
    tl.store(out_ptr, i)


out = np.zeros(1, np.int32)
spin_kernel[(1,)](np.full(1, -1, np.int32), out)
open(sys.argv[1], "w").write("compiled")
spin_kernel[(1,)](np.zeros(1, np.int32), out)
print("FINISHED", flush=True)
"""


def _spin_file(tmp_path: Path) -> Path:
    p = tmp_path / "spin.ttir"
    p.write_text(SPIN_TTIR)
    return p


def test_sigint_stops_an_endless_loop_in_tilescope_run(tmp_path):
    args = [tilescope_bin(), "run", str(_spin_file(tmp_path)), "--max-steps", "0", "--threads", "2", "--grid", "3",
            "--arg", "x_ptr=i32[1]:zeros", "--arg", "out_ptr=i32[1]:zeros"]
    proc = subprocess.Popen(args, cwd=tmp_path, env=clean_env(tmp_path), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert "spinning from 0" in proc.stdout.readline()  # inside the launch (no limit: endless)
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)  # it never ended before: the flag was read between programs
        assert proc.returncode == 130, (proc.returncode, err)
        assert "interrupted" in err, err
    finally:
        kill_all([proc.pid])


def test_sigint_stops_an_endless_loop_in_tilescope_replay(tmp_path):
    # Recorded under a step limit (the launch fails, its inputs are in the trace), replayed without one.
    trace = tmp_path / "spin.tstrace"
    p = run(["run", str(_spin_file(tmp_path)), "--max-steps", "5000", "--grid", "3", "--arg", "x_ptr=i32[1]:zeros",
             "--arg", "out_ptr=i32[1]:zeros", "--trace", str(trace)], tmp_path)
    assert p.returncode == 2 and "without finishing" in p.stderr, p.stderr
    proc = subprocess.Popen([tilescope_bin(), "replay", str(trace), "--launch", "1", "--max-steps", "0", "--threads",
                             "2"], cwd=tmp_path, env=clean_env(tmp_path), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert "spinning from 0" in proc.stdout.readline()
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 130, (proc.returncode, err)
        assert "replay of launch 1 interrupted (SIGINT)" in err, err
    finally:
        kill_all([proc.pid])


def test_sigint_stops_an_endless_loop_under_sanitize(tmp_path):
    prog = tmp_path / "spin.py"
    prog.write_text(SPIN_PY)
    marker = tmp_path / "compiled"
    ts = subprocess.Popen([tilescope_bin(), "sanitize", "--color", "never", "--max-steps", "0", "--", PYTHON,
                           str(prog), str(marker)], cwd=tmp_path, env=clean_env(tmp_path), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    try:
        wait_for_file(marker, 240, ts)
        time.sleep(1)  # inside the second launch: nothing is left to compile
        ts.send_signal(signal.SIGINT)
        out, err = ts.communicate(timeout=60)
        assert ts.returncode == 130, (ts.returncode, err)
        assert "KeyboardInterrupt" in err and "received SIGINT" in err, err
        assert "FINISHED" not in out
        assert temp_left(tmp_path) == []
    finally:
        kill_all([ts.pid])


def test_step_limit_ends_a_hung_kernel_under_sanitize(tmp_path):
    prog = tmp_path / "spin.py"
    prog.write_text(SPIN_PY)
    p = run(["sanitize", "--color", "never", "--max-steps", "5000", "--", PYTHON, str(prog), str(tmp_path / "m")],
            tmp_path, timeout=240)
    assert p.returncode == 1, p.stderr  # the program's own status: its launch raised LaunchError
    line = next(i for i, text in enumerate(SPIN_PY.splitlines(), 1) if "MARK-spin" in text)
    assert re.search(r"program \(0, 0, 0\) executed \d+ operations without finishing", p.stderr), p.stderr
    assert re.search(rf"spin\.py:{line}:\d+\)", p.stderr), p.stderr  # located at the while loop
    assert "the limit is 5000 per program" in p.stderr
    assert "FINISHED" not in p.stdout
    assert temp_left(tmp_path) == []


@pytest.mark.parametrize("argv,needle", [
    (["run", "K", "--threads", "100000"], "--threads 100000: the number of worker threads must be 0 (all cores) to 1024"),
    (["run", "K", "--threads", "-1"], "--threads -1: the number of worker threads must be 0 (all cores) to 1024"),
    (["run", "K", "--threads", "two"], "--threads 'two': not a whole number"),
    (["run", "K", "--max-steps", "-1"], "--max-steps -1: give a number of operations, or 0 for no limit"),
    (["sanitize", "--threads", "-5", "--", "true"], "--threads -5: the number of worker threads must be 0"),
    (["sanitize", "--max-steps", "many", "--", "true"], "--max-steps many: give a number of operations"),
], ids=["run-huge", "run-negative", "run-word", "run-max-steps", "sanitize-negative", "sanitize-max-steps"])
def test_thread_counts_and_step_limits_are_checked(tmp_path, argv, needle):
    argv = [str(_spin_file(tmp_path)) if a == "K" else a for a in argv]
    if argv[0] == "run":
        argv += ["--arg", "x_ptr=i32[1]:zeros", "--arg", "out_ptr=i32[1]:zeros"]
    p = run(argv, tmp_path, timeout=60)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert needle in p.stderr, p.stderr
    assert not re.search(r"\d{20}", p.stderr), p.stderr  # no 300-digit bound (CLI11's double range)
    assert temp_left(tmp_path) == []


def test_a_thread_the_system_will_not_start_is_a_clear_error(tmp_path):
    # 1000 threads of 8 MiB stacks do not fit in 600 MiB of address space: std::thread throws
    # std::system_error, which once escaped as "terminate called without an active exception".
    k = tmp_path / "ids.ttir"
    k.write_text("""module {
  tt.func public @k(%out: !tt.ptr<i32>) attributes {noinline = false} {
    %pid = tt.get_program_id x : i32
    %p = tt.addptr %out, %pid : !tt.ptr<i32>, i32
    tt.store %p, %pid : !tt.ptr<i32>
    tt.return
  }
}
""")

    def small_address_space():
        resource.setrlimit(resource.RLIMIT_AS, (600 << 20, 600 << 20))

    p = run(["run", str(k), "--grid", "2000", "--threads", "1000", "--arg", "out=i32[2000]:zeros"], tmp_path,
            timeout=60, preexec_fn=small_address_space)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert re.search(r"cannot start worker thread \d+ of 1000: .*\(ask for fewer threads\)", p.stderr), p.stderr
