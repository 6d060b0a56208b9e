"""The TTIR disk cache of the Python front door (issue 8, item 6).

A damaged cache entry (truncated by a full disk or a killed writer, edited by hand, or another
entry's content under this entry's name) must never be used: tilescope names the file, compiles the
kernel again and replaces the entry. Writes are atomic (nothing half-written is left behind, even when
the write fails), the cache is bounded by size (least recently used entries go first), and `tilescope
cache clear` empties it. Expected outputs come from numpy.
"""
from __future__ import annotations

import os
import re
import resource
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from robust_support import KERNELS, PYTHON, clean_env, run, temp_left, tilescope_bin

ENTRY = re.compile(r"^[0-9a-f]{64}\.ttir$")


def _program(tmp_path: Path) -> str:
    p = tmp_path / "kernels_prog.py"
    p.write_text(KERNELS + "\ncheck_all()\n")
    return str(p)


def _sanitize(tmp_path: Path, cache: Path, prog: str, **env_extra):
    env = clean_env(tmp_path, TILESCOPE_CACHE_DIR=str(cache), **env_extra)
    return run(["sanitize", "--color", "never", "--", PYTHON, prog], tmp_path, env=env, timeout=300)


def _entries(cache: Path) -> dict[str, Path]:
    """kernel name -> its cache entry (found by the kernel's `tt.func public @NAME_kernel` in the text;
    other files are left out)."""
    out = {}
    for p in cache.iterdir():
        m = ENTRY.match(p.name) and re.search(r"tt\.func public @(\w+)_kernel", p.read_text(errors="replace"))
        if m:
            out[m.group(1)] = p
    return out


@pytest.fixture(scope="module")
def primed(tmp_path_factory):
    """(cache, program): a cache holding the entries of the program's three clean kernels, made by one
    sanitized run. The key of an entry includes the program's path: run this same program."""
    tmp = tmp_path_factory.mktemp("primed")
    cache = tmp / "cache"
    prog = _program(tmp)
    p = _sanitize(tmp, cache, prog)
    assert p.returncode == 0, p.stdout + p.stderr
    for k in ("add", "mul", "scale"):
        assert f"{k}-OK" in p.stdout, p.stdout + p.stderr
    entries = _entries(cache)
    assert sorted(entries) == ["add", "mul", "scale"], sorted(cache.iterdir())
    return cache, prog


