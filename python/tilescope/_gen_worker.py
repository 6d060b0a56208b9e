"""The Python half of the kernel generator (src/generate, include/tilescope/generate/generate.h: Worker).

    python -m tilescope._gen_worker

reads one JSON request per line on stdin and writes one JSON response per line on stdout, until stdin
closes. Every response has "ok"; when it is false, "error" says what went wrong (a task file's error
names the file and line). Whatever task files or kernels print goes to stderr: stdout is the protocol's.

Requests ("op"):
- load {path, description?}: import a task file (docs/gen-tasks.md) -> {"task": {name, path, description,
  grid_source, inputs_line, signature: [{name, kind, dtype?, role?}], sizes, tolerance}}.
- case {path, size, seed, meta, dir}: one case of the task at `size` (_gen_task.make_case) -> {"case"}.
- check {path, sizes, seed}: run inputs() and reference() at every size, as a case would (no grid: it needs
  the kernel's constexprs), to find a task's errors before a model is asked -> {}.
- compile_ttir {ttir, arch}: Triton's MLIR parser and triton.compile, for CUDA sm_<arch> on this machine
  (no GPU needed) -> {"ptx_bytes", "cubin_bytes"}; "error" when Triton refuses it.
- run_python {module, kernel, path, size, seed, meta?, dir, compile?, max_steps?}: import the Triton Python file
  `module`, take its @triton.jit function `kernel`, make the case with `meta` (else the kernel's constexpr
  defaults), optionally triton.compile it for sm_90 (compile: true), and launch it on tilescope's engine
  under the sanitizer (races and uninitialized memory too) with the case's inputs (out buffers from
  torch.empty) -> {"case", "meta", "outputs": {name: .npy path}, "before": {name: .npy of the output's bytes
  before the launch}, "changed_inputs": [{name, elements, first}: `in` buffers the kernel wrote into],
  "findings": [the findings JSON], "stage"?, "error"?}. "stage" says where a failure was: import, kernel, compile, launch; such a failure
  is still "ok": true (it is the candidate's, not the worker's).
"""
from __future__ import annotations

import importlib.util
import inspect
import json
import os
import sys
import traceback

from . import _gen_task

_tasks: dict = {}  # path -> Task (a file is imported once per worker)


def _task(path: str, description: str | None = None) -> _gen_task.Task:
    key = os.path.abspath(path)
    if key not in _tasks:
        _tasks[key] = _gen_task.load(key, description)
    return _tasks[key]


def _grid_source(task) -> str:
    try:
        return inspect.getsource(task.module.grid).strip()
    except (OSError, TypeError):
        return ""


def op_load(req: dict) -> dict:
    key = os.path.abspath(req["path"])
    _tasks.pop(key, None)  # the file may have changed since
    t = _task(key, req.get("description"))
    code = getattr(t.module.inputs, "__code__", None)
    return {"task": dict(t.to_json(), grid_source=_grid_source(t), inputs_line=code.co_firstlineno if code else 0)}


def op_case(req: dict) -> dict:
    t = _task(req["path"])
    return {"case": _gen_task.make_case(t, req["size"], int(req["seed"]), req.get("meta") or {}, req["dir"])}


