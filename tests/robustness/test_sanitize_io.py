"""`tilescope sanitize` when its own files cannot be written, when the home directory is missing, and
in a virtual environment that sees the system's Triton (issue 8, items 9 and 16; the .pth hook).

- A full TMPDIR (simulated with RLIMIT_FSIZE, which gives EFBIG where a full disk gives ENOSPC) must
  not raise in the user's kernel launch, and the findings must not be lost: the process prints them,
  the parent says how many it did not receive and exits 2 (never "no findings", exit 0).
- `--json` / `--sarif` that cannot be written: the report is still printed, both files are tried, and
  the status is 2 unless the program itself failed (its status wins).
- A home directory that does not exist is never created: the TTIR cache is off with one warning
  (XDG_CACHE_HOME moves it), and the program runs as usual.
- In a venv made with --system-site-packages, tilescope's .pth file runs before the system's
  site-packages (where Triton is) are on sys.path: Triton is patched when it is first imported.
"""
from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from robust_support import KERNELS, PYTHON, clean_env, run, temp_left, tilescope_bin

OVERRUN = KERNELS + '''
x = np.arange(100, dtype=np.float32)
out = np.zeros(100, np.float32)
overrun_kernel[(1,)](x, out, 100, BLOCK=128)
print("AFTER-LAUNCH", flush=True)
'''
CLEAN = KERNELS + '''
check_all()
'''


def _script(tmp_path: Path, body: str, name: str = "prog.py") -> str:
    p = tmp_path / name
    p.write_text(body)
    return str(p)


def _no_file_space():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a kill, as ENOSPC on a full disk
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


def test_a_full_tmpdir_loses_no_findings_and_raises_nothing_in_the_program(tmp_path):
    # Every file write of tilescope and its program fails (the TTIR cache is off: it would warn too).
    env = clean_env(tmp_path, TILESCOPE_CACHE_DIR="")
    p = subprocess.run([tilescope_bin(), "sanitize", "--color", "never", "--", PYTHON, _script(tmp_path, OVERRUN)],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, preexec_fn=_no_file_space)
    assert "AFTER-LAUNCH" in p.stdout, p.stderr  # no OSError in the launch
    assert "OSError" not in p.stderr and "Traceback" not in p.stderr, p.stderr
    # The process printed its own report, and the parent counts what it did not receive.
    assert "cannot write this process's findings" in p.stderr and "File too large" in p.stderr, p.stderr
    assert "error[out-of-bounds-load]" in p.stderr, p.stderr
    assert "1 process(es) could not write their findings" in p.stderr, p.stderr
    assert "1 finding(s) not received" in p.stderr and "no findings" not in p.stderr, p.stderr
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert temp_left(tmp_path) == []


def test_a_process_with_nothing_lost_is_not_an_error(tmp_path):
    # The same full TMPDIR under a clean program: nothing found, nothing lost, status 0.
    env = clean_env(tmp_path, TILESCOPE_CACHE_DIR="")
    p = subprocess.run([tilescope_bin(), "sanitize", "--color", "never", "--", PYTHON, _script(tmp_path, CLEAN)],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, preexec_fn=_no_file_space)
    assert p.stdout.split() == ["add-OK", "mul-OK", "scale-OK"], p.stdout + p.stderr
    assert p.returncode == 0, (p.returncode, p.stderr)
    assert "no findings" in p.stderr and "not received" not in p.stderr, p.stderr


@pytest.mark.parametrize("status", [0, 3])
def test_report_files_that_cannot_be_written(tmp_path, status):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    prog = _script(tmp_path, OVERRUN + f"sys.exit({status})\n")
    sarif = tmp_path / "missing-dir" / "f.sarif"
    p = run(["sanitize", "--color", "never", "--json", "/dev/full", "--sarif", str(sarif), "--", PYTHON, prog],
            tmp_path, timeout=300)
    assert "error[out-of-bounds-load]" in p.stderr and "1 finding" in p.stderr, p.stderr
    assert "/dev/full: cannot write: No space left on device" in p.stderr, p.stderr
    assert f"{sarif}: cannot write: No such file or directory" in p.stderr, p.stderr
    assert p.returncode == (status or 2), (p.returncode, p.stderr)
    assert temp_left(tmp_path) == []


