"""Replay the examples' kernel launches recorded on an NVIDIA GPU (tests/gpu/record_examples.py) on
tilescope, and compare with the GPU's results.

For each recorded launch: the example module is imported (examples/<name>.py, unchanged; its source
must be the one recorded, by sha256), every tensor argument is rebuilt on the CPU from the storage
bytes saved before the GPU launch (same dtype, shape, strides, storage offset, and aliasing: arguments
on one storage share it), and the same kernel object (its JITFunction, under any autotune/heuristics
wrapper, launched with the constexprs and options that ran on the GPU, including the autotuner's
chosen configuration) is launched through tilescope's in-process capture with the recorded grid. The
launch must report zero findings, and every storage must then equal the GPU's post-launch bytes:

* Bytes outside every tensor argument's view, and every integer/bool element: bit-exact.
* Float elements: bit-exact (any NaN equals any NaN), or within the policy of POLICY below, per
  (example, kernel, argument). The reasons, as for tests/python/test_gpu_truth.py (reference §2.2, §5):
  - reductions (tl.sum/tl.max of floats, tl.cumsum) run in the hardware's warp-shuffle/tree order:
    numpy.isclose with a relative bound of about 100 float32 ulps (Close);
  - approximate GPU math (tl.exp / tl.log via ex2/lg2.approx, `/` via div.full, tl.sqrt via
    sqrt.approx, tl.sigmoid): a few ulps, in the output's own format (Ulp for float16 outputs);
  - tl.dot: the accumulation order is the tensor cores' (and fp32 inputs are rounded to TF32 on both
    sides): |got - gpu| <= scale * (|A| @ |B|), with A and B the recorded input matrices (DotTol);
  - float atomics (tl.atomic_add of fp32 partial tiles): any order of the adds, within the same bound;
  - attention: TF32 rounding of exp() outputs fed to a second dot can round the other way when exp
    differs by an ulp: one term moves by 2^-11 of itself, so a Close bound of 1e-4.
  A float argument without an entry must be bit-exact.

Data: tests/gpu/data/examples.npz + examples.json (TILESCOPE_GPU_EXAMPLES=DIR to use another folder).
They must come from a GPU run (executor "cuda"); data recorded with `record_examples.py --self-test`
(tilescope as the executor) is refused unless TILESCOPE_GPU_EXAMPLES_ALLOW_SELF_TEST=1, which only
tests this harness. Missing data is a failure, not a skip.
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

import expected as ex

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "gpu"))
import record_examples as rx  # noqa: E402

DATA = os.environ.get("TILESCOPE_GPU_EXAMPLES") or os.path.join(ROOT, "tests", "gpu", "data")
NPZ = os.path.join(DATA, "examples.npz")
INDEX = os.path.join(DATA, "examples.json")
ALLOW_SELF_TEST = os.environ.get("TILESCOPE_GPU_EXAMPLES_ALLOW_SELF_TEST", "") not in ("", "0")
REGENERATE = ("record them on a CUDA machine from the repository root with "
              "`python3 tests/gpu/record_examples.py --out tests/gpu/data` (see tests/gpu/README.md)")


def _load():
    if not (os.path.exists(NPZ) and os.path.exists(INDEX)):
        return None, {}
    with open(INDEX) as f:
        meta = json.load(f)
    z = np.load(NPZ)
    return meta, {k: z[k] for k in z.files}


META, ARR = _load()


# --------------------------------------------------------------------------------------------------
# Dtypes: torch dtype name -> (numpy storage dtype, expected.Exact dtype tag for non-numpy floats)

DTYPES = {
    "float64": (np.float64, None), "float32": (np.float32, None), "float16": (np.float16, None),
    "bfloat16": (np.uint16, "bf16"), "float8_e5m2": (np.uint8, "f8e5"), "float8_e4m3fn": (np.uint8, "f8e4nv"),
    "int64": (np.int64, None), "int32": (np.int32, None), "int16": (np.int16, None), "int8": (np.int8, None),
    "uint64": (np.uint64, None), "uint32": (np.uint32, None), "uint16": (np.uint16, None), "uint8": (np.uint8, None),
    "bool": (np.uint8, None),
}
FLOATS = {"float64", "float32", "float16", "bfloat16", "float8_e5m2", "float8_e4m3fn"}


def view_of(raw: np.ndarray, arg: dict) -> np.ndarray:
    """The tensor argument's elements, as numpy, read from its storage's raw bytes."""
    dt = np.dtype(DTYPES[arg["dtype"]][0])
    n = raw.size // dt.itemsize
    flat = raw[: n * dt.itemsize].view(dt)
    if any(s == 0 for s in arg["shape"]):
        return np.zeros(arg["shape"], dt)
    return np.lib.stride_tricks.as_strided(flat[arg["offset"]:], shape=arg["shape"],
                                           strides=[s * dt.itemsize for s in arg["strides"]], writeable=False).copy()


def view_bytes_mask(nbytes: int, args: list[dict]) -> np.ndarray:
    """Boolean mask over a storage's bytes: True for bytes inside one of these tensor views."""
    mask = np.zeros(nbytes, dtype=bool)
    for a in args:
        item = np.dtype(DTYPES[a["dtype"]][0]).itemsize
        if any(s == 0 for s in a["shape"]):
            continue
        idx = np.full((), a["offset"], dtype=np.int64)
        for n, s in zip(a["shape"], a["strides"]):
            idx = idx[..., None] + np.arange(n, dtype=np.int64) * s
        starts = idx.ravel() * item
        for b in range(item):
            mask[starts + b] = True
    return mask


