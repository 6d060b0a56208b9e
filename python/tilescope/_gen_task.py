"""Tasks of the kernel generator: what a generated kernel must compute, from a PyTorch reference.

A task (README "The kernel generator", docs/gen-tasks.md) is a Python file with these module-level names:

    description = "softmax over each row of x (m rows of n_cols values, rows `stride` apart) into y"
    signature = ["x_ptr: *f32", "y_ptr: *f32 out", "n_cols: i32", "stride: i32", "BLOCK: constexpr"]
    sizes = [{"m": 1, "n": 1}, {"m": 5, "n": 100}, {"m": 4, "n": 781}]
    tolerance = {"y_ptr": (1e-5, 1e-5)}               # optional: (rtol, atol) per output, or one pair

    def inputs(size, gen):                              # gen: a seeded torch.Generator
        x = torch.randn(size["m"], size["n"], generator=gen)
        return {"x_ptr": x, "y_ptr": torch.empty_like(x), "n_cols": size["n"], "stride": size["n"]}

    def reference(args):                                # the inputs, before the kernel ran
        return {"y_ptr": torch.softmax(args["x_ptr"].double(), dim=1)}

    def grid(size, meta):                               # meta: the kernel's constexprs by name
        return (size["m"],)

`signature` is the kernel's arguments in order, as the kernel AST (docs/gen-format.md) declares them:
`NAME: *DTYPE` a pointer to an input, `NAME: *DTYPE out` to an output the kernel writes without reading
first (its memory starts undefined: reading it before writing it is an `uninitialized-read` finding),
`NAME: *DTYPE inout` to one it reads and writes (it starts as `inputs` gave it), `NAME: DTYPE` a scalar,
`NAME: constexpr` a compile-time integer the kernel chooses (the grid may read it from `meta`). DTYPE is
one of i8 i16 i32 i64 f16 bf16 f32 f64 (scalars also i1).

`inputs(size, gen)` gives every pointer argument as a contiguous torch tensor (or numpy array) of the
pointer's dtype and every scalar as a Python number. `reference(args)` gives the expected contents of
every out / inout buffer, of the buffer's shape, in any dtype (compared in float64, integers exactly):
a tensor, or (tensor, mask) where a bool mask of the same shape says which elements are compared (the
others are left as the kernel leaves them: the padding between rows, say). Tolerances by the output's
dtype unless `tolerance` says otherwise: DEFAULT_TOLERANCE. An element passes when
|got - expected| <= atol + rtol * |expected| (NaN only where NaN is expected).

Errors in a task file are TaskError with the file, the line where known, and what is wrong.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import math
import os
import re
import sys
import traceback

# (rtol, atol) by output dtype: integers exactly; floats a few units of their rounding step, for math that
# differs from float64 in the order of additions and in the GPU's approximate functions (a few ulp).
DEFAULT_TOLERANCE = {
    "i1": (0.0, 0.0), "i8": (0.0, 0.0), "i16": (0.0, 0.0), "i32": (0.0, 0.0), "i64": (0.0, 0.0),
    "f16": (2e-3, 2e-3), "bf16": (1.6e-2, 1.6e-2), "f32": (1e-5, 1e-5), "f64": (1e-12, 1e-12),
}
POINTER_DTYPES = ("i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64")
SCALAR_DTYPES = ("i1",) + POINTER_DTYPES
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")
# torch / numpy dtype names of each format dtype.
TORCH_DTYPES = {"i1": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "f16": "float16",
                "bf16": "bfloat16", "f32": "float32", "f64": "float64"}


class TaskError(Exception):
    """A task file that cannot be used: which file, where, and what is wrong."""


@dataclasses.dataclass
class Arg:
    name: str
    kind: str  # "pointer", "scalar", "constexpr"
    dtype: str = ""  # pointer: the pointee; scalar: the value's; constexpr: ""
    role: str = ""  # pointer: "in", "out", "inout"

    def to_json(self) -> dict:
        d = {"name": self.name, "kind": self.kind}
        if self.dtype:
            d["dtype"] = self.dtype
        if self.role:
            d["role"] = self.role
        return d


@dataclasses.dataclass
class Task:
    name: str
    path: str
    description: str
    signature: list
    sizes: list
    tolerance: dict  # output name -> (rtol, atol)
    module: object

    def to_json(self) -> dict:
        return {"name": self.name, "path": self.path, "description": self.description,
                "signature": [a.to_json() for a in self.signature], "sizes": self.sizes,
                "tolerance": {k: list(v) for k, v in self.tolerance.items()}}

    @property
    def outputs(self) -> list:
        return [a for a in self.signature if a.role in ("out", "inout")]


def parse_signature_entry(text: str, where: str) -> Arg:
    """One entry of `signature`: "x_ptr: *f32", "y_ptr: *f32 out", "n: i32", "BLOCK: constexpr"."""
    if not isinstance(text, str) or ":" not in text:
        raise TaskError(f"{where}: {text!r} is not 'NAME: TYPE' (such as 'x_ptr: *f32' or 'n: i32')")
    name, _, rest = text.partition(":")
    name, words = name.strip(), rest.split()
    if not NAME.match(name) or len(name) > 40:
        raise TaskError(f"{where}: {name!r} is not an identifier of at most 40 characters")
    if not words:
        raise TaskError(f"{where}: {name} has no type")
    t = words[0]
    if t == "constexpr":
        if len(words) > 1:
            raise TaskError(f"{where}: a constexpr takes no role ({text!r})")
        return Arg(name, "constexpr")
    if t.startswith("*"):
        dtype = t[1:]
        if dtype not in POINTER_DTYPES:
            raise TaskError(f"{where}: {name}: unknown pointee dtype {dtype!r} (one of {' '.join(POINTER_DTYPES)})")
        role = words[1] if len(words) > 1 else "in"
        if role not in ("in", "out", "inout") or len(words) > 2:
            raise TaskError(f"{where}: {name}: a pointer's role is in, out or inout (found {' '.join(words[1:])!r})")
        return Arg(name, "pointer", dtype, role)
    if t not in SCALAR_DTYPES or len(words) > 1:
        raise TaskError(f"{where}: {name}: a scalar's type is one of {' '.join(SCALAR_DTYPES)} (found {rest.strip()!r})")
    return Arg(name, "scalar", t)


def _line_of(func) -> str:
    try:
        return f":{func.__code__.co_firstlineno}"
    except AttributeError:
        return ""


def load(path: str, description: str | None = None) -> Task:
    """Import the task file `path` and check its names; `description` (when given) replaces the file's,
    which may then be absent. Raises TaskError."""
    path = os.path.abspath(path)
    if os.path.isdir(path):
        raise TaskError(f"{path}: a folder, not a task file")
    if not os.path.isfile(path):
        raise TaskError(f"{path}: no such task file")
    if not path.endswith(".py"):
        raise TaskError(f"{path}: a task file is a Python file, NAME.py (docs/gen-tasks.md)")
    name = os.path.splitext(os.path.basename(path))[0]
    if not NAME.match(name) or len(name) > 64:
        raise TaskError(f"{path}: the file's name is the kernel's: {name!r} must be an identifier of at most 64 "
                        "characters (letters, digits, _; not a digit first)")
    spec = importlib.util.spec_from_file_location(f"tilescope_task_{name}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except BaseException as e:  # the user's file: any error is theirs (sys.exit too), reported with its line
        if isinstance(e, GeneratorExit):
            raise
        raise TaskError(f"{path}: cannot import it: {_where_in(e, path)}{_what(e)}") from None
    if description:
        module.description = description
    for attr in ("description", "signature", "sizes", "inputs", "reference", "grid"):
        if not hasattr(module, attr):
            raise TaskError(f"{path}: defines no `{attr}` (a task defines description, signature, sizes, inputs, "
                            f"reference and grid: docs/gen-tasks.md)")
    desc = module.description
    if not isinstance(desc, str) or not desc.strip() or len(desc) > 2000:
        raise TaskError(f"{path}: `description` must be a non-empty string of at most 2000 characters")
    if not isinstance(module.signature, (list, tuple)) or not module.signature:
        raise TaskError(f"{path}: `signature` must be a non-empty list of 'NAME: TYPE' strings")
    sig = [parse_signature_entry(s, f"{path}: signature[{i}]") for i, s in enumerate(module.signature)]
    seen = set()
    for a in sig:
        if a.name in seen:
            raise TaskError(f"{path}: signature: {a.name} appears twice")
        seen.add(a.name)
    if not any(a.role in ("out", "inout") for a in sig):
        raise TaskError(f"{path}: signature: no output (mark the pointers the kernel writes 'out' or 'inout')")
    sizes = module.sizes
    if not isinstance(sizes, (list, tuple)) or not sizes or not all(isinstance(s, dict) for s in sizes):
        raise TaskError(f"{path}: `sizes` must be a non-empty list of dicts (such as [{{'n': 1000}}])")
    for i, s in enumerate(sizes):
        check_size(s, f"{path}: sizes[{i}]")
    for f in ("inputs", "reference", "grid"):
        if not callable(getattr(module, f)):
            raise TaskError(f"{path}: `{f}` must be a function")
    tol = {}
    given = getattr(module, "tolerance", None)
    if given is not None and not isinstance(given, (tuple, list, dict)):
        raise TaskError(f"{path}: `tolerance` must be (rtol, atol) or {{output name: (rtol, atol)}} (found {given!r})")
    for a in sig:
        if a.role not in ("out", "inout"):
            continue
        pair = DEFAULT_TOLERANCE[a.dtype]
        if isinstance(given, dict) and a.name in given:
            pair = given[a.name]
        elif isinstance(given, (tuple, list)):
            pair = given
        try:
            rtol, atol = (float(v) for v in pair)
        except (TypeError, ValueError):
            rtol = atol = -1.0
        if not (rtol >= 0 and atol >= 0):
            raise TaskError(f"{path}: tolerance of {a.name}: {pair!r} is not (rtol, atol) of two numbers >= 0")
        tol[a.name] = (rtol, atol)
    if isinstance(given, dict):
        unknown = set(given) - set(tol)
        if unknown:
            raise TaskError(f"{path}: tolerance names {', '.join(sorted(unknown))}, which are not outputs")
    return Task(name, path, desc.strip(), sig, [dict(s) for s in sizes], tol, module)


def _where_in(e: BaseException, path: str) -> str:
    """'file.py:LINE: ' of the innermost frame of `e` in the task file, else ''."""
    line = None
    for fr in traceback.extract_tb(e.__traceback__):
        if os.path.abspath(fr.filename) == path:
            line = fr.lineno
    if line is None and isinstance(e, SyntaxError) and e.lineno:
        line = e.lineno
    return f"line {line}: " if line else ""


def check_size(size, where: str) -> None:
    """A size is a dict of names to plain values (numbers, strings, booleans): it goes to the model as JSON."""
    if not isinstance(size, dict) or not size:
        raise TaskError(f"{where}: a size is a non-empty dict (such as {{'n': 1000}}), not {size!r}")
    for k, v in size.items():
        if not isinstance(k, str) or not isinstance(v, (int, float, str, bool)) or \
                (isinstance(v, float) and not math.isfinite(v)):
            raise TaskError(f"{where}: {k!r}: {v!r} is not a number, string or boolean")


def _what(e: BaseException) -> str:
    if isinstance(e, SystemExit):
        return f"it called sys.exit({e.code!r})"
    if isinstance(e, KeyboardInterrupt):
        return "KeyboardInterrupt"
    return f"{type(e).__name__}: {e}"


def _call(task: Task, func: str, *args):
    f = getattr(task.module, func)
    try:
        return f(*args)
    except BaseException as e:  # the user's code: sys.exit and KeyboardInterrupt too
        if isinstance(e, GeneratorExit):
            raise
        raise TaskError(f"{task.path}{_line_of(f)}: {func}() raised {_where_in(e, task.path)}{_what(e)}") from None


def _as_numpy(value, arg: Arg, where: str):
    """A C-contiguous numpy array of `arg`'s dtype for a tensor or array value (bf16 as its uint16 bits)."""
    import numpy as np

    try:
        import torch
    except ImportError:  # numpy-only tasks
        torch = None
    if torch is not None and isinstance(value, torch.Tensor):
        want = getattr(torch, TORCH_DTYPES[arg.dtype])
        if value.dtype != want:
            raise TaskError(f"{where}: {arg.name} is a {value.dtype} tensor; the signature says *{arg.dtype} "
                            f"({want})")
        t = value.detach().cpu().contiguous()
        if arg.dtype == "bf16":
            return t.view(torch.int16).numpy().view(np.uint16).copy()
        return t.numpy().copy()
    if isinstance(value, np.ndarray):
        if arg.dtype == "bf16":
            if value.dtype.name != "bfloat16":
                raise TaskError(f"{where}: {arg.name} is a numpy {value.dtype} array; the signature says *bf16")
            return np.ascontiguousarray(value).view(np.uint16).copy()
        if value.dtype != np.dtype(TORCH_DTYPES[arg.dtype]):
            raise TaskError(f"{where}: {arg.name} is a numpy {value.dtype} array; the signature says *{arg.dtype}")
        return np.ascontiguousarray(value).copy()
    raise TaskError(f"{where}: {arg.name} is a {type(value).__name__}; a pointer argument is a torch tensor or a "
                    f"numpy array")


