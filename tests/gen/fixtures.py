"""The generator's hand-written kernel ASTs and their tasks, run without any model (tests only).

Every task of the suite (tasks/<name>.py, docs/gen-tasks.md) has our own correct kernel AST beside it
(tasks/<name>.json); the op-coverage kernels (every op kind of the format and every form of those with
several) are tasks of the same format in tests/gen/coverage/. run() launches a fixture on the engine at
one of its task's sizes, through the front door's launch path (_native.launch), with the case's inputs
and references from the task file (torch / numpy, never tilescope), `out` buffers tracked as undefined
memory, and the sanitizer, the race detector and uninitialized-memory tracking on.
"""
from __future__ import annotations

import dataclasses
import glob
import json
import os

import numpy as np

from tilescope import _gen_task, _native

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUITE_DIR = os.path.join(ROOT, "tasks")
COVERAGE_DIR = os.path.join(ROOT, "tests", "gen", "coverage")
ANALYSES = json.dumps([["sanitizer", {}], ["races", {}], ["uninit", {}]])
NP_DTYPES = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "f16": np.float16,
             "bf16": np.uint16, "f32": np.float32, "f64": np.float64}
NATIVE_DTYPES = {"i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "f16": "float16",
                 "bf16": "bfloat16", "f32": "float32", "f64": "float64"}


@dataclasses.dataclass
class Fixture:
    task: _gen_task.Task
    ast_path: str

    @property
    def name(self) -> str:
        return self.task.name

    def text(self) -> str:
        with open(self.ast_path) as f:
            return f.read()

    def doc(self) -> dict:
        return json.loads(self.text())

    def meta(self) -> dict:
        return {a["name"]: a["value"] for a in self.doc()["args"] if a["kind"] == "constexpr"}


def fixtures(suite_only: bool = False) -> list[Fixture]:
    """Every task file with its AST, the suite's first, each list sorted by name."""
    out = []
    for d in [SUITE_DIR] + ([] if suite_only else [COVERAGE_DIR]):
        for py in sorted(glob.glob(os.path.join(d, "*.py"))):
            out.append(Fixture(_gen_task.load(py), py[:-3] + ".json"))
    return out


@dataclasses.dataclass
class Run:
    findings: list
    outputs: dict  # output name -> numpy array of the buffer after the launch
    checks: list  # _gen_task.check_outputs
    case: dict


def run(fx: Fixture, size_index: int, tmp_dir: str, ast_text: str | None = None) -> Run:
    """Launch the fixture (or `ast_text`, an AST of the same task) at its task's size `size_index`."""
    text = fx.text() if ast_text is None else ast_text
    doc = json.loads(text)
    meta = {a["name"]: a["value"] for a in doc["args"] if a["kind"] == "constexpr"}
    case = _gen_task.make_case(fx.task, fx.task.sizes[size_index], 1000 + size_index, meta,
                               os.path.join(tmp_dir, f"{fx.name}-{size_index}"))
    ttir, lines = _native.gen_lower(text)
    assert len(lines) == ttir.count("\n")
    kernel = _native.compile(ttir, f"{fx.name}.ttir")  # tilescope's reader and verifier
    names = [n for n, _ in kernel.args]
    by_name = {a["name"]: a for a in case["args"]}
    assert names == [a["name"] for a in case["args"]], f"the kernel takes {names}, the task gives {list(by_name)}"
    arrays, args, tracked = {}, [], []
    for n in names:
        a = by_name[n]
        if "npy" not in a:
            args.append(a["value"])
            continue
        v = np.ascontiguousarray(np.load(a["npy"]).astype(NP_DTYPES[a["dtype"]], copy=False))
        arrays[n] = v
        if a["role"] == "out" and v.nbytes:  # undefined until the kernel writes it
            line = fx.task.module.inputs.__code__.co_firstlineno
            tracked.append(_native.uninit_track(v.ctypes.data, v.nbytes, "the out buffer of inputs()", fx.task.path,
                                                line, v.itemsize == 1))
        args.append(_native.Buffer(n, NATIVE_DTYPES[a["dtype"]], v.ctypes.data, v.nbytes, list(v.shape),
                                   [s // v.itemsize for s in v.strides]))
    try:
        res = _native.launch(kernel, args, case["grid"], analyses=ANALYSES)
    finally:
        for t in tracked:
            _native.uninit_forget(t)
    outputs = {o.name: arrays[o.name] for o in fx.task.outputs}
    return Run(json.loads(res["findings"]), outputs, _gen_task.check_outputs(case, _as_values(fx.task, outputs)),
               case)


def _as_values(task, outputs: dict) -> dict:
    """bf16 buffers (held as their uint16 bits) as float32 values, for the comparison."""
    out = {}
    for a in task.outputs:
        v = outputs[a.name]
        out[a.name] = (v.astype(np.uint32) << 16).view(np.float32) if a.dtype == "bf16" else v
    return out