def op_check(req: dict) -> dict:
    import shutil
    import tempfile

    t = _task(req["path"])
    tmp = tempfile.mkdtemp(prefix="tilescope-gen-check-")
    try:
        for i, size in enumerate(req["sizes"]):
            _gen_task.make_case(t, size, int(req["seed"]) + i, None, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {}


def _target(arch: int):
    from triton.backends.compiler import GPUTarget

    return GPUTarget("cuda", int(arch), 32)


def op_compile_ttir(req: dict) -> dict:
    import triton
    from triton._C.libtriton import ir
    from triton.compiler.compiler import make_backend

    target = _target(req.get("arch", 90))
    with _diagnostics() as diag:
        try:
            ctx = ir.context()
            ir.load_dialects(ctx)
            make_backend(target).load_dialects(ctx)
            mod = ir.parse_mlir_module(req["ttir"], ctx)
            if not mod.verify():
                raise RuntimeError("Triton's MLIR verifier rejects the TTIR")
            k = triton.compile(req["ttir"], target=target)
            error = None
        except Exception as e:  # Triton's own errors: the candidate's
            error = _short(e)
    if error is not None:
        # MLIR prints its diagnostics ("loc(...): error: ...") on fd 2, not in the exception.
        lines = [ln for ln in diag.text.splitlines() if "error" in ln or "note" in ln][:8]
        return {"error": error + ("\n" + "\n".join(lines) if lines else "")}
    return {"ptx_bytes": len(k.asm.get("ptx", "")), "cubin_bytes": len(k.asm.get("cubin", b""))}


class _diagnostics:
    """What native code writes on fd 2 inside the block (`text`, after it), and also passed on to it."""

    def __enter__(self):
        import tempfile

        sys.stderr.flush()
        self._file = tempfile.TemporaryFile()
        self._saved = os.dup(2)
        os.dup2(self._file.fileno(), 2)
        self.text = ""
        return self

    def __exit__(self, *exc):
        sys.stderr.flush()
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._file.seek(0)
        self.text = self._file.read().decode("utf-8", "replace")
        self._file.close()
        sys.stderr.write(self.text)
        return False


def _short(e: BaseException, limit: int = 1500) -> str:
    text = f"{type(e).__name__}: {e}".strip()
    return text if len(text) <= limit else text[:limit] + " ..."


def _import_module(path: str):
    name = f"tilescope_candidate_{abs(hash(path)) % 10**8}_{os.path.getmtime(path):.0f}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _constexpr_defaults(fn) -> tuple[dict, list]:
    """The constexpr parameters of a JITFunction with their default values, and those without one."""
    meta, missing = {}, []
    for p in fn.params:
        if p.is_constexpr:
            if p.default is inspect.Parameter.empty:
                missing.append(p.name)
            else:
                meta[p.name] = p.default
    return meta, missing


def _compile_python(fn, case: dict, meta: dict):
    """triton.compile of a JITFunction for sm_90 with the case's argument types (no GPU needed)."""
    import triton
    from triton.compiler import ASTSource

    types = {"i1": "i1", "i8": "i8", "i16": "i16", "i32": "i32", "i64": "i64", "f16": "fp16", "bf16": "bf16",
             "f32": "fp32", "f64": "fp64"}
    sig = {}
    for a in case["args"]:
        sig[a["name"]] = ("*" if a["kind"] == "pointer" else "") + types[a["dtype"]]
    for p in fn.params:
        if p.is_constexpr:
            sig[p.name] = "constexpr"
    constexprs = {(i,): meta[p.name] for i, p in enumerate(fn.params) if p.is_constexpr and p.name in meta}
    src = ASTSource(fn, sig, constexprs)
    return triton.compile(src, target=_target(90))


def op_run_python(req: dict) -> dict:
    import numpy as np
    import torch

    import tilescope

    from . import _native

    out = {}
    try:
        module = _import_module(req["module"])
    except BaseException as e:  # the candidate's code: sys.exit too
        if isinstance(e, GeneratorExit):
            raise
        return {"stage": "import", "error": _where(e, req["module"])}
    fn = getattr(module, req["kernel"], None)
    if fn is None or not hasattr(fn, "params") or not hasattr(fn, "run"):
        return {"stage": "kernel", "error": f"the module defines no @triton.jit kernel named {req['kernel']}"}
    t = _task(req["path"])
    meta = req.get("meta")
    if meta is None:
        meta, missing = _constexpr_defaults(fn)
        if missing:
            return {"stage": "kernel", "error": f"the constexpr parameters {', '.join(missing)} of {req['kernel']} "
                                                "need default values (the launch passes none)"}
    names = [p.name for p in fn.params if not p.is_constexpr]
    want = [a.name for a in t.signature if a.kind != "constexpr"]
    if len(names) != len(want):  # they are passed in order (a name may differ: `debug` is emitted as `debug_`)
        return {"stage": "kernel", "error": f"{req['kernel']} takes ({', '.join(names)}); the task's kernel takes "
                                            f"({', '.join(want)}) and constexprs"}
    case = _gen_task.make_case(t, req["size"], int(req["seed"]), meta, req["dir"])
    out.update(case=case, meta=meta)
    if req.get("compile"):
        try:
            _compile_python(fn, case, meta)
        except Exception as e:
            return dict(out, stage="compile", error=_short(e))
    args, tensors, tracked = [], {}, []
    for a in case["args"]:
        if "npy" not in a:
            args.append(_gen_task.scalar_value(a))
            continue
        arr = np.load(a["npy"])
        dt = getattr(torch, _gen_task.TORCH_DTYPES[a["dtype"]])
        if a["role"] == "out":
            v = torch.empty(arr.shape, dtype=dt)
            if v.numel():  # undefined until the kernel writes it, as torch.empty's memory on a GPU
                line = getattr(getattr(t.module.inputs, "__code__", None), "co_firstlineno", 0)
                tracked.append(_native.uninit_track(v.data_ptr(), v.numel() * v.element_size(),
                                                    "the out buffer of inputs()", t.path, line, v.element_size() == 1))
        elif a["dtype"] == "bf16":
            v = torch.from_numpy(arr.view(np.int16)).view(torch.bfloat16)
        else:
            v = torch.from_numpy(arr)
        tensors[a["name"]] = v
        args.append(v)
    if req.get("max_steps"):  # ops one program may run (the front door reads it at each launch)
        os.environ["TILESCOPE_MAX_STEPS"] = str(int(req["max_steps"]))
    tilescope.trace("sanitizer")(fn)
    tilescope.clear_findings()
    before = {}  # the outputs' bytes before the launch: what the kernel must leave alone, or never wrote
    for a in t.outputs:
        before[a.name] = os.path.join(req["dir"], f"before_{a.name}.npy")
        np.save(before[a.name], np.frombuffer(_bytes(tensors[a.name]), np.uint8))
    try:
        fn[tuple(case["grid"])](*args, **meta)
    except BaseException as e:  # the candidate's kernel: sys.exit too
        if isinstance(e, GeneratorExit):
            raise
        return dict(out, stage="launch", error=_where(e, req["module"]))
    finally:
        for i in tracked:
            _native.uninit_forget(i)
    changed = []  # the inputs the kernel wrote into: how many elements, the first one's index
    for a in case["args"]:
        if a.get("role") != "in" or "npy" not in a:
            continue
        was = np.load(a["npy"])
        if not was.size:
            continue
        rows = (was.size, was.itemsize)
        diff = (np.frombuffer(_bytes(tensors[a["name"]]), np.uint8).reshape(rows)
                != np.ascontiguousarray(was).reshape(-1).view(np.uint8).reshape(rows)).any(axis=1)
        if diff.any():
            first = np.unravel_index(int(np.argmax(diff)), was.shape)
            changed.append({"name": a["name"], "elements": int(diff.sum()), "first": [int(i) for i in first]})
    outputs = {}
    for a in t.outputs:
        v = tensors[a.name].contiguous()
        arr = v.view(torch.int16).numpy().view(np.uint16) if a.dtype == "bf16" else v.numpy()
        p = os.path.join(req["dir"], f"got_{a.name}.npy")
        np.save(p, arr)
        outputs[a.name] = p
    return dict(out, outputs=outputs, before=before, changed_inputs=changed, findings=tilescope.findings())


def _bytes(t) -> bytes:
    """The bytes of a tensor's elements in row-major order (any dtype, bf16 too)."""
    import torch

    t = t.contiguous()
    return t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""


def _where(e: BaseException, path: str) -> str:
    """The exception with the line of `path` it came from, if any."""
    line = None
    for fr in traceback.extract_tb(e.__traceback__):
        if os.path.abspath(fr.filename) == os.path.abspath(path):
            line = fr.lineno
    if line is None and isinstance(e, SyntaxError):
        line = e.lineno
    return (f"line {line}: " if line else "") + _short(e)


OPS = {"load": op_load, "case": op_case, "check": op_check, "compile_ttir": op_compile_ttir,
       "run_python": op_run_python}


def main() -> int:
    import signal

    # Ctrl-C reaches the whole process group: the command that started this worker handles it (it stops
    # asking), and this process ends when its stdin closes.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # prints of task files and kernels go to stderr
    sys.stdout = sys.stderr
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            handler = OPS.get(req.get("op"))
            if handler is None:
                resp = {"ok": False, "error": f"unknown request {req.get('op')!r}"}
            else:
                resp = dict(handler(req))
                resp["ok"] = True
        except _gen_task.TaskError as e:
            resp = {"ok": False, "error": str(e)}
        except Exception as e:  # our own bug: say so, keep serving
            resp = {"ok": False, "error": f"internal error of tilescope's Python worker: {_short(e)}\n"
                                          f"{traceback.format_exc(limit=6)}"}
        try:
            line = json.dumps(resp, default=str, allow_nan=False)
        except ValueError as e:  # a NaN or infinity somewhere: our bug, said as such, not a broken protocol
            line = json.dumps({"ok": False, "error": f"internal error of tilescope's Python worker: {e}"})
        proto.write(line + "\n")
        proto.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