def tensor_args(launch: dict) -> list[tuple[str, dict]]:
    """(name, encoded tensor) for every tensor argument (positional, keyword, inside tuples)."""
    out = []

    def walk(name, v):
        if v["kind"] == "tensor":
            out.append((name, v))
        elif v["kind"] == "tuple":
            for i, x in enumerate(v["items"]):
                walk(f"{name}.{i}", x)

    names = launch["arg_names"]
    for i, v in enumerate(launch["args"]):
        walk(names[i] if i < len(names) else f"arg{i}", v)
    for k, v in launch["kwargs"].items():
        walk(k, v)
    return out


# --------------------------------------------------------------------------------------------------
# The float policy: (example, kernel, argument) -> factory(gpu view, pre-launch views by name) -> Check


def close(rtol, atol=0.0):
    return lambda g, pre: ex.Close(g, rtol, atol)


def ulp_f16(n):
    return lambda g, pre: ex.Ulp(g.astype(np.float64), n, dtype=np.float16)


def dot(scale, a="a_ptr", b="b_ptr"):
    def make(g, pre):
        mag = np.abs(pre[a].astype(np.float64)) @ np.abs(pre[b].astype(np.float64))
        return ex.DotTol(g, mag, scale)

    return make


REDUCE = close(1e-5, 1e-6)  # summation order of a few hundred float32 terms, plus approximate div/sqrt/exp

POLICY = {
    ("attention", "attn_fwd", "o_ptr"): close(1e-4, 1e-4),
    ("autotune_rms_norm", "rms_norm_kernel", "y_ptr"): REDUCE,
    ("block_ptr", "matmul_block_ptr", "c_ptr"): dot(80 * 2.0 ** -24),
    ("cross_entropy", "cross_entropy_kernel", "loss_ptr"): close(1e-5, 1e-5),
    ("layer_norm", "layer_norm_fwd", "y_ptr"): REDUCE,
    ("layer_norm", "layer_norm_fwd", "mean_ptr"): REDUCE,
    ("layer_norm", "layer_norm_fwd", "rstd_ptr"): REDUCE,
    ("layer_norm", "layer_norm_bwd_dx", "dx_ptr"): close(1e-5, 1e-5),
    ("layer_norm", "layer_norm_bwd_dx", "dw_part_ptr"): close(1e-5, 1e-5),
    ("layer_norm", "layer_norm_bwd_dx", "db_part_ptr"): close(1e-5, 1e-5),
    ("layer_norm", "sum_partials", "out_ptr"): close(1e-5, 1e-5),
    ("matmul", "matmul_kernel", "c_ptr"): dot(80 * 2.0 ** -24),
    ("partial_sums", "partial_sum_kernel", "partial_ptr"): close(1e-5, 1e-5),  # tl.sum of 128 terms
    ("partial_sums", "row_total_kernel", "out_ptr"): close(1e-5, 1e-5),
    ("softmax", "softmax_kernel", "y_ptr"): close(2e-5, 1e-9),
    # TF32 inputs (rounded alike on both sides), the dot's order, and 4 float atomic adds per element.
    ("splitk_matmul", "splitk_kernel", "c_ptr"): dot(2.0 ** -17),
    ("swiglu", "swiglu_kernel", "out_ptr"): ulp_f16(1),
}


