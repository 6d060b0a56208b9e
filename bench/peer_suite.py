#!/usr/bin/env python3
"""Peers' own test suites, each run twice: under tilescope and under Triton's interpreter (issue 4, item 2;
issue 9, item 6).

    python3 bench/peer_suite.py [--suite liger|triton] [--files F ...] [--all] [--smoke] [-k EXPR]
                                [--timeout S] [--file-limit S] [--mode both|tilescope|interpret]
                                [--sdist PATH] [--src DIR] [--md bench/PEERS.md | --no-md] [--json results.json]
    python3 bench/peer_suite.py --suite S --render results.json ...   (the markdown from earlier --json runs)

One registry of suites (SUITES, at the end of the configuration part):

  liger   Liger-Kernel (PyPI `liger-kernel`, the version installed here). Its unit tests (`test/` of the
          repository) ship in the PyPI source distribution, so they are obtained from the registry, never
          committed here: `pip download --no-deps --no-binary :all: liger-kernel==<installed version>` into
          `.peer/` (git-ignored) unless `--sdist` names the archive or it is already there, then `test/` (and
          `src/`, which two test files load by path) are extracted into `.peer/liger-tests-<version>/`. A shim
          is written next to (above) its `test/` package: `conftest.py` and `pytest.ini`. The shim
            - makes `liger_kernel.utils.infer_device()` answer "cpu", so the tests put their tensors on the CPU
              even on a machine with a GPU (on a GPU-less machine it already does);
            - gives `torch.cpu` a `get_device_properties()` (total memory of this machine), which one test
              module asks of the device module at import time;
            - gives Liger's DyT backward (host code, `liger_kernel.ops.dyt`) a multiprocessor count (132) on
              the CPU, where it has none and fails before launching anything;
            - registers the `flaky` marker (pytest-rerunfailures is not installed: flaky tests run once).
  triton  Triton's own language tests (`python/test/unit/language/test_core.py`, `test_standard.py`,
          `test_random.py`) from `--src`, else `$TRITON_SRC` (a Triton checkout), else
          `../shared/third_party/triton-3.6` beside this repository: read there, never copied, unmodified and
          without any shim. They run in `python/test/` with Triton's own conftest, as Triton's CI runs them on
          the interpreter: `-m interpreter --device cpu`. The interpreter run uses numpy < 2.4 (numpy 2.4's
          `int()` of a 1-element array raises, which breaks the interpreter on every `range` with a runtime
          bound): if the installed numpy is newer, `pip install --target .peer/interp-numpy "numpy<2.4"` once,
          and that folder goes first on the interpreter run's PYTHONPATH only.

Each selected test file then runs in its own pytest process, twice:
  tilescope   `python -m tilescope sanitize --json F -- python -m pytest FILE`  (every @triton.jit launch
              runs on tilescope's CPU engine, under the sanitizer)
  interpret   `TRITON_INTERPRET=1 python -m pytest FILE`  (Triton's own interpreter)
with pytest-timeout's `--timeout` per test when pytest-timeout is installed, and a wall-clock limit per file.
Both load a reporting plugin (`-p tilescope_peer_log`, LOG_PLUGIN below, which only observes) that streams
every test's result as a JSON line, so a crashed or killed process still reports what ran.

Outcomes per test: passed, failed, error (setup/teardown/collection), skipped, timeout (pytest-timeout),
crashed (the process died or hit the per-file wall-clock limit during that test). Every test that fails
under tilescope is classified: by the suite's known-cause table (written after reading each failure) or, if
none matches, "unclassified" (to be read). Writes the suite's section of bench/PEERS.md (the other suites'
sections are kept).
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
PEER_DIR = os.path.join(ROOT, ".peer")
PACKAGE = "liger-kernel"

# The default selection: Liger's kernel tests (one Triton op family each) that finish in a few minutes under
# both tilescope and the interpreter on a 2-core machine. (Files left out: model-level tests that need
# Hugging Face model code or checkpoints, multi-GPU / CUDA-only files, and the largest parametrizations;
# `--all` runs every file of test/transformers.)
LIGER_FILES = [
    "test_geglu.py",
    "test_swiglu.py",
    "test_relu_squared.py",
    "test_layer_norm.py",
    "test_group_norm.py",
    "test_rms_norm.py",
    "test_poly_norm.py",
    "test_dyt.py",
    "test_softmax.py",
    "test_sparsemax.py",
    "test_embedding.py",
    "test_jsd.py",
    "test_kl_div.py",
    "test_tvd.py",
    "test_cross_entropy.py",
    "test_rope.py",
]
# -k filters of the default selection: the largest parametrizations (a 4096 x 32000 or larger input per
# test: minutes each under the interpreter) are left out; `--files F` or `--all` runs a file whole.
LIGER_FILTERS = {
    "test_kl_div.py": "not 4096",
    "test_tvd.py": "not 4096 and not 128256",
    "test_cross_entropy.py": "not 4096 and not 1024-32000",
    "test_rms_norm.py": "not large_row_offset and not int32_row_offset",
}
LIGER_SMOKE = "test_softmax.py"

# Known causes of failures under tilescope, read from the failure messages: (outcome or "*", regex on the
# test id + message, who is at fault, the cause). First match wins.
LIGER_CAUSES: list[tuple[str, str, str, str]] = [
    ("failed", r"test_layer_norm\.py::test_liger_layer_norm\[dtype1-", "test",
     "bf16: dW/dB compared with torch's CPU bf16 LayerNorm backward, which is 2-4x further from the float64 "
     "result than Liger's (checked: Liger on tilescope is within the test's 2e-2 of float64, torch CPU is not; "
     "e.g. 4x16x128 dB max error 0.058 vs 0.26)"),
    ("failed", r"test_group_norm\.py::test_liger_group_norm\[dtype0-0\.0001-0\.0001-16-48-12-8192\]", "test",
     "fp32 dBias sums 131072 terms per channel; torch's CPU GroupNorm backward is 4.4e-4 from the float64 "
     "result, Liger on tilescope 1.4e-4 (within the test's 1e-4 + 1e-4*|x| of float64; torch CPU is not)"),
    ("failed", r"test_tvd\.py::test_torch_compile_matches_eager\[mean\]", "unclassified (likely test)",
     "bit-equality of eager vs torch.compile: the two paths launch different specializations of "
     "_tv_distance_kernel (loss_stride == 1 folded in one) and the final sum of the mean runs in torch host "
     "code (eager vs inductor CPU reduction order); both print 0.0004; not yet traced"),
    ("failed", r"test_cross_entropy\.py::test_correctness_(not_last_layer|with_z_loss)_with_other_params.*dtype1-1e-08-1e-0[56]-",
     "unclassified (likely test)",
     "float32 gradients compared with torch's CPU cross-entropy at atol 1e-8 and rtol 1e-6 / 1e-5, summed over "
     "3 x 423 rows of 32000 classes: Liger's kernels differ from the reference by about 1.7e-5 relative (e.g. "
     "0.00083639 vs 0.00083637), the size of float32 exp/log differences; the same tests fail under the "
     "interpreter; not yet compared with a float64 result"),
    ("timeout", r".", "too slow", "exceeds the per-test time limit on this machine (not a wrong result)"),
    ("*", r"CUDA|cuda|Torch not compiled with CUDA", "test", "needs a CUDA device"),
    ("*", r"tilescope cannot run kernel|launch of kernel .* failed|CompileError|LaunchError", "tilescope",
     "tilescope rejects the kernel or the launch (see the message)"),
]


# Known causes of failures under the interpreter (regex on "outcome: message"), for the report.
LIGER_INTERP_CAUSES: list[tuple[str, str]] = [
    (r"unsupported operand type\(s\) for \+: 'int' and 'NoneType'",
     "the interpreter's `triton.language.extra.libdevice.tanh` returns None (checked with a 6-line kernel: "
     "`1 + tanh(v)` raises this), and Liger's GELU / tanh kernels use it"),
    (r"'float' object has no attribute 'to'",
     "a float kernel argument stays a Python float in the interpreter, and Liger calls `eps.to(dtype)` on it "
     "(e.g. liger_kernel/ops/rms_norm.py:117); compiled Triton makes it an fp32 scalar"),
    (r"0 active drivers",
     "Liger's host code asks Triton's driver for the device (no driver without a GPU; tilescope installs a "
     "stand-in)"),
]

LIGER_NOTES = """\
- The tests run as Liger ships them; nothing in `test/` is edited. The shim above `test/` (the same for both
  runs) makes the device "cpu", adds `torch.cpu.get_device_properties` (one module asks it at import), gives
  Liger's DyT backward host code a multiprocessor count on the CPU (it has one only for cuda/xpu/npu) and
  registers the `flaky` marker.
