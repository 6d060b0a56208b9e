"""The kernel generator's AST end to end, without any model (include/tilescope/gen/ast.h, docs/gen-format.md).

For every hand-written kernel AST (tests/gen/fixtures.py: the suite's tasks/<name>.json beside its task file
tasks/<name>.py, docs/gen-tasks.md, and the op-coverage tasks of tests/gen/coverage/):
- it is valid under the generated JSON Schema by an independent validator (Python's jsonschema, draft
  2020-12), and tilescope's own validation accepts it;
- its lowered TTIR is read and verified by tilescope, runs on the engine through the front door's launch
  path (_native.launch = launch::run_launch) at every size of its task, matches the task's PyTorch reference
  within the task's tolerance, and the sanitizer, the race detector and uninitialized-memory tracking (with
  `out` buffers undefined until written) report nothing;
- Triton's own MLIR parser accepts the lowered text and triton.compile takes it to PTX and a cubin for
  sm_90 on this machine, with no GPU (Triton's bundled ptxas).
The schema itself: a valid draft 2020-12 schema, no recursive $ref, every string and array bounded. And
the structural validation agrees with jsonschema on broken documents, the CLI's `tilescope gen` commands
work, and problems are located by JSON pointers.
"""
from __future__ import annotations

import copy
import glob
import json
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "gen"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fixtures  # noqa: E402
import tsrun  # noqa: E402
from tilescope import _native  # noqa: E402

BIN = tsrun.tilescope_bin()
FIXTURES = {fx.name: fx for fx in fixtures.fixtures()}
CASES = [(fx.name, i) for fx in FIXTURES.values() for i in range(len(fx.task.sizes))]
ANALYSES = fixtures.ANALYSES


def text_of(name: str) -> str:
    return FIXTURES[name].text()


def doc_of(name: str) -> dict:
    return FIXTURES[name].doc()


def problems(doc) -> list:
    return json.loads(_native.gen_check(doc if isinstance(doc, str) else json.dumps(doc)))


@pytest.fixture(scope="module")
def schema():
    return json.loads(_native.gen_schema())


@pytest.fixture(scope="module")
def validator(schema):
    import jsonschema

    return jsonschema.Draft202012Validator(schema)


# --------------------------------------------------------------------------------------------------
# The fixtures


def test_every_fixture_has_a_task():
    """Every AST has its task file and every task file its AST, in the suite (tasks/) and in the op-coverage
    fixtures; every task has at least three sizes; suite and coverage names do not collide."""
    for d in (fixtures.SUITE_DIR, fixtures.COVERAGE_DIR):
        asts = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(d, "*.json")))
        tasks = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(d, "*.py")))
        assert asts == tasks, f"{d}: ASTs without a task or tasks without an AST"
    suite = fixtures.fixtures(suite_only=True)
    assert len(FIXTURES) == len(fixtures.fixtures()) >= len(suite) + 5, "a fixture name in both directories"
    assert {"vector_add", "row_softmax"} <= {fx.name for fx in suite}
    for fx in FIXTURES.values():
        assert os.path.isfile(fx.ast_path), fx.name
        assert len(fx.task.sizes) >= 3, fx.name
        assert doc_of(fx.name)["name"] == fx.name, f"{fx.ast_path}: the kernel's name is not the task's"


def test_the_suite_has_40_tasks():
    """Issue 15: a suite of at least 40 tasks of our own, each with a PyTorch reference, sizes and a correct AST
    written by us (tasks/<name>.py beside tasks/<name>.json), each checked at several sizes."""
    suite = fixtures.fixtures(suite_only=True)
    assert len(suite) >= 40, [fx.name for fx in suite]
    for fx in suite:
        assert os.path.dirname(fx.ast_path) == fixtures.SUITE_DIR and os.path.isfile(fx.ast_path), fx.name
        assert len(fx.task.sizes) >= 3, fx.name


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_fixture_is_valid(name, validator):
    validator.validate(doc_of(name))
    assert problems(text_of(name)) == []