# --------------------------------------------------------------------------------------------------
# Replay

_CLASSES = ["bit-exact", "within policy", "mismatch"]


def _kernel(example: str, launch: dict):
    mod = rx.import_example(example)
    obj = getattr(mod, launch["attr"] or launch["kernel"], None)
    jit = rx.base_jit(obj)
    assert jit is not None and jit.fn.__name__ == launch["kernel"], \
        f"{example}: no @triton.jit kernel '{launch['kernel']}' at attribute {launch['attr']!r}"
    return jit


def _decode(v, storages):
    import torch
    import triton.language as tl

    k = v["kind"]
    if k == "value":
        return v["value"]
    if k == "tl_dtype":
        return tl.dtype(v["name"])
    if k == "tuple":
        return tuple(_decode(x, storages) for x in v["items"])
    assert k == "tensor", k
    return torch.empty(0, dtype=getattr(torch, v["dtype"])).set_(storages[v["storage"]], v["offset"], v["shape"],
                                                                  v["strides"])


def replay(example: str, launch: dict) -> tuple[dict[int, np.ndarray], list[dict]]:
    """Run one recorded launch on tilescope: (storage id -> raw bytes after the launch, findings)."""
    import torch

    import tilescope

    jit = _kernel(example, launch)
    tilescope.trace("sanitizer")(jit)
    key = f"{example}/{launch['index']}"
    raws = {s["id"]: ARR[f"{key}/pre/{s['id']}"].copy() for s in launch["storages"]}
    storages = {sid: torch.from_numpy(raw).untyped_storage() for sid, raw in raws.items()}  # shares raw's memory
    args = [_decode(v, storages) for v in launch["args"]]
    kwargs = {k: _decode(v, storages) for k, v in launch["kwargs"].items()}
    tilescope.clear_findings()
    jit[tuple(launch["grid"])](*args, **kwargs)
    return raws, tilescope.findings()


def compare(example: str, launch: dict, got: dict[int, np.ndarray]) -> tuple[str, list[str]]:
    """Classify tilescope's post-launch storages against the GPU's: (worst class, notes per argument)."""
    key = f"{example}/{launch['index']}"
    targs = tensor_args(launch)
    worst, notes = 0, []
    for s in launch["storages"]:
        sid = s["id"]
        gpu_raw = ARR[f"{key}/post/{sid}"] if s.get("changed") else ARR[f"{key}/pre/{sid}"]
        mine = got[sid]
        on_it = [(n, a) for n, a in targs if a["storage"] == sid]
        outside = ~view_bytes_mask(gpu_raw.size, [a for _, a in on_it])
        bad = np.flatnonzero((mine != gpu_raw) & outside)
        if bad.size:
            worst = 2
            notes.append(f"storage {sid} ({', '.join(n for n, _ in on_it)}): {bad.size} bytes outside the "
                         f"arguments' views differ, first at byte {bad[0]}")
        for name, a in on_it:
            g, m = view_of(gpu_raw, a), view_of(mine, a)
            tag = DTYPES[a["dtype"]][1]
            what = f"{example}/{launch['index']} {launch['kernel']}.{name}"
            try:
                ex.Exact(g, tag).check(m, what)
                continue
            except AssertionError as e:
                exact_err = str(e).splitlines()[0][:200]
            factory = POLICY.get((example, launch["kernel"], name)) if a["dtype"] in FLOATS else None
            if factory is None:
                worst = 2
                notes.append(f"{name}: not bit-exact ({exact_err})")
                continue
            pre = {n: view_of(ARR[f"{key}/pre/{b['storage']}"], b) for n, b in targs}
            try:
                factory(g, pre).check(m, what)
                worst = max(worst, 1)
                notes.append(f"{name}: within policy")
            except AssertionError as e:
                worst = 2
                notes.append(str(e).splitlines()[0][:240])
    return _CLASSES[worst], notes