- Classification of a tilescope failure as the test's: the same computation was redone in float64 from the
  test's own inputs, and Liger's result under tilescope is within the test's tolerance of it while the torch
  CPU reference the test compares with is not (torch's CPU kernels accumulate differently from its CUDA ones,
  which the tolerances were set for).
- `skipped` includes the tests' own skips on a machine without CUDA (bf16 cases: Liger's `supports_bfloat16()`
  is False without CUDA; CUDA-only paths; multi-device tests) and xfails.
- `timeout` and `crashed` count as not passed. The interpreter is much slower than tilescope, so its timeouts
  are mostly the large parametrizations.
- Under `tilescope sanitize` the findings are the sanitizer's (out-of-bounds, undefined values, ...); any
  finding in a passing test would be either a Liger bug or a tilescope false positive.
"""

# Triton's own language tests: the files of issue 9, item 6, in the interpreter-marked selection.
TRITON_FILES = ["test_core.py", "test_standard.py", "test_random.py"]
TRITON_SMOKE = "test_random.py"
TRITON_PYTEST_ARGS = ["-m", "interpreter", "--device", "cpu"]
# Tests that skip themselves for tilescope's default target (sm_90: e.g. "float8e4b15 not supported on CUDA >=
# 9.0", "small dots are supported only on HIP") but run under the interpreter are run again, by node id, under
# tilescope with these targets in turn (each run takes the tests still skipped), as they would run on such a GPU.
TRITON_RETARGET = ["sm_80", "gfx942"]

# Known causes of failures of Triton's tests under tilescope (same form as LIGER_CAUSES), each written after
# reading the failures.
TRITON_CAUSES: list[tuple[str, str, str, str]] = [
    ("failed", r"test_cross_entropy\.py::test_correctness_(not_last_layer|with_z_loss)_with_other_params.*dtype1-1e-08-1e-0[56]-",
     "unclassified (likely test)",
     "float32 gradients compared with torch's CPU cross-entropy at atol 1e-8 and rtol 1e-6 / 1e-5, summed over "
     "3 x 423 rows of 32000 classes: Liger's kernels differ from the reference by about 1.7e-5 relative (e.g. "
     "0.00083639 vs 0.00083637), the size of float32 exp/log differences; the same tests fail under the "
     "interpreter; not yet compared with a float64 result"),
    ("timeout", r".", "too slow", "exceeds the per-test time limit on this machine (not a wrong result)"),
    ("*", r"tilescope cannot run kernel|launch of kernel .* failed|CompileError|LaunchError", "tilescope",
     "tilescope rejects the kernel or the launch (see the message)"),
]

# Known causes of failures of Triton's tests under the interpreter (regex on "outcome: message").
TRITON_INTERP_CAUSES: list[tuple[str, str]] = [
    (r"'<' not supported between instances of 'NoneType' and 'int'",
     "host code, not a kernel: test_zero_strided_tensors enters `torch.cuda.device(x.device.index)`; a CPU "
     "tensor's index is None, and CPU-only torch's `torch.cuda.device(None)` raises this (checked in a shell); "
     "under tilescope the emulated device's `torch.cuda.device` accepts it"),
    (r"only 0-dimensional arrays can be converted to Python scalars",
     "numpy >= 2.4 with the interpreter (a `range` with a runtime bound); the interpreter run uses numpy < 2.4"),
]

TRITON_NOTES = """\
- The tests run as Triton ships them, in `python/test/` with Triton's own `conftest.py`: nothing is edited or
  added (no shim). Both runs load only a reporting plugin (`-p tilescope_peer_log`) that records each test's
  outcome.
- `-m interpreter` is Triton's own selection of the tests its interpreter supports (as its CI runs them);
  `--device cpu` is Triton's conftest option that the tests' `device` fixture returns.
- The interpreter runs with numpy < 2.4 (see the script's docstring); tilescope with the installed numpy.
- `skipped` includes the tests' own skips (e.g. `is_interpreter()` / `is_cuda()` / capability checks, and
  cases that skip themselves for the data type or size).
- Under `tilescope sanitize` the findings are the sanitizer's; a finding in a test of Triton's own suite
  would be either a Triton test bug or a tilescope false positive.
