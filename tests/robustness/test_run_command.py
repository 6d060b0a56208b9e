"""`tilescope run` given hostile grids, odd argument values and failing output files (issue 8, items 1,
9 and 16).

- Every grid past CUDA's limits (x < 2^31, y and z <= 65535: cudaDeviceProp::maxGridSize on sm_90) is
  a clear exit-2 error, never a crash or a run of "0 programs".
- Scalars: decimal integers (`010` is ten, as Python's int() and numpy read it), floats that must fit
  their type; an empty buffer (a 0 in its shape) is legal, as torch.empty(0) is for a Triton kernel;
  an overflowing shape says so.
- Every output file (`--json`, `--sarif`, `--save`) is written to a temporary file and renamed: a
  failed write is exit status 2 with the system's reason, every other output is still written, and no
  partial file is left. tt.print output that cannot be written to stdout is exit status 2 as well.
"""
from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
from pathlib import Path

import numpy as np
import pytest

from robust_support import ROOT, TTIR_DIR, clean_env, run, tilescope_bin

ADD = str(TTIR_DIR / "add.ttir")  # add_kernel(x_ptr, y_ptr, out_ptr, n): BLOCK 128, f32
PRINT = str(ROOT / "tests" / "lit" / "print_scalar.ttir")  # tt.print of x_ptr[0] and n