def test_damaged_entries_are_named_recompiled_and_replaced(tmp_path, primed):
    cache = tmp_path / "cache"
    shutil.copytree(primed[0], cache)
    prog = primed[1]
    e = _entries(cache)
    pristine = {k: p.read_bytes() for k, p in e.items()}
    # add: truncated in the middle (a full disk, a killed writer before atomic writes)
    e["add"].write_bytes(pristine["add"][: len(pristine["add"]) // 2])
    # mul: one op changed by hand: x * y becomes x + y (still valid TTIR)
    assert pristine["mul"].count(b"arith.mulf") == 1
    e["mul"].write_bytes(pristine["mul"].replace(b"arith.mulf", b"arith.addf"))
    # scale: the content of another kernel's entry under this kernel's name
    e["scale"].write_bytes(pristine["add"])
    p = _sanitize(tmp_path, cache, prog)
    assert p.returncode == 0, p.stdout + p.stderr
    for k in ("add", "mul", "scale"):
        assert f"{k}-OK" in p.stdout, p.stdout + p.stderr
        assert str(e[k]) in p.stderr, f"the damaged entry of {k} is not named:\n{p.stderr}"
    # Replaced by good entries: a third run reads them without a warning and gets the same results.
    # An entry of the earlier format (the TTIR alone, unchecked) is replaced too, without a warning.
    assert {k: p.read_bytes() for k, p in _entries(cache).items()} == pristine
    e["mul"].write_bytes(pristine["mul"].split(b"\n", 1)[1])
    assert e["mul"].read_bytes().startswith(b"#loc")
    p = _sanitize(tmp_path, cache, prog)
    assert p.returncode == 0 and "warning" not in p.stderr, p.stdout + p.stderr
    assert all(f"{k}-OK" in p.stdout for k in ("add", "mul", "scale")), p.stdout
    assert e["mul"].read_bytes() == pristine["mul"]
    assert temp_left(tmp_path) == []


def test_size_limit_evicts_least_recently_used_entries(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    # Entries of other kernels, 40 KiB each, last used an hour ago and earlier (the oldest first),
    # except `recent`, used a minute ago; and a file that is not an entry, which must stay.
    now = time.time()
    names = [f"{i:064x}.ttir" for i in range(1, 7)]
    for i, name in enumerate(names):
        (cache / name).write_bytes(b"x" * 40960)
        t = now - 3600 * (10 - i)
        os.utime(cache / name, (t, t))
    recent = cache / names[0]
    os.utime(recent, (now - 60, now - 3600 * 10))
    (cache / "notes.txt").write_text("not a cache entry")
    limit = 160 * 1024
    p = _sanitize(tmp_path, cache, _program(tmp_path), TILESCOPE_CACHE_MAX_SIZE=str(limit))
    assert p.returncode == 0, p.stdout + p.stderr
    assert all(f"{k}-OK" in p.stdout for k in ("add", "mul", "scale")), p.stdout
    entries = [q for q in cache.iterdir() if ENTRY.match(q.name)]
    assert sum(q.stat().st_size for q in entries) <= limit
    left = {q.name for q in entries}
    assert recent.name in left  # used recently: kept
    assert names[1] not in left  # the least recently used one went first
    assert sorted(_entries(cache)) == ["add", "mul", "scale"]  # this run's entries are kept
    assert (cache / "notes.txt").exists()


def test_failed_cache_write_leaves_nothing_behind(tmp_path):
    # A file size limit of 1 KiB (as a full disk would) makes every TTIR entry write fail; the program
    # still runs correctly, nothing partial stays in the cache, and tilescope says why.
    cache = tmp_path / "cache"

    def limit_file_size():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a kill, as on a full disk
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))

    env = clean_env(tmp_path, TILESCOPE_CACHE_DIR=str(cache))
    p = subprocess.run([tilescope_bin(), "sanitize", "--color", "never", "--", PYTHON, _program(tmp_path)],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
                       preexec_fn=limit_file_size)
    assert p.returncode == 0, p.stdout + p.stderr
    assert all(f"{k}-OK" in p.stdout for k in ("add", "mul", "scale")), p.stdout
    assert sorted(q.name for q in cache.iterdir()) == [], "partial cache files were left"
    assert "cannot write" in p.stderr and str(cache) in p.stderr, p.stderr


def test_cache_clear_removes_entries_only(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / ("a" * 64 + ".ttir")).write_text("entry")
    (cache / ("b" * 64 + ".ttir")).write_text("entry 2")
    (cache / ("." + "c" * 64 + ".ttir.1234.5678.tmp")).write_text("a killed writer's temporary file")
    (cache / "keep.txt").write_text("not ours")
    (cache / "sub").mkdir()
    env = clean_env(tmp_path, TILESCOPE_CACHE_DIR=str(cache))
    p = run(["cache", "clear"], tmp_path, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert sorted(q.name for q in cache.iterdir()) == ["keep.txt", "sub"]
    assert "removed 3 files" in p.stdout and str(cache) in p.stdout, p.stdout
    # The default location is under HOME; an empty TILESCOPE_CACHE_DIR means the cache is off.
    home = tmp_path / "home"
    default = home / ".cache" / "tilescope" / "ttir"
    default.mkdir(parents=True)
    (default / ("d" * 64 + ".ttir")).write_text("entry")
    env = clean_env(tmp_path, HOME=str(home))
    del env["TILESCOPE_CACHE_DIR"]
    p = run(["cache", "clear"], tmp_path, env=env)
    assert p.returncode == 0 and list(default.iterdir()) == [], p.stdout + p.stderr
    p = run(["cache", "clear"], tmp_path, env=clean_env(tmp_path, TILESCOPE_CACHE_DIR=""))
    assert p.returncode == 0 and "off" in p.stdout, p.stdout + p.stderr