- Tilescope's skips are the tests' own, for the GPU they see (an emulated H200 by default: `is_cuda()` is
  true, capability 9.0). The interpreter takes other branches (`is_interpreter()`), so it runs tests that no
  GPU backend runs: float64 dots with tf32x3 precision ("Only IEEE precision is supported for float64 dot"
  on CUDA, "float64 not supported on HIP yet" on AMD) and float64 3-D dots larger than any GPU's shared
  memory. Those with a GPU that runs them (K < 16 dots on AMD; float8e4b15 before sm_90) are run again
  under that `--target`.
- `test_dot` is parametrized differently for the interpreter and for a GPU (its case lists depend on the
  backend, e.g. `get_test_small_dots_cases()` is empty unless `is_cuda()`, and pytest then numbers repeated
  ids differently), so about 320 of its ids exist in one run only; all of them pass in the run that has them.
- The interpreter ran with numpy 2.3.5: with numpy 2.4 it raises `TypeError('only 0-dimensional arrays can
  be converted to Python scalars')` on a `range` with a runtime bound (checked with a 6-line kernel: numpy
  2.4.6 raises, 2.3.5 sums right).
"""


# ---------------------------------------------------------------------------------------------
# Getting the peer's tests


def installed_version() -> str:
    try:
        return importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        sys.exit(f"peer_suite: {PACKAGE} is not installed (pip install --no-deps {PACKAGE})")


def find_sdist(version: str, given: str | None) -> str:
    """The source archive of `version`: --sdist, one already in .peer/, or downloaded from PyPI."""
    if given:
        if not os.path.isfile(given):
            sys.exit(f"peer_suite: --sdist {given}: no such file")
        return given
    name = f"liger_kernel-{version}.tar.gz"
    cached = os.path.join(PEER_DIR, name)
    if os.path.isfile(cached):
        return cached
    os.makedirs(PEER_DIR, exist_ok=True)
    print(f"peer_suite: downloading the {PACKAGE} {version} source distribution (its tests) into .peer/",
          flush=True)
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
           "--no-binary", ":all:", f"{PACKAGE}=={version}", "-d", PEER_DIR]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0 or not os.path.isfile(cached):
        sys.exit(f"peer_suite: cannot download the {PACKAGE} {version} sdist:\n{r.stdout}{r.stderr}")
    return cached


def extract_tests(version: str, sdist: str) -> str:
    """.peer/liger-tests-<version>/ holding the sdist's test/ and src/; extracted once."""
    dest = os.path.join(PEER_DIR, f"liger-tests-{version}")
    if os.path.isfile(os.path.join(dest, "test", "conftest.py")):
        return dest
    tmp = dest + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    prefix = f"liger_kernel-{version}/"
    with tarfile.open(sdist) as tar:
        members = []
        for m in tar.getmembers():
            if not m.name.startswith(prefix):
                continue
            rel = m.name[len(prefix):]
            if rel.split("/", 1)[0] in ("test", "src") and (m.isfile() or m.isdir()):
                m.name = rel
                members.append(m)
        if not any(m.name == "test/conftest.py" for m in members):
            sys.exit(f"peer_suite: {sdist} has no test/ directory")
        tar.extractall(tmp, members=members, filter="data")
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(tmp, dest)
    return dest


SHIM_CONFTEST = '''\
"""Written by tilescope's bench/peer_suite.py (not part of the peer's tests): see its docstring."""
import os

import torch


def _cpu_device():
    return "cpu"


try:
    import liger_kernel.utils as _lu

    _lu.infer_device = _cpu_device  # test.utils and the test modules import it after this file runs
except ImportError:
    pass


class _CpuProps:
    def __init__(self):
        try:
            self.total_memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError):
            self.total_memory = 0
        self.name = "cpu"


if not hasattr(torch.cpu, "get_device_properties"):
    torch.cpu.get_device_properties = lambda device=None: _CpuProps()

# Liger's DyT backward (host code) sizes its partial-sum buffers by the device's multiprocessor count,
# which it knows only for cuda / xpu / npu (on "cpu" it raises UnboundLocalError). Answer for this module
# only, through its npu branch: 132, the SM count tilescope's stand-in driver reports (H100/H200).
try:
    import liger_kernel.ops.dyt as _dyt

    _dyt.infer_device = lambda: "npu"
    _dyt.get_npu_core_count = lambda: 132
except ImportError:
    pass
'''

# The reporting plugin, loaded with `-p tilescope_peer_log` in both runs of every suite (from a temporary
# folder put first on PYTHONPATH): it streams each test's result as a JSON line to $PEER_SUITE_LOG, so that a
# crashed or killed process still reports what ran. It only observes; it changes nothing in the tests.
LOG_PLUGIN = '''\
"""Written by tilescope's bench/peer_suite.py: per-test results as JSON lines (observes only)."""
import json
import os
import time

_LOG = os.environ.get("PEER_SUITE_LOG")


def _write(rec):
    if _LOG:
        with open(_LOG, "a") as f:
            f.write(json.dumps(rec) + "\\n")


def pytest_runtest_logstart(nodeid, location):
    _write({"event": "start", "nodeid": nodeid, "t": time.time()})


def pytest_runtest_logreport(report):
    msg = ""
    if report.failed or report.skipped:
        lr = report.longrepr
        if isinstance(lr, tuple) and len(lr) == 3:
            msg = str(lr[2])
        else:
            crash = getattr(lr, "reprcrash", None)
            msg = crash.message if crash is not None else str(lr)
    timeout = report.failed and "Timeout" in msg and "pytest_timeout" in str(report.longrepr)
    _write({"event": "report", "nodeid": report.nodeid, "when": report.when, "outcome": report.outcome,
            "timeout": bool(timeout), "duration": report.duration, "message": msg[:4000]})


def pytest_collectreport(report):
    if report.failed:
        _write({"event": "collect-error", "nodeid": report.nodeid, "message": str(report.longrepr)[-4000:]})
'''


SHIM_INI = """\
# Written by tilescope's bench/peer_suite.py (not part of the peer's tests).
[pytest]
markers =
    flaky: rerun marker of pytest-rerunfailures (not installed here: the test runs once)
filterwarnings =
    ignore::DeprecationWarning
"""


def write_shim(dest: str) -> None:
    for name, text in (("conftest.py", SHIM_CONFTEST), ("pytest.ini", SHIM_INI)):
        path = os.path.join(dest, name)
        if not os.path.isfile(path) or open(path).read() != text:
            with open(path, "w") as f:
                f.write(text)


def prepare_liger(args) -> str:
    """The folder Liger's tests run in: .peer/liger-tests-<version>/ with the shim."""
    version = installed_version()
    dest = extract_tests(version, find_sdist(version, args.sdist))
    write_shim(dest)
    return dest