def _expected_numpy(value, where: str, as_float: bool | None = None):
    """A reference output as a numpy array: float64 when `as_float` (the output's dtype is a float), int64
    when not; None: by the value's own dtype (floats float64, integers and booleans int64)."""
    import numpy as np

    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and isinstance(value, torch.Tensor):
        v = value.detach().cpu()
        if v.is_complex():
            raise TaskError(f"{where}: a complex tensor is not a reference output")
        if as_float is None:
            as_float = v.is_floating_point()
        return v.to(torch.float64 if as_float else torch.int64).contiguous().numpy()
    a = np.asarray(value)
    if a.dtype.kind not in "fiub" and a.dtype.name != "bfloat16":
        raise TaskError(f"{where}: a {a.dtype} array is not a reference output (numbers or booleans)")
    if as_float is None:
        as_float = a.dtype.kind == "f" or a.dtype.name == "bfloat16"
    return a.astype(np.float64 if as_float else np.int64)


def _grid(value, where: str) -> list:
    if isinstance(value, int):
        value = (value,)
    try:
        g = [int(v) for v in value]
        ok = 1 <= len(g) <= 3 and all(not isinstance(v, bool) and float(v).is_integer() for v in value)
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise TaskError(f"{where}: grid() must return 1 to 3 integers (found {value!r})")
    if any(v < 0 for v in g):
        raise TaskError(f"{where}: grid() returned a negative size {tuple(g)}")
    g += [1] * (3 - len(g))
    # CUDA's limits, which Triton's launcher checks too: x < 2^31, y and z < 2^16.
    if g[0] >= 2**31 or g[1] >= 2**16 or g[2] >= 2**16:
        raise TaskError(f"{where}: grid() returned {tuple(g)}: CUDA allows x up to 2^31 - 1, y and z up to 65535")
    return g


