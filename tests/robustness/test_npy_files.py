"""`.npy` files given to and written by `tilescope run` (issue 8, items 10 and 9 for `--save`).

Every malformed or hostile input file is a clear error naming the file, with exit status 2 (bad
input), never a crash, an "internal error" or a buffer of the wrong size. Every `--save` write is
checked: a failing write exits non-zero with the reason, and never leaves a truncated `.npy` (nor
destroys the file that was there). Headers follow numpy.lib.format (NEP 1); expected arrays come from
numpy.
"""
from __future__ import annotations

import os
import resource
import signal
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from robust_support import TTIR_DIR, clean_env, run, tilescope_bin

ADD = str(TTIR_DIR / "add.ttir")  # add_kernel(x_ptr, y_ptr, out_ptr, n): BLOCK 128, f32


def npy_bytes(header: str, data: bytes = b"", version: int = 1, magic: bytes = b"\x93NUMPY") -> bytes:
    h = header.encode("latin1")
    if version == 1:
        return magic + bytes([1, 0]) + struct.pack("<H", len(h)) + h + data
    return magic + bytes([version, 0]) + struct.pack("<I", len(h)) + h + data


def hdr(descr="'<f4'", fortran="False", shape="(4,)") -> str:
    return f"{{'descr': {descr}, 'fortran_order': {fortran}, 'shape': {shape}, }}\n"


F4 = b"\0" * 16

BAD_FILES = {
    "huge_shape": npy_bytes(hdr(shape="(4611686018427387904, 4)")),  # 2^64 elements: overflows int64
    "overflow_bytes": npy_bytes(hdr(shape="(2305843009213693952, 2)")),  # 2^62 elements * 4 bytes
    "negative_dim": npy_bytes(hdr(shape="(-1,)"), F4),
    "dim_not_int": npy_bytes(hdr(shape="(4.0,)"), F4),
    "dim_too_long": npy_bytes(hdr(shape="(" + "9" * 30 + ",)"), F4),
    "shape_not_tuple": npy_bytes(hdr(shape="4"), F4),
    "shape_unclosed": npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4, }\n", F4),
    "bad_descr_size": npy_bytes(hdr(descr="'<fx'"), F4),
    "descr_no_size": npy_bytes(hdr(descr="'<f'"), F4),
    "descr_size_huge": npy_bytes(hdr(descr="'<f99999999999'"), F4),
    "descr_odd_size": npy_bytes(hdr(descr="'<f3'"), F4),
    "descr_big_endian": npy_bytes(hdr(descr="'>f4'"), F4),
    "descr_object": npy_bytes(hdr(descr="'|O'"), F4),
    "descr_structured": npy_bytes(hdr(descr="[('a', '<f4')]"), F4),
    "descr_not_string": npy_bytes(hdr(descr="4"), F4),
    "fortran_not_bool": npy_bytes(hdr(fortran="0"), F4),
    "fortran_true": npy_bytes(hdr(fortran="True"), F4),
    "missing_shape": npy_bytes("{'descr': '<f4', 'fortran_order': False, }\n", F4),
    "missing_descr": npy_bytes("{'fortran_order': False, 'shape': (4,), }\n", F4),
    "unknown_key": npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'x': 1, }\n", F4),
    "duplicate_key": npy_bytes("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (4,), }\n", F4),
    "not_a_dict": npy_bytes("['descr', '<f4']\n", F4),
    "garbage_header": npy_bytes("\x01\x02\x03 garbage", F4),
    "trailing_garbage": npy_bytes(hdr() + "junk", F4),
    "header_past_end": npy_bytes(hdr())[:12],
    "truncated_data": npy_bytes(hdr(), b"\0" * 15),
    "version_9": npy_bytes(hdr(), F4, version=9),
    "bad_minor": npy_bytes(hdr(), F4)[:7] + b"\x05" + npy_bytes(hdr(), F4)[8:],
    "bad_magic": npy_bytes(hdr(), F4, magic=b"\x93NUMPX"),
    "empty": b"",
    "v2_header_len_huge": b"\x93NUMPY\x02\x00" + struct.pack("<I", 0xFFFFFFFF) + hdr().encode(),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_npy_is_a_clear_input_error(tmp_path, name):
    f = tmp_path / f"{name}.npy"
    f.write_bytes(BAD_FILES[name])
    p = run(["run", ADD, "--kernel", "add_kernel", "--grid", "1", "--arg", f"x_ptr={f}", "--arg",
             "y_ptr=f32[4]:zeros", "--arg", "out_ptr=f32[4]:zeros", "--arg", "n=i32:4"], tmp_path)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert f"{name}.npy" in p.stderr, p.stderr
    assert "internal error" not in p.stderr and "finding" not in p.stderr, p.stderr


