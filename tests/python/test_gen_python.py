"""The kernel AST as Triton Python (gen::python, `tilescope gen python`, docs/gen-format.md "Triton Python").

The round trip, for every fixture of tests/gen/fixtures.py (the task suite's hand-written ASTs and the
op-coverage ones, whatever `fixtures()` lists) at every size of its task:
- the AST's lowered TTIR runs on the engine (`fixtures.run`: the front door's launch path, with the
  sanitizer, the race detector and uninitialized-memory tracking) and reports nothing;
- the module `_native.gen_python` emits for the AST is imported from a file, its kernel decorated with
  `tilescope.trace("sanitizer")` and launched through the module's own `launch` with torch tensors of the
  same case's inputs (out buffers `torch.empty`, so reading one before writing it is a finding), the
  case's scalars and grid: Triton's own binder and front end compile it to TTIR, which the engine runs;
- it reports nothing, and its outputs are bit for bit the engine's outputs of the lowered AST (a NaN where
  that has a NaN, whatever its payload), on every element the task compares. One exception, by nature:
  float atomic adds from several programs (scatter_add) happen in the order the programs run in, which the
  engine's thread pool does not fix, so their sums round differently from run to run (two runs of the same
  TTIR differ in the last bits too); there the outputs are compared within the task's tolerance, with each
  other and with the task's reference.
The expected values are the lowered AST's outputs, whose agreement with each task's PyTorch reference
tests/python/test_gen.py checks. And: the emitted text's shape (imports, signature, launcher), the CLI,
invalid ASTs, and Triton compiling emitted kernels to PTX for sm_90 with no GPU.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "gen"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fixtures  # noqa: E402
import tsrun  # noqa: E402

import tilescope  # noqa: E402
from tilescope import _gen_task, _native  # noqa: E402

BIN = tsrun.tilescope_bin()
FIXTURES = {fx.name: fx for fx in fixtures.fixtures()}
CASES = [(fx.name, i) for fx in FIXTURES.values() for i in range(len(fx.task.sizes))]
TORCH_DTYPES = {"i8": torch.int8, "i16": torch.int16, "i32": torch.int32, "i64": torch.int64,
                "f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64}


def import_kernel(text: str, path, kernel: str):
    """Write the module `text` to `path`, import it, and trace its kernel `kernel` (tilescope.trace marks the
    kernel object itself, which the module's `launch` calls)."""
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(f"tilescope_gen_python_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    tilescope.trace("sanitizer")(getattr(mod, kernel))
    return mod


@pytest.fixture(scope="module")
def emitted(tmp_path_factory):
    """fixture name -> the imported module of its emitted Python, its kernel traced (one per fixture, so its
    sizes share Triton's compilations)."""
    d = tmp_path_factory.mktemp("gen-python")
    modules = {}

    def get(fx):
        if fx.name not in modules:
            modules[fx.name] = import_kernel(_native.gen_python(fx.text()), d / f"{fx.name}_kernel.py",
                                             fx.doc()["name"])
        return modules[fx.name]

    return get


def as_torch(a: dict) -> torch.Tensor:
    """The tensor a launch through Triton takes for the case argument `a` (a pointer): its .npy input, or
    torch.empty for an out buffer."""
    arr = np.load(a["npy"])
    dtype = TORCH_DTYPES[a["dtype"]]
    if a["role"] == "out":
        return torch.empty(arr.shape, dtype=dtype)
    if a["dtype"] == "bf16":  # the .npy holds the bf16 bits as uint16
        return torch.from_numpy(arr.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(arr.copy())


def bits_and_nans(arr: np.ndarray, dtype: str):
    """(the elements' bit patterns as unsigned integers, where they are NaN) of an output buffer."""
    u = arr.view(np.dtype(f"u{arr.itemsize}"))
    if dtype == "bf16":
        return u, (u & 0x7FFF) > 0x7F80
    if dtype.startswith("f"):
        return u, np.isnan(arr)
    return u, np.zeros(arr.shape, bool)


def values(arr: np.ndarray, dtype: str) -> np.ndarray:
    """An output buffer's values as float64 (bf16 from its bits)."""
    if dtype == "bf16":
        return (arr.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return arr.astype(np.float64)


def to_numpy(t: torch.Tensor, dtype: str) -> np.ndarray:
    if dtype == "bf16":
        return t.view(torch.int16).numpy().view(np.uint16)
    return t.numpy()


def launch_python(mod, case: dict) -> dict:
    """Launch the emitted module's kernel on `case` through its `launch`; (findings, {output name: (tensor,
    dtype)})."""
    args, outs = [], {}
    for a in case["args"]:
        if "npy" not in a:
            args.append(a["value"])
            continue
        t = as_torch(a)
        args.append(t)
        if a["role"] in ("out", "inout"):
            outs[a["name"]] = (t, a["dtype"])
    tilescope.clear_findings()
    mod.launch(*args, grid=tuple(case["grid"]))
    return tilescope.findings(), outs


def differences(fx, ref, outs: dict) -> list:
    """Where the Python run's outputs `outs` differ from the lowered AST's run `ref`: one message per output."""
    expected = {e["name"]: e for e in ref.case["expected"]}
    assert sorted(outs) == sorted(ref.outputs) == sorted(expected)
    # Float atomic adds of several programs: their order, and so their rounding, is the thread pool's.
    unordered = "tt.atomic_rmw fadd" in _native.gen_lower(fx.text())[0] and np.prod(ref.case["grid"]) > 1
    problems = []
    if unordered:
        got = {o: values(to_numpy(t, dtype), dtype) for o, (t, dtype) in outs.items()}
        problems += [f"{c['name']}: {c['bad']} elements out of the task's tolerance"
                     for c in _gen_task.check_outputs(ref.case, got) if not c["ok"]]
    for out, want in ref.outputs.items():
        t, dtype = outs[out]
        got = to_numpy(t, dtype)
        assert got.shape == want.shape and got.dtype == want.dtype, out
        gb, gn = bits_and_nans(got, dtype)
        wb, wn = bits_and_nans(want, dtype)
        e = expected[out]
        mask = np.load(e["mask"]) if e["mask"] else np.ones(want.shape, bool)
        same = (gb == wb) | (gn & wn)
        if unordered:
            g, w = values(got, dtype), values(want, dtype)
            same = np.abs(g - w) <= e["atol"] + e["rtol"] * np.abs(w)
        bad = mask & ~same
        if bad.any():
            i = tuple(int(k) for k in np.argwhere(bad)[0])
            problems.append(f"{out}: {int(bad.sum())} of {int(mask.sum())} elements differ from the lowered AST's "
                            f"run; first at {i}: Python {got[i]!r} (bits {int(gb[i]):#x}), TTIR {want[i]!r} "
                            f"(bits {int(wb[i]):#x})")
    return problems


@pytest.mark.parametrize("name,size", CASES, ids=[f"{n}-{i}" for n, i in CASES])
def test_python_round_trip(name, size, emitted, tmp_path):
    fx = FIXTURES[name]
    ref = fixtures.run(fx, size, str(tmp_path))
    assert ref.findings == [], json.dumps(ref.findings, indent=1)[:3000]
    findings, outs = launch_python(emitted(fx), ref.case)
    assert findings == [], json.dumps(findings, indent=1)[:3000]
    problems = differences(fx, ref, outs)
    assert not problems, f"{name} size {fx.task.sizes[size]}: " + "; ".join(problems)


@pytest.mark.skipif("vector_add" not in FIXTURES, reason="no vector_add fixture")
def test_a_wrong_statement_is_caught(tmp_path):
    """A negative control: the emitted vector_add with the stored value doubled (one statement changed) runs
    clean, and the comparison reports its outputs."""
    fx = FIXTURES["vector_add"]
    text, n = re.subn(r"tl\.store\((\w+), (\w+)", r"tl.store(\1, \2 + \2", _native.gen_python(fx.text()))
    assert n == 1
    mod = import_kernel(text, tmp_path / "vector_add_wrong.py", "vector_add")
    ref = fixtures.run(fx, len(fx.task.sizes) - 1, str(tmp_path))
    findings, outs = launch_python(mod, ref.case)
    assert findings == []
    problems = differences(fx, ref, outs)
    assert len(problems) == 1 and "elements differ from the lowered AST's run" in problems[0], problems


# A person edits a constexpr's value in the emitted launcher: (fixture, {constexpr: new value}). Each new
# value is a power of two that still covers the task (the grids follow the constexprs); each would break a
# module that wrote the AST's values in its shapes: vector_add's programs would write 256 of their 1024
# elements, row_sum's loop would step 128 columns over 64-column tiles.
RESIZED = [("vector_add", {"BLOCK": 1024}), ("row_sum", {"BLOCK_M": 4, "BLOCK_N": 128}),
           ("row_softmax", {"BLOCK": 2048})]


@pytest.mark.parametrize("name,values", [r for r in RESIZED if r[0] in FIXTURES],
                         ids=[r[0] for r in RESIZED if r[0] in FIXTURES])
def test_a_constexpr_edited_in_launch_resizes_every_tile(name, values, tmp_path):
    """The module names the AST's constexprs in its shapes and ranges (`tl.arange(0, BLOCK)`, `(BLOCK,)`) as in
    its loops, so that editing `BLOCK=256` in `launch` gives the kernel at the new block size: at every size of
    the task, it runs clean and gives, bit for bit, the outputs of the AST with those values lowered and run on
    the engine (whose agreement with the task's reference is checked too), on the case's grid for those
    values."""
    fx = FIXTURES[name]
    doc = fx.doc()
    text = _native.gen_python(fx.text())
    for a in doc["args"]:
        if a["name"] not in values:
            continue
        old = a["value"]
        assert re.search(rf"\b{old}\b", text.replace(f"{a['name']}={old}", "")) is None, \
            f"{a['name']}'s value {old} is written in the module besides the launcher's keyword"
        text, n = re.subn(rf"\b{a['name']}={old}\b", f"{a['name']}={values[a['name']]}", text)
        assert n == 1, f"launch does not pass {a['name']}={old} once"
        a["value"] = values[a["name"]]
    mod = import_kernel(text, tmp_path / f"{name}_resized.py", doc["name"])
    resized = json.dumps(doc)
    for size in range(len(fx.task.sizes)):
        ref = fixtures.run(fx, size, str(tmp_path), ast_text=resized)
        assert ref.findings == [], json.dumps(ref.findings, indent=1)[:3000]
        assert all(c["ok"] for c in ref.checks), ref.checks
        findings, outs = launch_python(mod, ref.case)
        assert findings == [], json.dumps(findings, indent=1)[:3000]
        problems = differences(fx, ref, outs)
        assert not problems, f"{name} with {values}, size {fx.task.sizes[size]}: " + "; ".join(problems)


def test_f16_division_is_rejected():
    """dtype_forms with its quotient an f16 `div` instead of a division in f32: rejected at the op, since
    Triton's NVIDIA backend cannot lower arith.divf on f16 (ConvertTritonGPUToLLVM fails), so the kernel would
    run on the engine and then never compile for a GPU."""
    doc = FIXTURES["dtype_forms"].doc()
    ops = [o for o in doc["ops"] if o.get("result") not in ("as32", "b32", "q32")]
    at = [o.get("result") for o in ops].index("q")
    ops[at] = {"op": "div", "result": "q", "operands": ["as", "b"]}
    problems = json.loads(_native.gen_check(json.dumps(dict(doc, ops=ops))))
    assert problems and problems[0]["pointer"] == f"/ops/{at}/operands/0", problems
    assert "div of f16 / bf16 does not compile for a GPU: cast to f32" in problems[0]["message"]


# --------------------------------------------------------------------------------------------------
# The emitted text


AST = {
    "version": 1, "name": "row_sum",
    "args": [{"name": "x_ptr", "kind": "pointer", "dtype": "f32"},
             {"name": "BLOCK", "kind": "constexpr", "value": 16},
             {"name": "out_ptr", "kind": "pointer", "dtype": "f32"},
             {"name": "n", "kind": "scalar", "dtype": "i32"},
             {"name": "for", "kind": "scalar", "dtype": "i64"}],
    "ops": [
        {"op": "make_range", "result": "lanes", "start": 0, "end": "BLOCK"},
        {"op": "constant", "result": "zero", "dtype": "f32", "value": 0, "shape": ["BLOCK"]},
        {"op": "for", "results": ["acc"], "var": "k", "lower": 0, "upper": "n", "step": "BLOCK",
         "init": ["zero"], "carried": ["acc_in"], "body": "k_loop"},
        {"op": "splat", "result": "base", "operands": ["out_ptr"], "shape": ["BLOCK"]},
        {"op": "addptr", "result": "ptrs", "operands": ["base", "lanes"]},
        {"op": "store", "operands": ["ptrs", "acc"]}],
    "regions": [{"name": "k_loop", "ops": [
        {"op": "splat", "result": "k_v", "operands": ["k"], "shape": ["BLOCK"]},
        {"op": "add", "result": "offs", "operands": ["k_v", "lanes"]},
        {"op": "splat", "result": "x_base", "operands": ["x_ptr"], "shape": ["BLOCK"]},
        {"op": "addptr", "result": "x_ptrs", "operands": ["x_base", "offs"]},
        {"op": "load", "result": "x", "operands": ["x_ptrs"]},
        {"op": "add", "result": "acc_out", "operands": ["acc_in", "x"]}], "yield": ["acc_out"]}],
}


def test_emitted_text_has_the_kernel_and_launcher():
    text = _native.gen_python(json.dumps(AST))
    assert "import triton\nimport triton.language as tl\n" in text
    assert "format version 1" in text
    # A constexpr in its declared position; the scalar named as a keyword renamed; scalars annotated.
    assert "@triton.jit\ndef row_sum(x_ptr, BLOCK: tl.constexpr, out_ptr, n: tl.int32, for_: tl.int64):" in text
    assert "    acc_in = zero\n    for k in range(0, n, BLOCK):\n" in text
    assert "        acc_out = acc_in + x\n        acc_in = acc_out\n    acc = acc_in\n" in text
    # The launcher: runtime arguments by position until the first constexpr, then by keyword.
    assert "def launch(x_ptr, out_ptr, n, for_, grid):" in text
    assert "return row_sum[grid](x_ptr, BLOCK=16, out_ptr=out_ptr, n=n, for_=for_)" in text
    compile(text, "row_sum.py", "exec")  # valid Python


def test_invalid_ast_raises():
    bad = dict(AST, ops=AST["ops"][:-1])  # stores nothing
    with pytest.raises(_native.TilescopeError, match="invalid kernel AST"):
        _native.gen_python(json.dumps(bad))


def test_cli_writes_the_same_module(tmp_path):
    fx = FIXTURES["vector_add"] if "vector_add" in FIXTURES else next(iter(FIXTURES.values()))
    out = tmp_path / "k.py"
    r = subprocess.run([BIN, "gen", "python", fx.ast_path, "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert out.read_text() == _native.gen_python(fx.text())
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(AST, ops=AST["ops"][:-1])))
    r = subprocess.run([BIN, "gen", "python", str(bad)], capture_output=True, text=True)
    assert r.returncode == 1 and "writes nothing" in r.stderr and r.stdout == ""


# A matmul with a K loop, the math of float_math (libdevice's tanh among it) and a softmax.
PTX_FIXTURES = [n for n in ("matmul_bias_relu", "float_math", "row_softmax", "dtype_forms") if n in FIXTURES]
PTX_TYPES = {"i1": "i1", "i8": "i8", "i16": "i16", "i32": "i32", "i64": "i64", "f16": "fp16", "bf16": "bf16",
             "f32": "fp32", "f64": "fp64"}


@pytest.mark.parametrize("name", PTX_FIXTURES)
def test_emitted_kernel_compiles_to_ptx(name, emitted, tmp_path, monkeypatch):
    """Triton compiles the emitted kernel (not the lowered TTIR) for sm_90 to PTX and a cubin, with no GPU."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    fx = FIXTURES[name]
    doc = fx.doc()
    fn = getattr(emitted(fx), doc["name"])
    sig, constexprs = {}, {}
    for i, (p, a) in enumerate(zip(fn.params, doc["args"])):
        if a["kind"] == "constexpr":
            sig[p.name] = "constexpr"
            constexprs[(i,)] = a["value"]
        else:
            sig[p.name] = ("*" if a["kind"] == "pointer" else "") + PTX_TYPES[a["dtype"]]
    k = triton.compile(ASTSource(fn, sig, constexprs), target=GPUTarget("cuda", 90, 32))
    assert f".entry {doc['name']}" in k.asm["ptx"]
    assert ".target sm_90" in k.asm["ptx"]
    assert len(k.asm["cubin"]) > 0