def make_case(task: Task, size: dict, seed: int, meta: dict | None, out_dir: str) -> dict:
    """Make one case of `task` at `size`: inputs from a torch.Generator seeded with `seed`, the reference
    outputs, and the grid for the kernel's constexprs `meta` (None: no grid, only the inputs and references
    checked). Writes .npy files into `out_dir` and returns {"size", "grid": [x, y, z], "args": [{"name",
    "kind", "dtype", "role", "npy" | "value", "shape"}], "expected": [{"name", "npy", "mask" (a path or
    None), "rtol", "atol"}]}; expected values are float64 (float outputs) or int64; a non-finite float
    scalar's value is the string "inf", "-inf" or "nan" (JSON has no such numbers). Raises TaskError."""
    import numpy as np
    import torch

    check_size(size, f"{task.path}: size {size}")
    os.makedirs(out_dir, exist_ok=True)
    gen = torch.Generator().manual_seed(int(seed))
    where = f"{task.path}: size {size}"
    given = _call(task, "inputs", dict(size), gen)
    if not isinstance(given, dict):
        raise TaskError(f"{where}: inputs() must return a dict of the signature's runtime arguments")
    runtime = [a for a in task.signature if a.kind != "constexpr"]
    missing = [a.name for a in runtime if a.name not in given]
    extra = sorted(set(given) - {a.name for a in runtime})
    if missing or extra:
        raise TaskError(f"{where}: inputs() must give exactly the runtime arguments; "
                        + (f"missing {', '.join(missing)}" if missing else "")
                        + ("; " if missing and extra else "") + (f"not in the signature: {', '.join(extra)}" if extra else ""))
    args, originals = [], {}
    for a in runtime:
        v = given[a.name]
        d = a.to_json()
        if a.kind == "pointer":
            arr = _as_numpy(v, a, where)
            p = os.path.join(out_dir, f"in_{a.name}.npy")
            np.save(p, arr)
            d.update(npy=p, shape=list(arr.shape))
            originals[a.name] = v.clone() if isinstance(v, torch.Tensor) else np.array(v, copy=True)
        else:
            if a.dtype == "i1":
                if not isinstance(v, (bool, np.bool_, int, np.integer)):
                    raise TaskError(f"{where}: {a.name} is {v!r}; the signature says an i1 scalar")
                d["value"] = bool(v)
            elif a.dtype.startswith(("f", "bf")):
                if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
                    raise TaskError(f"{where}: {a.name} is {v!r}; the signature says a {a.dtype} scalar")
                # The value the kernel gets: rounded to the argument's format (as Triton's launcher does).
                d["value"] = float(torch.tensor(float(v), dtype=getattr(torch, TORCH_DTYPES[a.dtype])).item())
                originals[a.name] = d["value"]
                if not math.isfinite(d["value"]):
                    d["value"] = str(d["value"])  # "inf", "-inf", "nan"
                args.append(d)
                continue
            else:
                bits = int(a.dtype[1:])
                if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                    raise TaskError(f"{where}: {a.name} is {v!r}; the signature says an {a.dtype} scalar")
                if not -(1 << (bits - 1)) <= int(v) < (1 << (bits - 1)):
                    raise TaskError(f"{where}: {a.name} = {v} does not fit an {a.dtype}")
                d["value"] = int(v)
            originals[a.name] = d["value"]
        args.append(d)
    expected_given = _call(task, "reference", originals)
    if not isinstance(expected_given, dict):
        raise TaskError(f"{where}: reference() must return a dict of the outputs' expected values")
    expected = []
    shapes = {d["name"]: d["shape"] for d in args if "shape" in d}
    for a in task.outputs:
        if a.name not in expected_given:
            raise TaskError(f"{where}: reference() gives no value for the output {a.name}")
        v = expected_given[a.name]
        mask = None
        if isinstance(v, tuple):
            if len(v) != 2:
                raise TaskError(f"{where}: reference()[{a.name!r}] is a tuple of {len(v)}; (values, mask) expected")
            v, mask = v
        e = _expected_numpy(v, f"{where}: reference()[{a.name!r}]", as_float=a.dtype.startswith(("f", "bf")))
        if list(e.shape) != shapes[a.name]:
            raise TaskError(f"{where}: reference()[{a.name!r}] has shape {tuple(e.shape)}; the buffer {a.name} has "
                            f"{tuple(shapes[a.name])}")
        entry = {"name": a.name, "npy": os.path.join(out_dir, f"expected_{a.name}.npy"), "mask": None,
                 "rtol": task.tolerance[a.name][0], "atol": task.tolerance[a.name][1]}
        np.save(entry["npy"], e)
        if mask is not None:
            m = _expected_numpy(mask, f"{where}: the mask of {a.name}")
            if m.shape != e.shape:
                raise TaskError(f"{where}: the mask of {a.name} has shape {tuple(m.shape)}, not {tuple(e.shape)}")
            entry["mask"] = os.path.join(out_dir, f"mask_{a.name}.npy")
            np.save(entry["mask"], (m != 0).astype(np.bool_))
        expected.append(entry)
    extra = sorted(set(expected_given) - {a.name for a in task.outputs})
    if extra:
        raise TaskError(f"{where}: reference() gives {', '.join(extra)}, which are not outputs of the signature")
    if meta is None:
        return {"size": size, "args": args, "expected": expected}
    grid = _grid(_call(task, "grid", dict(size), dict(meta)), where)
    return {"size": size, "grid": grid, "args": args, "expected": expected}