def classify(example: str, launch: dict) -> tuple[str, list[str]]:
    """Replay and compare one launch (for tests/gpu/fidelity.py); errors count as a mismatch."""
    try:
        got, findings = replay(example, launch)
    except Exception as e:
        return "mismatch", [f"tilescope failed: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"]
    cls, notes = compare(example, launch, got)
    if findings:
        cls = "mismatch"
        notes.insert(0, f"{len(findings)} findings: {findings[0].get('kind')}")
    return cls, notes


def cases() -> list[tuple[str, dict | None]]:
    """(example, launch) for every recorded launch; without data one placeholder case that fails (a
    missing file must not turn into an empty, skipped parametrization)."""
    if META is None:
        return [("no-data", None)]
    return [(n, l) for n, info in sorted(META["examples"].items()) for l in info["launches"]]


# --------------------------------------------------------------------------------------------------
# Tests


def test_recorded_examples_present_and_current():
    assert META is not None, f"no GPU data for the examples: {NPZ} / {INDEX} missing; {REGENERATE}"
    assert META.get("executor") == "cuda" or ALLOW_SELF_TEST, \
        (f"{INDEX} was recorded with executor {META.get('executor')!r}, not on a GPU (a --self-test run); "
         f"{REGENERATE}")
    recorded = META["examples"]
    missing = [n for n in rx.correct_examples() if n not in recorded]
    assert not missing, f"examples without recorded launches: {missing}; {REGENERATE}"
    failed = {n: v.get("error") for n, v in recorded.items() if v["status"] != "ok"}
    assert not failed, f"examples whose main() failed on the GPU: {failed}"
    empty = [n for n, v in recorded.items() if not v["launches"]]
    assert not empty, f"examples with no launch recorded: {empty}"
    stale = [n for n, v in recorded.items()
             if os.path.exists(os.path.join(rx.EXAMPLES, n + ".py")) and v["source_sha256"] != rx.source_sha256(n)]
    assert not stale, f"examples changed since they were recorded: {stale}; {REGENERATE}"
    gone = [n for n in recorded if not os.path.exists(os.path.join(rx.EXAMPLES, n + ".py"))]
    assert not gone, f"recorded examples that no longer exist: {gone}; {REGENERATE}"


@pytest.mark.parametrize("example,launch", cases(),
                         ids=[f"{n}-{l['index']}-{l['kernel']}" if l else n for n, l in cases()])
def test_launch_matches_gpu(example, launch):
    assert launch is not None, f"no GPU data for the examples: {NPZ} missing; {REGENERATE}"
    got, findings = replay(example, launch)
    assert not findings, f"tilescope reported findings on a correct example's launch: {findings[:3]}"
    cls, notes = compare(example, launch, got)
    assert cls != "mismatch", "\n".join(notes)


# --------------------------------------------------------------------------------------------------
# The harness itself (no GPU data needed): the comparison must catch a wrong byte.


def test_compare_catches_differences():
    global ARR
    launch = {"index": 0, "kernel": "k", "arg_names": ["x", "y"], "storages": [{"id": 0, "changed": True}],
              "args": [{"kind": "tensor", "storage": 0, "dtype": "float32", "shape": [2, 2], "strides": [3, 1],
                        "offset": 1},
                       {"kind": "tensor", "storage": 0, "dtype": "int32", "shape": [1], "strides": [1],
                        "offset": 0}],
              "kwargs": {}}
    gpu = np.arange(6, dtype=np.float32).view(np.uint8).copy()
    saved = ARR
    try:
        ARR = {"t/0/post/0": gpu, "t/0/pre/0": gpu}
        assert compare("t", launch, {0: gpu.copy()})[0] == "bit-exact"
        off = gpu.copy()
        off[3 * 4] ^= 1  # element 3: outside both views (view x covers elements 1, 2, 4, 5; y covers 0)
        cls, notes = compare("t", launch, {0: off})
        assert cls == "mismatch" and "outside" in notes[0], notes
        off = gpu.copy()
        off[4 * 4] ^= 1  # element 4: inside x, a float without a policy entry: must be bit-exact
        cls, notes = compare("t", launch, {0: off})
        assert cls == "mismatch" and notes[0].startswith("x:"), notes
    finally:
        ARR = saved