@pytest.mark.parametrize("name,size", CASES, ids=[f"{n}-{i}" for n, i in CASES])
def test_fixture_runs_correctly_and_clean(name, size, tmp_path):
    fx = FIXTURES[name]
    run = fixtures.run(fx, size, str(tmp_path))
    assert run.findings == [], json.dumps(run.findings, indent=1)[:4000]
    assert [c["name"] for c in run.checks] == [o.name for o in fx.task.outputs]
    for c in run.checks:
        assert c["compared"] > 0, f"{name} {fx.task.sizes[size]} {c['name']}: nothing compared"
        assert c["ok"], (f"{name} {fx.task.sizes[size]} {c['name']}: {c['bad']} of {c['compared']} elements out of "
                         f"tolerance {fx.task.tolerance[c['name']]}; worst at {c['at']}: got {c['got']!r}, "
                         f"expected {c['expected']!r}")


def launch(name: str, arrays: dict, scalars: dict, grid: list) -> list:
    """The fixture `name` launched by hand with these numpy arrays and scalars: its findings."""
    kernel = _native.compile(_native.gen_lower(text_of(name))[0], f"{name}.ttir")
    args = []
    for n, _ in kernel.args:
        if n in scalars:
            args.append(scalars[n])
            continue
        v = arrays[n]
        args.append(_native.Buffer(n, str(v.dtype), v.ctypes.data, v.nbytes, list(v.shape),
                                   [s // v.itemsize for s in v.strides]))
    return json.loads(_native.launch(kernel, args, grid, analyses=ANALYSES)["findings"])


def test_findings_are_reported():
    """A negative control: the same launch path reports a real bug. vector_add launched with an output one
    element short of n writes out of bounds."""
    n = 300
    arrays = {"x_ptr": np.ones(n, np.float32), "y_ptr": np.ones(n, np.float32), "out_ptr": np.zeros(n - 1, np.float32)}
    findings = launch("vector_add", arrays, {"n": n}, [2, 1, 1])
    assert [f["kind"] for f in findings] == ["out-of-bounds-store"]


def test_reading_an_out_buffer_is_reported(tmp_path):
    """A negative control of the tracking of `out` buffers: vector_add changed to accumulate into out (out +=
    x + y) reads memory the kernel never wrote, and run() reports an uninitialized-read at that load."""
    fx = FIXTURES["vector_add"]
    d = fx.doc()
    ops = d["ops"]
    at = next(i for i, o in enumerate(ops) if o["op"] == "store")
    ops[at:at] = [{"op": "load", "result": "old", "operands": ["out_ptrs", "mask"]},
                  {"op": "add", "result": "acc", "operands": ["old", "sum"]}]
    ops[at + 2]["operands"][1] = "acc"
    assert problems(d) == []
    run = fixtures.run(fx, 2, str(tmp_path), ast_text=json.dumps(d))
    kinds = {f["kind"] for f in run.findings}
    assert "uninitialized-read" in kinds, run.findings
    # The unchanged kernel at the same size is clean (the finding is the read, not the set-up).
    assert fixtures.run(fx, 2, str(tmp_path / "clean")).findings == []


@pytest.fixture(scope="module")
def triton_env(tmp_path_factory):
    # A cache of this module's own (Triton compiles into it), put back as it was afterwards.
    old = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = str(tmp_path_factory.mktemp("triton-cache"))
    import triton
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend

    target = GPUTarget("cuda", 90, 32)
    yield triton, ir, target, make_backend(target)
    if old is None:
        os.environ.pop("TRITON_CACHE_DIR", None)
    else:
        os.environ["TRITON_CACHE_DIR"] = old


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_triton_parses_and_compiles_to_ptx(name, triton_env, tmp_path):
    """Triton's own MLIR parser and verifier accept the lowered TTIR, and triton.compile takes it through
    its TTGIR, LLVM and PTX stages and the bundled ptxas to a cubin for sm_90, with no GPU."""
    triton, ir, target, backend = triton_env
    ttir, _ = _native.gen_lower(text_of(name))
    path = tmp_path / f"{name}.ttir"
    path.write_text(ttir)
    ctx = ir.context()
    ir.load_dialects(ctx)
    backend.load_dialects(ctx)
    mod = ir.parse_mlir_module(str(path), ctx)
    assert mod.verify()
    k = triton.compile(str(path), target=target)
    assert f".entry {doc_of(name)['name']}" in k.asm["ptx"]
    assert ".target sm_90" in k.asm["ptx"]
    assert len(k.asm["cubin"]) > 0


# --------------------------------------------------------------------------------------------------
# The schema


def walk(node, path=""):
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from walk(v, f"{path}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from walk(v, f"{path}/{i}")


def test_schema_is_draft_2020_12(schema):
    import jsonschema

    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


def test_schema_is_bounded_and_not_recursive(schema):
    # Every string and array is bounded (a small model cannot loop inside one until max_tokens).
    for path, node in walk(schema):
        if isinstance(node, dict) and node.get("type") == "string":
            assert "maxLength" in node, path
        if isinstance(node, dict) and node.get("type") == "array":
            assert "maxItems" in node, path
    # $refs point into $defs only, and no definition reaches itself through them.
    refs = {}
    for name, body in schema["$defs"].items():
        refs[name] = {n["$ref"].split("/")[-1] for _, n in walk(body) if isinstance(n, dict) and "$ref" in n}
    for _, n in walk(schema):
        if isinstance(n, dict) and "$ref" in n:
            assert n["$ref"].startswith("#/$defs/") and n["$ref"].split("/")[-1] in schema["$defs"]

    def reaches(start, seen):
        for r in refs[start]:
            if r in seen:
                return True
            if reaches(r, seen | {r}):
                return True
        return False

    for name in refs:
        assert not reaches(name, {name}), f"$defs/{name} refers back to itself"
    ops = [b["properties"]["op"]["const"] for b in schema["$defs"]["op"]["anyOf"]]
    assert len(ops) == len(set(ops)) >= 50
    assert "for" in ops and "dot" in ops and "atomic_rmw" in ops


def test_cli_schema_is_the_same(schema, tmp_path):
    out = subprocess.run([BIN, "gen", "schema"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == schema
    ref = subprocess.run([BIN, "gen", "ops"], capture_output=True, text=True)
    assert ref.returncode == 0 and ref.stdout == _native.gen_reference()
    assert ref.stdout.startswith("program_id -> result:") and "\nfor -> results:" in ref.stdout


# --------------------------------------------------------------------------------------------------
# Structure: tilescope's validation rejects what the schema rejects, at the right place


def broken(name, edit):
    d = doc_of(name)
    edit(d)
    return d


STRUCTURAL = [
    ("missing version", lambda d: d.pop("version"), ""),
    ("version 2", lambda d: d.update(version=2), "/version"),
    ("extra top-level key", lambda d: d.update(comment="hi"), "/comment"),
    ("kernel name with a space", lambda d: d.update(name="vector add"), "/name"),
    ("name too long", lambda d: d["ops"][0].update(result="p" * 41), "/ops/0/result"),
    ("unknown op", lambda d: d["ops"][1].update(op="multiply"), "/ops/1/op"),
    ("unknown field", lambda d: d["ops"][1].update(axis=0), "/ops/1/axis"),
    ("missing result", lambda d: d["ops"][1].pop("result"), "/ops/1"),
    ("three operands for add", lambda d: d["ops"][4]["operands"].append("lanes"), "/ops/4/operands"),
    ("axis 3", lambda d: d["ops"][0].update(axis=3), "/ops/0/axis"),
    ("unknown dtype", lambda d: d["args"][0].update(dtype="float32"), "/args/0/dtype"),
    ("i1 pointee", lambda d: d["args"][0].update(dtype="i1"), "/args/0/dtype"),
    ("constexpr without value", lambda d: d["args"][4].pop("value"), "/args/4"),
    ("shape of 5 dims", lambda d: d["ops"][3].update(shape=[1, 1, 1, 1, 1]), "/ops/3/shape"),
    ("dim 0", lambda d: d["ops"][3].update(shape=[0]), "/ops/3/shape/0"),
    ("too many ops", lambda d: d.update(ops=d["ops"] * 16), "/ops"),
    ("ops empty", lambda d: d.update(ops=[]), "/ops"),
    ("operand not a string", lambda d: d["ops"][4]["operands"].__setitem__(1, 3), "/ops/4/operands/1"),
    ("region without ops", lambda d: d.update(regions=[{"name": "r"}]), "/regions/0"),
]


@pytest.mark.parametrize("what,edit,pointer", STRUCTURAL, ids=[s[0] for s in STRUCTURAL])
def test_structural_problems_agree_with_jsonschema(what, edit, pointer, validator):
    d = broken("vector_add", edit)
    assert list(validator.iter_errors(d)), f"jsonschema accepts the document with {what}"
    p = problems(d)
    assert p, f"tilescope accepts the document with {what}"
    assert p[0]["pointer"] == pointer, p
    assert p[0]["expected"] and p[0]["found"], p


def test_semantic_problems_are_not_schema_problems(validator):
    """A use of an undefined name is valid under the schema (names are only checked by the semantic pass)
    and located by tilescope."""
    d = broken("vector_add", lambda d: d["ops"][13]["operands"].__setitem__(1, "yy"))
    assert not list(validator.iter_errors(d))
    p = problems(d)
    assert [q["pointer"] for q in p] == ["/ops/13/operands/1"]
    assert "'yy' is not defined (did you mean 'y'?)" in p[0]["message"]


def test_not_json(tmp_path):
    """Text that is not JSON: where it stops being valid, as a line and column of the text, in words."""
    p = problems('{"version": 1, "name": "k",\n "args": [')
    assert len(p) == 1 and p[0]["kind"] == "json" and p[0]["pointer"] == "", p
    assert p[0]["message"].startswith("not JSON: the document ends early, at line 2, column 11 ("), p
    p = problems('{"version": 1,\n "name": "k" "args": []}')
    assert p[0]["message"].startswith("not JSON: invalid at line 2, column 14 ("), p
    assert p[0]["found"] == "'\"args\": []}'"
    # The command line, on a reply cut off at max_tokens (no newline).
    cut = tmp_path / "cut.json"
    cut.write_text('{"version": 1, "na')
    r = subprocess.run([BIN, "gen", "check", str(cut)], capture_output=True, text=True)
    assert r.returncode == 1
    assert r.stderr.startswith(f"{cut}:(document): not JSON: the document ends early, at line 1, column 19 ("), \
        r.stderr
    assert "found the end of the text (18 bytes)" in r.stderr
    assert "json.exception" not in r.stderr and "at byte" not in r.stderr
    r = subprocess.run([BIN, "gen", "check", "--json", str(cut)], capture_output=True, text=True)
    assert r.returncode == 1
    [q] = json.loads(r.stdout)
    assert q["kind"] == "json" and q["pointer"] == "" and "ends early" in q["message"]


# --------------------------------------------------------------------------------------------------
# The command line


def test_cli_check_and_lower_then_run(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(broken("vector_add", lambda d: d["ops"][13].update(operands=["x", "n"]))))
    out = subprocess.run([BIN, "gen", "check", str(bad)], capture_output=True, text=True)
    assert out.returncode == 1
    assert f"{bad}:/ops/13/operands/1: operand 1 (b) of add: operands must have equal types" in out.stderr
    assert "(expected f32[256], found i32)" in out.stderr
    js = subprocess.run([BIN, "gen", "check", "--json", str(bad)], capture_output=True, text=True)
    assert js.returncode == 1 and json.loads(js.stdout)[0]["pointer"] == "/ops/13/operands/1"
    ok = subprocess.run([BIN, "gen", "check", FIXTURES["vector_add"].ast_path], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    ttir = tmp_path / "vector_add.ttir"
    low = subprocess.run([BIN, "gen", "lower", FIXTURES["vector_add"].ast_path, "-o", str(ttir)], capture_output=True,
                         text=True)
    assert low.returncode == 0, low.stderr
    x = np.arange(300, dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    run = subprocess.run([BIN, "run", str(ttir), "--grid", "2", "--arg", f"x_ptr={tmp_path / 'x.npy'}",
                          "--arg", "y_ptr=f32[300]:ones", "--arg", "out_ptr=f32[300]:zeros", "--arg", "n=i32:300",
                          "--save", f"out_ptr={tmp_path / 'out.npy'}"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), x + 1)
    missing = subprocess.run([BIN, "gen", "lower", str(tmp_path / "nope.json")], capture_output=True, text=True)
    assert missing.returncode == 2 and "cannot open" in missing.stderr


# --------------------------------------------------------------------------------------------------
# Random edits of the fixtures: validation never crashes, agrees with jsonschema on what the schema
# forbids, and whatever it accepts lowers to TTIR that tilescope reads, verifies and plans.


def _names(d):
    out = [a["name"] for a in d["args"]]
    for lst in [d["ops"]] + [r["ops"] for r in d.get("regions", [])]:
        for o in lst:
            r = [o["result"]] if "result" in o else o.get("results", [])
            out += [x for x in (r if isinstance(r, list) else []) if isinstance(x, str)]
    return out


def _mutate(d, rng):
    lists = [d["ops"]] + [r["ops"] for r in d.get("regions", [])]
    lst = lists[rng.integers(len(lists))]
    if not lst:
        return
    i = int(rng.integers(len(lst)))
    o = lst[i]
    names = _names(d)
    what = rng.integers(6)
    operands = o.get("operands") if isinstance(o.get("operands"), list) else None
    if what == 0 and operands:  # another value as an operand: type and shape confusions
        operands[int(rng.integers(len(operands)))] = names[int(rng.integers(len(names)))]
    elif what == 1:  # a field set to something else
        key = list(o)[int(rng.integers(len(o)))]
        o[key] = [0, 1, 2, 3, -1, 16, 100, "f16", "i32", "sum", [64], [32, 32], True, names[0]][int(rng.integers(14))]
    elif what == 2:  # a field dropped
        o.pop(list(o)[int(rng.integers(len(o)))])
    elif what == 3:  # an op moved
        j = int(rng.integers(len(lst)))
        lst[i], lst[j] = lst[j], lst[i]
    elif what == 4:  # an op repeated
        lst.insert(int(rng.integers(len(lst) + 1)), copy.deepcopy(o))
    else:  # an operand dropped or added
        if operands and rng.integers(2):
            operands.pop()
        elif operands is not None:
            operands.append(names[int(rng.integers(len(names)))])


def test_random_edits(validator):
    rng = np.random.default_rng(7)
    accepted = rejected = 0
    for k in range(400):
        name = sorted(FIXTURES)[k % len(FIXTURES)]
        d = doc_of(name)
        for _ in range(int(rng.integers(1, 3))):
            _mutate(d, rng)
        p = problems(d)
        schema_ok = not list(validator.iter_errors(d))
        assert schema_ok == (not any(q["kind"] == "schema" for q in p)), (name, d, p)
        if p:
            rejected += 1
            assert all(q["pointer"] == "" or q["pointer"].startswith("/") for q in p)
            continue
        accepted += 1
        ttir, _ = _native.gen_lower(json.dumps(d))
        _native.compile(ttir, f"{name}-edit{k}.ttir")  # raises if tilescope's reader or verifier disagree
    print(f"{accepted} accepted, {rejected} rejected")
    assert accepted > 10 and rejected > 100, (accepted, rejected)


def test_format_doc_has_the_current_op_reference():
    with open(os.path.join(ROOT, "docs", "gen-format.md")) as f:
        doc = f.read()
    block = doc.split("<!-- gen ops -->\n```text\n", 1)[1].split("```\n<!-- /gen ops -->", 1)[0]
    assert block == _native.gen_reference(), "docs/gen-format.md: paste `tilescope gen ops` between its markers"