@pytest.mark.parametrize("array", [
    np.arange(6, dtype=np.float32).reshape(2, 3),
    np.array(2.5, dtype=np.float32),        # shape (): one element
    np.zeros((0,), dtype=np.float32),       # no elements: every load is out of bounds, not an error
], ids=["2x3", "scalar", "empty"])
def test_valid_npy_files_round_trip(tmp_path, array):
    src, out = tmp_path / "in.npy", tmp_path / "out.npy"
    np.save(src, array)
    # y gets the same file; out is saved back: out = x + y elementwise over the first numel lanes.
    p = run(["run", ADD, "--kernel", "add_kernel", "--grid", "1", "--arg", f"x_ptr={src}", "--arg", f"y_ptr={src}",
             "--arg", f"out_ptr={src}", "--arg", f"n=i32:{array.size}", "--save", f"out_ptr={out}"], tmp_path)
    assert p.returncode == 0, p.stderr
    got = np.load(out)
    expect = (array + array).reshape(-1) if array.ndim == 0 else array + array
    assert got.dtype == np.float32 and np.array_equal(got.reshape(expect.shape), expect)
    if array.ndim:
        assert got.shape == array.shape


# --save: write failures

def _save_args(tmp_path: Path, target: str, n: int = 4096) -> list[str]:
    return ["run", ADD, "--kernel", "add_kernel", "--grid", str((n + 127) // 128), "--arg",
            f"x_ptr=f32[{n}]:arange", "--arg", f"y_ptr=f32[{n}]:ones", "--arg", f"out_ptr=f32[{n}]:zeros",
            "--arg", f"n=i32:{n}", "--save", f"out_ptr={target}"]


def test_save_to_a_full_device_fails_clearly(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    for n in (4, 4096):  # a small write that a buffered stream would only fail to flush, and a large one
        p = run(_save_args(tmp_path, "/dev/full", n), tmp_path)
        assert p.returncode == 2, (n, p.returncode, p.stderr)
        assert "/dev/full" in p.stderr and "No space left on device" in p.stderr, p.stderr
    assert not os.path.isfile("/dev/full")  # written in place, never replaced by a file


def test_save_into_a_missing_directory_fails_clearly(tmp_path):
    target = tmp_path / "no-such-dir" / "out.npy"
    p = run(_save_args(tmp_path, str(target)), tmp_path)
    assert p.returncode == 2 and str(target) in p.stderr and "No such file or directory" in p.stderr, p.stderr


def test_failed_save_keeps_the_old_file_and_leaves_no_partial_one(tmp_path):
    # A file size limit (as a full disk would) makes the 16 KiB write fail half way: the old out.npy
    # must stay as it was, and no temporary file may be left next to it.
    target = tmp_path / "out.npy"
    old = np.arange(3, dtype=np.float64)
    np.save(target, old)

    def limit_file_size():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a kill, as ENOSPC on a full disk
        resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))

    p = subprocess.run([tilescope_bin(), *_save_args(tmp_path, str(target))], cwd=tmp_path, env=clean_env(tmp_path),
                       capture_output=True, text=True, timeout=120, preexec_fn=limit_file_size)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert str(target) in p.stderr and "File too large" in p.stderr, p.stderr
    assert np.array_equal(np.load(target), old)
    assert sorted(q.name for q in tmp_path.iterdir() if q.is_file()) == ["out.npy"]


def test_save_replaces_the_file_and_keeps_its_permissions(tmp_path):
    target = tmp_path / "out.npy"
    np.save(target, np.zeros(3))
    os.chmod(target, 0o640)
    p = run(_save_args(tmp_path, str(target), 300), tmp_path)
    assert p.returncode == 0, p.stderr
    assert np.array_equal(np.load(target), np.arange(300, dtype=np.float32) + 1)
    assert (target.stat().st_mode & 0o777) == 0o640
    # A new file gets the usual permissions (0666 less the umask).
    new = tmp_path / "new.npy"
    p = run(_save_args(tmp_path, str(new), 300), tmp_path)
    umask = os.umask(0)
    os.umask(umask)
    assert p.returncode == 0 and (new.stat().st_mode & 0o777) == (0o666 & ~umask), p.stderr