def triton_src(given: str | None) -> str:
    """A Triton source tree holding python/test/unit/language: --src, $TRITON_SRC or ../shared/third_party."""
    candidates = [given] if given else []
    if os.environ.get("TRITON_SRC"):
        candidates.append(os.environ["TRITON_SRC"])
    candidates.append(os.path.join(ROOT, "..", "shared", "third_party", "triton-3.6"))
    for c in candidates:
        if c and os.path.isfile(os.path.join(c, "python", "test", "unit", "language", "test_core.py")):
            return os.path.abspath(c)
    sys.exit("peer_suite: Triton's tests not found: pass --src DIR or set TRITON_SRC to a Triton checkout (looked "
             "in: " + ", ".join(c for c in candidates if c) + ")")


def prepare_triton(args) -> str:
    """The folder Triton's tests run in: python/test/ of the source tree, as it is."""
    return os.path.join(triton_src(args.src), "python", "test")


def interp_numpy() -> str | None:
    """A folder holding numpy < 2.4 for the interpreter run, when the installed numpy is 2.4 or newer."""
    try:
        major, minor = (int(x) for x in importlib.metadata.version("numpy").split(".")[:2])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return None
    if (major, minor) < (2, 4):
        return None
    dest = os.path.join(PEER_DIR, "interp-numpy")
    if not os.path.isdir(os.path.join(dest, "numpy")):
        print("peer_suite: installing numpy<2.4 into .peer/interp-numpy/ for the interpreter run", flush=True)
        cmd = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--target", dest,
               "numpy<2.4"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"peer_suite: cannot install numpy<2.4 into {dest}:\n{r.stdout}{r.stderr}")
    return dest


@dataclasses.dataclass(frozen=True)
class Suite:
    """A peer's test suite: where its tests come from and how they run (see the module docstring)."""

    title: str  # the heading of its section in bench/PEERS.md
    make_target: str
    package: str  # the installed distribution whose version the report names
    tests: str  # where the tests come from, for the report
    prepare: object  # (args) -> the folder pytest runs in (its cwd and --rootdir)
    test_dir: str  # the test files' folder, relative to that
    files: list[str]  # the default selection
    smoke: str
    filters: dict[str, str]  # file -> -k expression of the default selection
    pytest_args: list[str]  # added to every pytest command
    shim_ini: bool  # run with the shim's pytest.ini (-c)
    old_numpy: bool  # the interpreter run gets numpy < 2.4 (interp_numpy)
    retarget: list[str]  # tilescope --target values for tests that skip themselves on the default target
    causes: list[tuple[str, str, str, str]]
    interp_causes: list[tuple[str, str]]
    notes: str
    # Findings in the peer's own kernels, each examined: (regex on "kind test_function", what it is). A
    # finding that matches none is listed as "not examined yet" (a false positive is a tilescope bug).
    finding_causes: list[tuple[str, str]] = dataclasses.field(default_factory=list)


# Findings of the race detector and the uninitialized-memory tracking in Triton's own test kernels, read one
# by one (the tests check compilation or values that these bugs do not change on today's GPUs).
TRITON_FINDING_CAUSES = [
    (r"^data-race test_atomic_cas$",
     "true race: test_atomic_cas[*-release] and [*-relaxed] take a spin lock with a compare-and-swap of sem "
     "'release' / 'relaxed', which acquires nothing, so the critical sections (load, add, store of the same "
     "128 floats by 2000 programs) are not ordered; the default, 'acquire' and 'acq_rel' cases have no finding"),
    (r"^data-race test_(load_scope_sem_coop_grid_cta_(not_)?one|clamp|clamp_symmetric|num_programs)$",
     "true race, benign values: every program of the grid loads / stores the same elements (no program id in "
     "the offsets), so the programs write the same bytes with nothing ordering them; they happen to write the "
     "same values"),
    (r"^uninitialized-read test_(load_cache_modifier|store_cache_modifier|store_eviction_policy|"
     r"vectorization_hints)$",
     "true read of never-written memory: the kernel loads `src = torch.empty(...)`, never filled (the test "
     "checks the generated PTX, not the values)"),
]


def finding_tests(fd: dict) -> list[str]:
    """The test functions (`test_*`) in a finding's launch stacks."""
    stacks = (fd.get("launches") or {}).get("stacks") or [fd.get("launch_stack") or []]
    return sorted({fr.rsplit(" in ", 1)[-1] for st in stacks for fr in st if " in test_" in fr})


SUITES: dict[str, Suite] = {
    "liger": Suite(
        title="Liger-Kernel's own tests", make_target="test-peers", package=PACKAGE,
        tests="`test/transformers/` of the liger-kernel sdist (PyPI), unmodified; a shim `conftest.py` and "
              "`pytest.ini` above it (script docstring)",
        prepare=prepare_liger, test_dir="test/transformers", files=LIGER_FILES, smoke=LIGER_SMOKE,
        filters=LIGER_FILTERS, pytest_args=[], shim_ini=True, old_numpy=False, retarget=[], causes=LIGER_CAUSES,
        interp_causes=LIGER_INTERP_CAUSES, notes=LIGER_NOTES),
    "triton": Suite(
        title="Triton's own language tests", make_target="test-triton", package="triton",
        tests="`python/test/unit/language/` of Triton 3.6 (`../shared/third_party/triton-3.6` or `TRITON_SRC`), "
              "unmodified, no shim",
        prepare=prepare_triton, test_dir="unit/language", files=TRITON_FILES, smoke=TRITON_SMOKE, filters={},
        pytest_args=TRITON_PYTEST_ARGS, shim_ini=False, old_numpy=True, retarget=TRITON_RETARGET,
        causes=TRITON_CAUSES,
        interp_causes=TRITON_INTERP_CAUSES, notes=TRITON_NOTES, finding_causes=TRITON_FINDING_CAUSES),
}


# ---------------------------------------------------------------------------------------------
# Running


def has_pytest_timeout() -> bool:
    try:
        importlib.metadata.version("pytest-timeout")
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