def scalar_value(arg: dict):
    """The Python value of a case's scalar argument (make_case writes non-finite floats as strings)."""
    v = arg["value"]
    return float(v) if isinstance(v, str) else v


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) for positive b, as triton.cdiv."""
    return -(-a // b)


def check_outputs(case: dict, outputs: dict) -> list:
    """Compare `outputs` (name -> numpy array of the buffer) with a case's expected values. Returns one dict
    per output: {"name", "ok", "bad" (elements out of tolerance), "compared", "max_error", "at" (index of
    the worst element), "got", "expected"}. The same rule as the C++ pipeline (src/generate): used for
    Python kernels' outputs in tests."""
    import numpy as np

    results = []
    for e in case["expected"]:
        exp = np.load(e["npy"])
        got = np.asarray(outputs[e["name"]])
        gotd = got.astype(np.float64) if exp.dtype.kind == "f" else got.astype(np.int64)
        mask = np.load(e["mask"]) if e["mask"] else np.ones(exp.shape, bool)
        if exp.dtype.kind == "f":
            # As src/generate/evaluate.cpp: NaN passes only against NaN and an infinity only against the same
            # infinity (inf - inf is NaN, which no tolerance admits); other values within atol + rtol * |expected|.
            special = np.isnan(gotd) | np.isnan(exp) | np.isinf(gotd) | np.isinf(exp)
            same = (np.isnan(gotd) & np.isnan(exp)) | (gotd == exp)
            with np.errstate(invalid="ignore"):  # inf - inf, 0 * inf: not used where special
                err = np.where(special, np.where(same, 0.0, math.inf), np.abs(gotd - exp))
                ok = np.where(special, same, err <= e["atol"] + e["rtol"] * np.abs(exp))
        else:
            ok = gotd == exp
            err = np.abs(gotd - exp).astype(np.float64)
        bad = mask & ~ok
        worst = np.where(mask, err, -1.0)
        at = np.unravel_index(int(np.argmax(worst)), exp.shape) if exp.size else ()
        results.append({"name": e["name"], "ok": not bad.any(), "bad": int(bad.sum()), "compared": int(mask.sum()),
                        "max_error": float(worst[at]) if exp.size else 0.0, "at": [int(i) for i in at],
                        "got": gotd[at].item() if exp.size else None, "expected": exp[at].item() if exp.size else None})
    return results


if __name__ == "__main__":  # pragma: no cover - a quick check of a task file by hand
    t = load(sys.argv[1])
    print(t.to_json())