def add_args(n: int = 300, x: str | None = None, grid: str | None = None, n_spec: str | None = None) -> list[str]:
    return ["run", ADD, "--grid", grid or str((n + 127) // 128 or 1), "--arg", x or f"x_ptr=f32[{n}]:arange",
            "--arg", f"y_ptr=f32[{n}]:ones", "--arg", f"out_ptr=f32[{n}]:zeros", "--arg", n_spec or f"n=i32:{n}"]


# ---------------------------------------------------------------------------------------------
# Item 1: grids


@pytest.mark.parametrize("grid,dim,value,limit", [
    ("4194304,2097152,2097152", "y", 2097152, 65535),  # the product overflows int64: was a segfault
    ("2147483647,2147483647,4", "y", 2147483647, 65535),  # the product wraps to 0 mod 2^64: "0 programs", exit 0
    ("2147483648", "x", 2147483648, 2147483647),
    ("1,65536", "y", 65536, 65535),
    ("1,1,65536", "z", 65536, 65535),
])
def test_grids_past_cuda_limits_are_clear_errors(tmp_path, grid, dim, value, limit):
    p = run(add_args(grid=grid), tmp_path)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert f"--grid {grid}: grid dimension {dim} is {value}: CUDA allows 0 to {limit}" in p.stderr, p.stderr
    assert "programs" not in p.stdout + p.stderr


@pytest.mark.parametrize("grid,message", [
    ("99999999999999999999", "'99999999999999999999' is too large"),
    ("0", "every dimension must be at least 1"),
    ("-1", "expected X[,Y[,Z]] with positive integers"),
    ("1,2,3,4", "expected X[,Y[,Z]] with positive integers"),
])
def test_malformed_grids_are_clear_errors(tmp_path, grid, message):
    p = run(add_args(grid=grid), tmp_path)
    assert p.returncode == 2 and message in p.stderr, (p.returncode, p.stderr)


def test_the_largest_legal_grid_is_accepted(tmp_path):
    # 65535 x 65535 programs in y and z would take too long; the limits themselves are legal.
    # --no-races: the programs along y all store the same elements (a real data race, not what this tests).
    p = run(add_args(grid="3,65535") + ["--threads", "2", "--no-races"], tmp_path)
    assert p.returncode == 0, p.stderr


# ---------------------------------------------------------------------------------------------
# Item 16: argument values


def _saved(tmp_path: Path, args: list[str]) -> np.ndarray:
    out = tmp_path / "out.npy"
    p = run(args + ["--save", f"out_ptr={out}"], tmp_path)
    assert p.returncode == 0, p.stderr
    return np.load(out)


def test_integers_with_leading_zeros_are_decimal(tmp_path):
    # n = 10 (not octal 8): the first 10 elements are x + y = i + 1, the rest stay 0.
    got = _saved(tmp_path, add_args(n_spec="n=i32:010"))
    want = np.zeros(300, np.float32)
    want[:10] = np.arange(10) + 1
    assert np.array_equal(got, want)
    got = _saved(tmp_path, add_args(n_spec="n=i32:0x0a"))  # hexadecimal keeps its prefix
    assert np.array_equal(got, want)


@pytest.mark.parametrize("spec,message", [
    ("n=1e39", None),  # the kernel's n is i32: not an integer
    ("n=i32:99999999999", "99999999999 does not fit in i32"),
])
def test_integer_values_that_do_not_fit_are_errors(tmp_path, spec, message):
    p = run(add_args(n_spec=spec), tmp_path)
    assert p.returncode == 2, p.stderr
    assert (message or "cannot read '1e39' as i32") in p.stderr, p.stderr


@pytest.mark.parametrize("value,fits", [("1e39", False), ("-3.5e38", False), ("1e999", False),
                                        ("3.4e38", True), ("inf", True), ("1e-50", True)])
def test_f32_values_must_fit(tmp_path, value, fits):
    # A full=V buffer of f32 (the scalar form is tested in tests/cpp/cli/args_test.cpp): 1e39 would
    # silently become inf.
    p = run(add_args(x=f"x_ptr=f32[300]:full={value}"), tmp_path)
    if fits:
        assert p.returncode == 0, p.stderr
    else:
        assert p.returncode == 2 and f"full={value} does not fit in f32" in p.stderr, p.stderr


def test_an_empty_buffer_is_legal_and_any_access_to_it_is_out_of_bounds(tmp_path):
    # As torch.empty(0) given to a Triton kernel: nothing to read, so a masked-off kernel is clean ...
    p = run(add_args(n=0, x="x_ptr=f32[0]:zeros", grid="1"), tmp_path)
    assert p.returncode == 0, p.stderr
    # ... and a kernel that reads element 0..127 of it reads out of bounds (128 lanes, 0 elements).
    p = run(add_args(n=128, x="x_ptr=f32[0]:zeros", grid="1") + ["--color", "never"], tmp_path)
    assert p.returncode == 1, p.stderr
    assert "out-of-bounds load from 'x_ptr' (0 elements): element offsets 0..127" in p.stderr, p.stderr


def test_an_overflowing_shape_has_its_own_message(tmp_path):
    p = run(add_args(x="x_ptr=f32[99999999999x99999999999]:zeros"), tmp_path)
    assert p.returncode == 2, p.stderr
    assert "shape [99999999999x99999999999] has more elements than a 64-bit count can hold" in p.stderr
    p = run(add_args(x="x_ptr=f32[20000000000]:zeros"), tmp_path)
    assert p.returncode == 2 and "more than the 64 GiB a generated buffer may take" in p.stderr, p.stderr


def test_a_directory_or_an_endless_device_is_not_a_ttir_file(tmp_path):
    p = run(["run", str(tmp_path)], tmp_path)
    assert p.returncode == 2 and f"{tmp_path}: is a directory, not a TTIR file" in p.stderr, p.stderr
    p = run(["run", str(tmp_path / "missing.ttir")], tmp_path)
    assert p.returncode == 2 and "missing.ttir: cannot open: No such file or directory" in p.stderr, p.stderr
    if os.path.exists("/dev/zero"):  # read until 1 GiB, then refused (it was read until memory ran out)
        p = run(["run", "/dev/zero"], tmp_path, timeout=60)
        assert p.returncode == 2 and "/dev/zero: more than 1 GiB, not a TTIR file" in p.stderr, p.stderr


# ---------------------------------------------------------------------------------------------
# Item 9: output files


def test_json_to_a_full_device_fails_clearly(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    for flag in ("--json", "--sarif"):
        p = run(add_args() + [flag, "/dev/full"], tmp_path)
        assert p.returncode == 2, (flag, p.returncode, p.stderr)
        assert "/dev/full: cannot write: No space left on device" in p.stderr, p.stderr


def test_every_output_is_attempted_and_none_is_left_partial(tmp_path):
    # A file size limit, as a full disk gives (EFBIG for ENOSPC): the report files and the .npy fail
    # half way; each failure is named, the old files stay as they were, no temporary file is left.
    out = tmp_path / "out"
    out.mkdir()
    for name in ("f.json", "f.sarif"):
        (out / name).write_text("old\n")
    np.save(out / "o.npy", np.arange(3.0))
    # n = 5000 past 4096-element buffers: out-of-bounds findings make the JSON and SARIF files large.
    args = add_args(n=4096, grid="40", n_spec="n=i32:5000") + [
        "--json", str(out / "f.json"), "--sarif", str(out / "f.sarif"), "--save", f"out_ptr={out / 'o.npy'}"]

    def limit_file_size():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (200, 200))

    p = subprocess.run([tilescope_bin(), *args], cwd=tmp_path, env=clean_env(tmp_path), capture_output=True,
                       text=True, timeout=120, preexec_fn=limit_file_size)
    assert p.returncode == 2, (p.returncode, p.stderr)
    for name in ("f.json", "f.sarif", "o.npy"):
        assert f"{out / name}: cannot write: File too large" in p.stderr, p.stderr
    assert "error[out-of-bounds-load]" in p.stderr  # the report itself was printed
    assert (out / "f.json").read_text() == "old\n" and (out / "f.sarif").read_text() == "old\n"
    assert np.array_equal(np.load(out / "o.npy"), np.arange(3.0))
    assert sorted(q.name for q in out.iterdir()) == ["f.json", "f.sarif", "o.npy"]
    # Without the limit, the same run writes all three (exit 1: findings).
    p = run(args, tmp_path)
    assert p.returncode == 1, p.stderr
    assert json.loads((out / "f.json").read_text())[0]["kind"] == "out-of-bounds-load"
    assert json.loads((out / "f.sarif").read_text())["version"] == "2.1.0"
    assert np.load(out / "o.npy").shape == (4096,)


def test_tt_print_output_that_cannot_be_written_is_an_error(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    args = ["run", PRINT, "--grid", "1", "--arg", "x_ptr=f32[1]:full=1.25", "--arg", "n=i64:-5000000000"]
    with open("/dev/full", "w") as full:
        p = subprocess.run([tilescope_bin(), *args], cwd=tmp_path, env=clean_env(tmp_path), stdout=full,
                           stderr=subprocess.PIPE, text=True, timeout=60)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "cannot write the kernel's tt.print output to stdout" in p.stderr
    p = run(args, tmp_path)  # the same run with a working stdout prints and succeeds
    assert p.returncode == 0 and "1.25" in p.stdout, (p.returncode, p.stdout, p.stderr)