def clean_env() -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TILESCOPE_") or k == "TILESCOPE_BIN"}
    env.pop("TRITON_INTERPRET", None)
    env.pop("PYTEST_ADDOPTS", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run_file(suite: Suite, dest: str, relfile: str, mode: str, timeout: int | None, file_limit: int,
             extra: list[str], numpy_dir: str | None = None, target: str | None = None,
             nodeids: list[str] | None = None) -> dict:
    """Run one test file of `suite` under `mode`; per-test outcomes, findings and wall time. `numpy_dir` goes
    first on the interpreter run's PYTHONPATH; `target` is tilescope's --target; `nodeids` runs only those
    tests of the file."""
    work = tempfile.mkdtemp(prefix="peer-suite-")
    log = os.path.join(work, "results.jsonl")
    findings_json = os.path.join(work, "findings.json")
    with open(os.path.join(work, "tilescope_peer_log.py"), "w") as f:
        f.write(LOG_PLUGIN)
    env = clean_env()
    env["PEER_SUITE_LOG"] = log
    path = [work] + ([numpy_dir] if mode == "interpret" and numpy_dir else [])
    env["PYTHONPATH"] = os.pathsep.join(path + [p for p in [os.environ.get("PYTHONPATH")] if p])
    pytest_cmd = [sys.executable, "-m", "pytest", "-q", "-p", "tilescope_peer_log", "-p", "no:cacheprovider",
                  "--rootdir", dest]
    if suite.shim_ini:
        pytest_cmd += ["-c", os.path.join(dest, "pytest.ini")]
    pytest_cmd += (nodeids or [relfile]) + suite.pytest_args + extra
    if timeout:
        pytest_cmd += [f"--timeout={timeout}"]
    if mode == "tilescope":
        cmd = [sys.executable, "-m", "tilescope", "sanitize", "--color", "never", "--json", findings_json]
        cmd += (["--target", target] if target else []) + ["--"] + pytest_cmd
    else:
        env["TRITON_INTERPRET"] = "1"
        cmd = pytest_cmd
    t0 = time.time()
    killed = False
    out_path = os.path.join(work, "output.txt")
    with open(out_path, "w") as out:
        p = subprocess.Popen(cmd, cwd=dest, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = p.wait(timeout=file_limit)
        except subprocess.TimeoutExpired:
            killed = True
            os.killpg(p.pid, 9)
            rc = p.wait()
    wall = time.time() - t0
    tests, collect_errors = read_log(log, crashed_reason="killed at the per-file limit" if killed else
                                     f"the process died (exit status {rc})")
    findings = []
    if mode == "tilescope" and os.path.isfile(findings_json):
        try:
            with open(findings_json) as f:
                doc = json.load(f)
            findings = doc if isinstance(doc, list) else doc.get("findings", [])
        except (OSError, ValueError):
            pass
    with open(out_path, errors="replace") as f:
        tail = f.read()[-3000:]
    shutil.rmtree(work, ignore_errors=True)
    return {"file": relfile, "mode": mode, "rc": rc, "killed": killed, "wall": wall, "tests": tests,
            "collect_errors": collect_errors, "findings": findings, "tail": tail}


def read_log(log: str, crashed_reason: str):
    """{nodeid: {outcome, message, duration}} from the shim's JSON lines, and the collection errors."""
    tests: dict[str, dict] = {}
    collect_errors = []
    started = None
    if not os.path.isfile(log):
        return tests, collect_errors
    with open(log) as f:
        for line in f:
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if r["event"] == "collect-error":
                collect_errors.append({"nodeid": r["nodeid"], "message": r["message"]})
            elif r["event"] == "start":
                started = r["nodeid"]
                tests.setdefault(started, {"outcome": None, "message": "", "duration": 0.0})
            elif r["event"] == "report":
                t = tests.setdefault(r["nodeid"], {"outcome": None, "message": "", "duration": 0.0})
                t["duration"] += r["duration"]
                o = r["outcome"]
                if r["when"] == "call":
                    if o == "failed":
                        t["outcome"], t["message"] = ("timeout" if r["timeout"] else "failed"), r["message"]
                    elif t["outcome"] is None:
                        t["outcome"] = o
                        if o == "skipped":
                            t["message"] = r["message"]
                elif o == "failed":  # setup or teardown
                    if t["outcome"] in (None, "passed"):
                        t["outcome"] = "timeout" if r["timeout"] else "error"
                        t["message"] = r["message"]
                elif o == "skipped" and t["outcome"] is None:
                    t["outcome"], t["message"] = "skipped", r["message"]
                if r["when"] == "teardown" and started == r["nodeid"]:
                    started = None
    for nodeid, t in tests.items():
        if t["outcome"] is None:
            t["outcome"] = "crashed"
            t["message"] = crashed_reason
    return tests, collect_errors


OUTCOMES = ("passed", "failed", "error", "timeout", "crashed", "skipped")


def tally(tests) -> str:
    """'passed 3, skipped 1' of an iterable of tests."""
    c: dict[str, int] = {}
    for t in tests:
        c[t["outcome"]] = c.get(t["outcome"], 0) + 1
    return ", ".join(f"{o} {c[o]}" for o in OUTCOMES if c.get(o))


def counts(results: list[dict]) -> dict:
    c = {o: 0 for o in OUTCOMES}
    for r in results:
        for t in r["tests"].values():
            c[t["outcome"]] += 1
        c["error"] += len(r["collect_errors"])
    return c


def classify(suite: Suite, test_id: str, outcome: str, message: str) -> tuple[str, str]:
    text = f"{test_id}\n{message}"
    for oc, pattern, who, why in suite.causes:
        if (oc == "*" or oc == outcome) and re.search(pattern, text):
            return who, why
    return "unclassified", "to be read"


# ---------------------------------------------------------------------------------------------
# Report


def interp_cause(msg: str) -> str:
    """The part of a failure message that names its cause (drops tensor dumps, keeps the exception)."""
    m = re.search(r"InterpreterError: (.*)", msg)
    if m:
        return "InterpreterError: " + m.group(1)
    if "Mismatched elements" in msg or "Tensor-likes are not close" in msg:
        return "assert_close: values differ"
    if msg.startswith("assert False") or "allclose" in msg:
        return "allclose: values differ"
    return msg


def first_line(msg: str, width: int = 160) -> str:
    msg = " ".join(l.strip() for l in msg.strip().splitlines()[:3] if l.strip())
    msg = msg.replace("|", "\\|")
    return msg if len(msg) <= width else msg[: width - 3] + "..."


def versions(suite: Suite) -> dict:
    def v(name):
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return "not installed"

    names = dict.fromkeys((suite.package, "triton", "torch", "numpy", "pytest", "pytest-timeout", "tilescope"))
    if suite.package == PACKAGE:
        names["transformers"] = None
    return {name: v(name) for name in names}


def machine() -> str:
    model = platform.processor() or "?"
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        m = re.search(r"Model name:\s*(.+)", out)
        if m:
            model = m.group(1).strip()
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


SECTION = "<!-- peer-suite {name} -->"
SECTION_END = "<!-- /peer-suite {name} -->"
PEERS_HEAD = """\
# Peers' test suites under tilescope and under TRITON_INTERPRET=1

Produced by `bench/peer_suite.py` (`make test-peers`: Liger-Kernel's tests; `make test-triton`: Triton's own
language tests); see the README, "Peer test suites". Each suite's section is rewritten by its own run.
"""


def write_markdown(path: str, name: str, args, version: str, files: list[str], by_mode: dict,
                   ts_timeout: int | None) -> str:
    """Suite `name`'s section of the report; written into `path` in place of its earlier section."""
    suite = SUITES[name]
    L = [SECTION.format(name=name)]
    L.append(f"## {suite.title} under tilescope and under TRITON_INTERPRET=1\n")
    L.append(f"Produced by `make {suite.make_target}` (`python3 bench/peer_suite.py --suite {name}`).\n")
    L.append("### Setup\n")
    vs = versions(suite)
    L.append("| what | value |\n| --- | --- |")
    for k, val in vs.items():
        L.append(f"| {k} | {val} |")
    if suite.old_numpy:
        folder = os.path.join(PEER_DIR, "interp-numpy")
        found = [d.version for d in importlib.metadata.distributions(path=[folder]) if d.metadata["Name"] == "numpy"]
        L.append(f"| numpy of the interpreter run | {found[0] + ' (.peer/interp-numpy)' if found else vs['numpy']} |")
    L.append(f"| machine | {machine()} |")
    L.append(f"| tests | {suite.tests} |")
    L.append(f"| per-test limit | {f'{ts_timeout} s (pytest-timeout)' if ts_timeout else 'none (pytest-timeout not installed)'} |")
    L.append(f"| per-file limit | {args.file_limit} s wall clock |")
    L.append("")
    where = (f"`.peer/liger-tests-{version}/` (the shim `conftest.py` and `pytest.ini` written there by the script)"
             if suite.shim_ini else "`python/test/` of the Triton source tree, as it is")
    L.append(f"Commands, for each test file F, in {where}:\n")
    tflag = f" --timeout={ts_timeout}" if ts_timeout else ""
    targs = "".join(" " + a for a in suite.pytest_args)
    L.append("```")
    L.append(f"python3 -m tilescope sanitize --json findings.json -- python3 -m pytest -q {suite.test_dir}/F{targs}{tflag}")
    np_note = " (numpy < 2.4 first on PYTHONPATH)" if suite.old_numpy else ""
    L.append(f"TRITON_INTERPRET=1 python3 -m pytest -q {suite.test_dir}/F{targs}{tflag}{np_note}")
    L.append("```\n")

    modes = [m for m in ("tilescope", "interpret") if m in by_mode]
    L.append("### Totals\n")
    L.append("| run | " + " | ".join(OUTCOMES) + " | wall time |")
    L.append("| --- |" + " ---: |" * (len(OUTCOMES) + 1))
    for m in modes:
        c = counts(by_mode[m])
        wall = sum(r["wall"] for r in by_mode[m])
        L.append(f"| {m} | " + " | ".join(str(c[o]) for o in OUTCOMES) + f" | {wall:.0f} s |")
        for target in suite.retarget if m == "tilescope" else []:
            rs = [r["retarget"][target] for r in by_mode[m] if target in r.get("retarget", {})]
            if rs:
                c = counts(rs)
                L.append(f"| tilescope --target {target}, again: the tests above skipped that the interpreter ran | "
                         + " | ".join(str(c[o]) for o in OUTCOMES) + f" | {sum(r['wall'] for r in rs):.0f} s |")
    L.append("")

    L.append("### Per file\n")
    head = "| file | " + " | ".join(f"{m} pass/fail/err/timeout/crash/skip" for m in modes) + " | "
    head += " | ".join(f"{m} time" for m in modes) + " |"
    L.append(head)
    L.append("| --- |" + " --- |" * (2 * len(modes)))
    for i, f in enumerate(files):
        k = by_mode[modes[0]][i].get("k")
        row = [f + (f" (`-k '{k}'`)" if k else "")]
        for m in modes:
            c = counts([by_mode[m][i]])
            row.append("/".join(str(c[o]) for o in OUTCOMES))
        for m in modes:
            cut = " (cut at the per-file limit: later tests not run)" if by_mode[m][i]["killed"] else ""
            row.append(f"{by_mode[m][i]['wall']:.0f} s{cut}")
        L.append("| " + " | ".join(row) + " |")
    L.append("")

    if "tilescope" in by_mode and "interpret" in by_mode:
        ts_all = {k: t for r in by_mode["tilescope"] for k, t in effective(r).items()}
        in_all = {k: t for r in by_mode["interpret"] for k, t in r["tests"].items()}
        both = ts_all.keys() & in_all.keys()
        in_pass = {k for k in both if in_all[k]["outcome"] == "passed"}
        failing = sorted(k for k in in_pass if ts_all[k]["outcome"] not in ("passed", "skipped"))
        skipped = sorted(k for k in in_pass if ts_all[k]["outcome"] == "skipped")
        only_ts = sorted(k for k in both if ts_all[k]["outcome"] == "passed" and in_all[k]["outcome"] != "passed")
        L.append("### The aim: tilescope passes everything the interpreter passes\n")
        L.append("- " + ("met" if not failing else f"NOT met: {len(failing)} test(s) pass under the interpreter and "
                         "not under tilescope") + f": of the {len(in_pass)} tests collected in both runs that pass under the "
                 f"interpreter, tilescope passes {sum(1 for k in in_pass if ts_all[k]['outcome'] == 'passed')}"
                 + (f" and skips {len(skipped)} (below)" if skipped else "") + ".")
        for k in failing:
            t = ts_all[k]
            L.append(f"  - `{k}` (tilescope: {t['outcome']}: {first_line(t['message'], 120)})")
        for target in suite.retarget:
            ks = [k for k in both if ts_all[k].get("target") == target]
            if ks:
                L.append(f"- Run again under `tilescope sanitize --target {target}` (they skip themselves on the default "
                         f"target and run under the interpreter): {len(ks)} tests, {tally(ts_all[k] for k in ks)}.")
        if skipped:
            L.append(f"- Skipped under tilescope on every target tried, run (and passed) by the interpreter: "
                     f"{len(skipped)}; the tests' own skips for the GPU they see (by message):")
            groups: dict[str, list[str]] = {}
            for k in skipped:
                groups.setdefault(first_line(ts_all[k]["message"], 120), []).append(k)
            for msg, ks in sorted(groups.items(), key=lambda kv: -len(kv[1])):
                L.append(f"  - {len(ks)}: {msg} (e.g. `{ks[0]}`)")
        only = [(name, a.keys() - b.keys(), a) for name, a, b in
                (("tilescope", ts_all, in_all), ("the interpreter", in_all, ts_all))]
        if any(ks for _, ks, _ in only):
            L.append("- Collected in one run only (the test's parametrization depends on the backend it sees): "
                     + "; ".join(f"{name} {len(ks)} ({tally(a[k] for k in ks)})" for name, ks, a in only) + ".")
        L.append(f"- Passing under tilescope but not under the interpreter: {len(only_ts)}"
                 + (f" (interpreter: {tally(in_all[k] for k in only_ts)})" if only_ts else "") + ".")
        L.append("")

    if "tilescope" in by_mode:
        L.append("### Every test that did not pass under tilescope, classified\n")
        L.append("Who is at fault: `tilescope` (a tilescope bug), `test` (the test needs what a CPU run cannot give), "
                 "`too slow` (past the time limit), `unclassified` (not read yet).\n")
        rows = []
        inter = {}
        for r in by_mode.get("interpret", []):
            inter.update(r["tests"])
        for r in by_mode["tilescope"]:
            for ce in r["collect_errors"]:
                who, why = classify(suite, ce["nodeid"], "error", ce["message"])
                rows.append((ce["nodeid"], "collection error", "-", who, why, first_line(ce["message"])))
            for k, t in sorted(effective(r).items()):
                if t["outcome"] in ("passed", "skipped"):
                    continue
                who, why = classify(suite, k, t["outcome"], t["message"])
                io = inter.get(k, {}).get("outcome", "-")
                outcome = t["outcome"] + (f" (`--target {t['target']}`)" if t.get("target") else "")
                rows.append((k, outcome, io, who, why, first_line(t["message"])))
        if rows:
            L.append("| test | tilescope | interpreter | fault | cause | message |")
            L.append("| --- | --- | --- | --- | --- | --- |")
            for row in rows:
                L.append("| `" + row[0] + "` | " + " | ".join(row[1:]) + " |")
        else:
            L.append("None.")
        L.append("")
        runs = [(r["file"], x) for r in by_mode["tilescope"] for x in [r, *r.get("retarget", {}).values()]]
        nf = sum(len(x["findings"]) for _, x in runs)
        L.append("### Sanitizer findings in the peer's kernels\n")
        if nf == 0:
            L.append("None: the sanitizer reported no finding in any launch of these tests.\n")
        else:
            L.append(f"{nf} finding(s), grouped by kind, test and line; each examined (the cause column):\n")
            L.append("| findings | kind | test | kernel | line | cause |")
            L.append("| ---: | --- | --- | --- | --- | --- |")
            groups: dict[tuple, int] = {}
            for file, x in runs:
                for fd in x["findings"]:
                    tests = ", ".join(finding_tests(fd)) or "?"
                    where = f"{os.path.basename(fd.get('file') or file)}:{fd.get('line', '?')}"
                    key = (fd.get("kind"), tests, fd.get("kernel"), where)
                    groups[key] = groups.get(key, 0) + 1
            for (kind, tests, kernel, where), n in sorted(groups.items(), key=lambda kv: kv[0][3]):
                why = next((w for pat, w in suite.finding_causes if re.search(pat, f"{kind} {tests}")),
                           "not examined yet")
                L.append(f"| {n} | {kind} | {tests} | {kernel} | {where} | {why} |")
            L.append("")
    if "interpret" in by_mode:
        groups: dict[str, int] = {}
        for r in by_mode["interpret"]:
            for t in r["tests"].values():
                if t["outcome"] not in ("passed", "skipped"):
                    key = f"{t['outcome']}: {first_line(interp_cause(t['message']), 150)}"
                    groups[key] = groups.get(key, 0) + 1
        L.append("### Why tests did not pass under the interpreter (grouped by message)\n")
        if groups:
            L.append("| tests | outcome: message | cause |")
            L.append("| ---: | --- | --- |")
            for k, n in sorted(groups.items(), key=lambda kv: -kv[1]):
                why = next((w for pat, w in suite.interp_causes if re.search(pat, k)), "")
                L.append(f"| {n} | {k} | {why} |")
        else:
            L.append("None.")
        L.append("")
    L.append("### Notes\n")
    L.append(suite.notes.rstrip("\n"))
    L.append(SECTION_END.format(name=name))
    text = "\n".join(L) + "\n"
    if path:
        replace_section(path, name, text)
    return text


def replace_section(path: str, name: str, text: str) -> None:
    """Put `text` (a suite's section, with its markers) into the report at `path`, replacing that suite's
    earlier section and keeping the others, in SUITES order."""
    old = open(path).read() if os.path.isfile(path) else ""
    sections = {}
    for other in SUITES:
        a, b = SECTION.format(name=other), SECTION_END.format(name=other)
        if a in old and b in old:
            sections[other] = old[old.index(a):old.index(b) + len(b)] + "\n"
    sections[name] = text
    out = PEERS_HEAD + "".join("\n" + sections[k] for k in SUITES if k in sections)
    with open(path, "w") as f:
        f.write(out)




def run_retargeted(suite: Suite, dest: str, relfile: str, ts_run: dict, in_run: dict, timeout, file_limit,
                   extra) -> None:
    """The tests of `ts_run` skipped under tilescope's default target that the interpreter ran: run again under
    each of suite.retarget in turn; the runs are kept in ts_run["retarget"] (target -> run)."""
    todo = sorted(k for k, t in ts_run["tests"].items()
                  if t["outcome"] == "skipped" and in_run["tests"].get(k, {}).get("outcome", "skipped") != "skipped")
    ts_run["retarget"] = {}
    for target in suite.retarget:
        if not todo:
            break
        r = run_file(suite, dest, relfile, "tilescope", timeout, file_limit, extra, target=target, nodeids=todo)
        ts_run["retarget"][target] = r
        todo = [k for k in todo if r["tests"].get(k, {}).get("outcome", "skipped") == "skipped"]


def effective(run: dict) -> dict:
    """{nodeid: test} of a tilescope run, a test skipped on the default target taking its outcome from the first
    retargeted run that did not skip it (with "target" set)."""
    tests = dict(run["tests"])
    for target, r in run.get("retarget", {}).items():
        for k, t in r["tests"].items():
            if tests.get(k, {}).get("outcome") == "skipped" and t["outcome"] != "skipped":
                tests[k] = {**t, "target": target}
    return tests


def save_json(args, version, files, timeout, by_mode) -> None:
    """The results so far: the files run under every mode."""
    last = list(by_mode)[-1]
    done = [r["file"] for r in by_mode[last]]
    results = {m: [r for r in runs if r["file"] in done] for m, runs in by_mode.items()}
    tmp = args.json + ".tmp"
    with open(tmp, "w") as fh:
        json.dump({"suite": args.suite, "version": version, "files": done, "timeout": timeout,
                   "file_limit": args.file_limit, "results": results}, fh, indent=1)
    os.replace(tmp, args.json)


def render(args) -> int:
    files: list[str] = []
    by_mode: dict[str, dict[str, dict]] = {}
    version = timeout = None
    for path in args.render:
        with open(path) as fh:
            doc = json.load(fh)
        if doc.get("suite", "liger") != args.suite:
            sys.exit(f"peer_suite: {path} holds results of suite {doc.get('suite', 'liger')}, not {args.suite}")
        version = doc["version"]
        timeout = doc.get("timeout", args.timeout)
        args.file_limit = doc.get("file_limit", args.file_limit)
        for f in doc["files"]:
            if f not in files:
                files.append(f)
        for m, runs in doc["results"].items():
            for r in runs:
                by_mode.setdefault(m, {})[r["file"]] = r
    files = [f for f in files if all(f in by_mode[m] for m in by_mode)]
    results = {m: [by_mode[m][f] for f in files] for m in by_mode}
    write_markdown(args.md, args.suite, args, version, files, results, timeout)
    print(f"wrote {os.path.relpath(args.md, ROOT)}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--suite", choices=tuple(SUITES), default="liger", help="which peer's tests (default: liger)")
    ap.add_argument("--files", nargs="*", help="test files of the suite's test folder (default: its selection)")
    ap.add_argument("--all", action="store_true", help="every test_*.py of the suite's test folder")
    ap.add_argument("--smoke", action="store_true", help="only the suite's smoke file")
    ap.add_argument("-k", dest="keyword", help="pytest -k expression, applied to every file")
    ap.add_argument("--mode", choices=("both", "tilescope", "interpret"), default="both")
    ap.add_argument("--timeout", type=int, default=120, help="per-test limit in seconds (pytest-timeout)")
    ap.add_argument("--file-limit", type=int, default=900, help="wall-clock limit per file and run, seconds")
    ap.add_argument("--sdist", help="liger: the liger-kernel sdist (.tar.gz); default: .peer/ or download from PyPI")
    ap.add_argument("--src", help="triton: a Triton source tree (default: $TRITON_SRC, ../shared/third_party/triton-3.6)")
    ap.add_argument("--md", default=os.path.join(ROOT, "bench", "PEERS.md"), help="markdown report path")
    ap.add_argument("--no-md", action="store_true", help="do not write the markdown report")
    ap.add_argument("--json", help="write the raw per-test results here")
    ap.add_argument("--fetch-only", action="store_true", help="only obtain the tests, print the folder they run in")
    ap.add_argument("--render", nargs="+", metavar="JSON",
                    help="only write the markdown from earlier --json results (a later file's runs of a test file "
                         "replace an earlier one's)")
    args = ap.parse_args(argv)
    suite = SUITES[args.suite]

    if args.render:
        return render(args)
    version = installed_version() if suite.package == PACKAGE else importlib.metadata.version(suite.package)
    dest = suite.prepare(args)
    if args.fetch_only:
        print(dest)
        return 0

    tdir = os.path.join(dest, suite.test_dir)
    if args.all:
        files = sorted(f for f in os.listdir(tdir) if f.startswith("test_") and f.endswith(".py"))
    elif args.smoke:
        files = [suite.smoke]
    else:
        files = args.files or suite.files
    for f in files:
        if not os.path.isfile(os.path.join(tdir, f)):
            sys.exit(f"peer_suite: no test file {f} in {tdir}")
    timeout = args.timeout if has_pytest_timeout() and args.timeout > 0 else None
    modes = ["tilescope", "interpret"] if args.mode == "both" else [args.mode]
    default_selection = not (args.files or args.all or args.smoke)
    numpy_dir = interp_numpy() if suite.old_numpy and "interpret" in modes else None

    by_mode = {m: [] for m in modes}
    for f in files:
        kexpr = args.keyword or (suite.filters.get(f) if default_selection else None)
        extra = ["-k", kexpr] if kexpr else []
        for m in modes:
            r = run_file(suite, dest, f"{suite.test_dir}/{f}", m, timeout, args.file_limit, extra, numpy_dir)
            r["file"] = f
            r["k"] = kexpr
            by_mode[m].append(r)
            if args.json:  # after every file, so that an interrupted run keeps what it did
                save_json(args, version, files, timeout, by_mode)
            c = counts([r])
            print(f"{f:40s} {m:10s} " + " ".join(f"{o} {c[o]}" for o in OUTCOMES if c[o])
                  + f"  ({r['wall']:.0f} s" + (f", {len(r['findings'])} findings" if r["findings"] else "") + ")",
                  flush=True)
            if not r["tests"] and not r["collect_errors"]:
                print(r["tail"], flush=True)
        if suite.retarget and len(by_mode) == 2:
            ts_run, in_run = by_mode["tilescope"][-1], by_mode["interpret"][-1]
            run_retargeted(suite, dest, f"{suite.test_dir}/{f}", ts_run, in_run, timeout, args.file_limit, extra)
            for target, r in ts_run["retarget"].items():
                c = counts([r])
                print(f"{f:40s} {'--target ' + target:10s} " + " ".join(f"{o} {c[o]}" for o in OUTCOMES if c[o])
                      + f"  ({r['wall']:.0f} s)", flush=True)
            if args.json:
                save_json(args, version, files, timeout, by_mode)

    for m in modes:
        c = counts(by_mode[m])
        print(f"{m}: " + ", ".join(f"{c[o]} {o}" for o in OUTCOMES), flush=True)
    if args.json:
        save_json(args, version, files, timeout, by_mode)
    if not args.no_md:
        write_markdown(args.md, args.suite, args, version, files, by_mode, timeout)
        print(f"wrote {os.path.relpath(args.md, ROOT)}")
    if "tilescope" in by_mode and "interpret" in by_mode:
        ts_eff = {k: t for r in by_mode["tilescope"] for k, t in effective(r).items()}
        ts = {k for k, t in ts_eff.items() if t["outcome"] == "passed"}
        it = {k for r in by_mode["interpret"] for k, t in r["tests"].items() if t["outcome"] == "passed"}
        missing = sorted(k for k in it if k in ts_eff and ts_eff[k]["outcome"] not in ("passed", "skipped"))
        print(f"tilescope passed {len(ts)}, the interpreter {len(it)}; passed by the interpreter and failed under "
              f"tilescope: {len(missing)}")
        for k in missing:
            print(f"  {k}")
        return 1 if missing else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