def test_report_files_are_written_whole(tmp_path):
    prog = _script(tmp_path, OVERRUN)
    out = tmp_path / "f.json"
    out.write_text("old")
    p = run(["sanitize", "--json", str(out), "--sarif", str(tmp_path / "f.sarif"), "--", PYTHON, prog], tmp_path,
            timeout=300)
    assert p.returncode == 1, p.stderr
    assert [f["kind"] for f in json.loads(out.read_text())] == ["out-of-bounds-load"]
    assert json.loads((tmp_path / "f.sarif").read_text())["version"] == "2.1.0"
    assert sorted(q.name for q in tmp_path.iterdir() if q.is_file()) == ["f.json", "f.sarif", "prog.py"]


def test_a_missing_home_directory_is_never_created(tmp_path):
    home = tmp_path / "no-home"  # HOME=/nonexistent, as service accounts have
    env = clean_env(tmp_path, HOME=str(home))
    del env["TILESCOPE_CACHE_DIR"]
    env.pop("XDG_CACHE_HOME", None)
    prog = _script(tmp_path, CLEAN)
    p = run(["sanitize", "--", PYTHON, prog], tmp_path, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["add-OK", "mul-OK", "scale-OK"], p.stdout + p.stderr
    assert not home.exists()
    assert p.stderr.count("the TTIR cache is off") == 1, p.stderr  # one warning, not one per kernel
    # XDG_CACHE_HOME (the XDG base directory spec) moves the cache, whatever HOME is.
    xdg = tmp_path / "xdg"
    env["XDG_CACHE_HOME"] = str(xdg)
    p = run(["sanitize", "--", PYTHON, prog], tmp_path, env=env, timeout=300)
    assert p.returncode == 0 and "TTIR cache" not in p.stderr, p.stderr
    assert len(list((xdg / "tilescope" / "ttir").glob("*.ttir"))) == 3
    assert not home.exists()


def test_an_unwritable_ttir_dump_does_not_fail_the_launch(tmp_path):
    prog = _script(tmp_path, CLEAN)
    env = clean_env(tmp_path, TILESCOPE_DUMP_TTIR=str(tmp_path / "prog.py" / "dump"))  # under a file
    p = run(["sanitize", "--", PYTHON, prog], tmp_path, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["add-OK", "mul-OK", "scale-OK"], p.stdout + p.stderr
    assert "TILESCOPE_DUMP_TTIR: cannot write" in p.stderr and "Not a directory" in p.stderr, p.stderr


def _installed_package() -> Path:
    """The directory of the tilescope package that the tests' Python imports."""
    out = subprocess.run([PYTHON, "-c", "import tilescope, os; print(os.path.dirname(tilescope.__file__))"],
                         capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def test_a_venv_with_system_site_packages_is_sanitized(tmp_path):
    # A venv whose own site-packages holds tilescope (here: a link to the installed package) and its
    # .pth file, and sees Triton only in the system's site-packages, which `site` adds after the venv's
    # .pth files have run.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True,
                   timeout=120)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    pkg = _installed_package()
    (site / "tilescope").symlink_to(pkg, target_is_directory=True)
    (site / "tilescope_autoload.pth").write_text(
        (Path(__file__).resolve().parents[2] / "python" / "tilescope_autoload.pth").read_text())
    # The reported case: Triton is not importable yet when tilescope's .pth file runs (.pth files run
    # in name order; this probe runs right after it).
    probe = tmp_path / "probe.txt"
    (site / "tilescope_zz_probe.pth").write_text(
        'import importlib.util, os; os.environ.get("PROBE") and open(os.environ["PROBE"], "w").write('
        'str(importlib.util.find_spec("triton") is None))\n')
    env = clean_env(tmp_path, PROBE=str(probe))
    p = run(["sanitize", "--color", "never", "--", str(python), _script(tmp_path, OVERRUN)], tmp_path, env=env,
            timeout=300)
    assert probe.read_text() == "True"
    assert "AFTER-LAUNCH" in p.stdout, p.stderr
    assert "error[out-of-bounds-load]" in p.stderr and "1 launch(es) in 1 process(es)" in p.stderr, p.stderr
    assert p.returncode == 1, (p.returncode, p.stderr)
