#!/usr/bin/env python3
"""Compile every kernel of kernels.py to TTIR with Triton, without a GPU, and write the fixture corpus.

    python3 tests/ttir/generate.py            # from the repository root (any cwd works)
    python3 tests/ttir/generate.py --check    # regenerate in memory and fail if a committed file differs
    /work/venv-triton-3.9.0/bin/python tests/ttir/generate.py   # another Triton: tests/ttir/triton-3.9/

The corpus of record is made by triton 3.6 and lives in tests/ttir/. Any other Triton writes the same
file names into tests/ttir/triton-<major>.<minor>/ (override with --out). A kernel that a version cannot
compile is skipped and listed with the error under "skipped" in that directory's manifest.json.

Writes, for each fixture of kernels.FIXTURES:
  tests/ttir/<name>.ttir            kernel.asm["ttir"] for the first target (cuda:90 unless noted)
  tests/ttir/<name>_sm<cap>.ttir    the same kernel for further targets (cuda:80 rewrites descriptors)
  tests/ttir/<name>.source.ttir     kernel.asm["source"] (IR as the frontend emitted it, block pointers
                                    still present) when the fixture asks for it
  tests/ttir/manifest.json          kernel name, grid, arguments (names, dtypes, shapes, generators)

Route (reference §4.2): ASTSource.make_ir + backend.make_ttir; str(module) prints exactly what
asm["ttir"] / asm["source"] hold (debug info and name-location prefixes on). API differences handled here
(installed wheels 3.4.0, 3.6.0, 3.9.0): make_ir takes `target` first from 3.5 on (3.4: options, codegen_fns,
module_map, context); make_ttir takes the capability in all three; ASTSource(constexprs=by name) in all. The process runs from the
repository root with kernels imported through a relative path, so locations read
"tests/ttir/kernels.py":LINE:COL and the files do not depend on where the checkout lives.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
HERE_REL = os.path.join("tests", "ttir")
RECORD_VERSION = "3.6"  # the Triton whose output is the corpus of record in tests/ttir/ itself


def triton_version() -> str:
    import triton
    return triton.__version__


def default_outdir() -> str:
    """tests/ttir for the corpus-of-record Triton, tests/ttir/triton-<major>.<minor> for any other."""
    mm = ".".join(triton_version().split(".")[:2])
    return HERE_REL if mm == RECORD_VERSION else os.path.join(HERE_REL, f"triton-{mm}")


def _import_kernels():
    os.chdir(ROOT)
    if HERE_REL not in sys.path:
        sys.path.insert(0, HERE_REL)  # relative on purpose: co_filename becomes tests/ttir/kernels.py
    import fixture_data  # noqa: F401
    import kernels
    return kernels


def signature_of(fx: dict) -> tuple[dict, dict]:
    """Triton signature and constexprs for ASTSource, in the kernel's argument order."""
    from fixture_data import TRITON_SIG
    fn = fx["fn"]
    by_name = {a["name"]: a for a in fx["args"]}
    sig = {}
    for name in fn.arg_names:
        if name in fx["const"]:
            sig[name] = "constexpr"
        elif name in by_name:
            a = by_name[name]
            t = TRITON_SIG[a["dtype"]]
            sig[name] = ("*" + t) if a["kind"] == "ptr" else t
        else:
            raise ValueError(f"{fx['name']}: kernel argument {name} has no fixture argument")
    extra = set(by_name) - set(fn.arg_names)
    if extra:
        raise ValueError(f"{fx['name']}: fixture arguments {sorted(extra)} are not kernel arguments")
    return sig, dict(fx["const"])


def compile_ttir(fx: dict, capability: int) -> tuple[str, str]:
    """(asm["source"], asm["ttir"]) for one fixture and CUDA capability."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler.compiler import make_backend
    from triton._C.libtriton import ir

    sig, const = signature_of(fx)
    src = ASTSource(fn=fx["fn"], signature=sig, constexprs=const)
    target = GPUTarget("cuda", capability, 32)
    backend = make_backend(target)
    opts = backend.parse_options({"debug": bool(fx["debug"]), "num_warps": fx["num_warps"]})
    ctx = ir.context()
    ir.load_dialects(ctx)
    backend.load_dialects(ctx)
    rest = (opts, backend.get_codegen_implementation(opts), backend.get_module_map(), ctx)
    # 3.4: make_ir(options, codegen_fns, module_map, context); 3.5+: make_ir(target, options, ...)
    mod = src.make_ir(target, *rest) if _takes_target(src.make_ir) else src.make_ir(*rest)
    source = str(mod)
    mod = backend.make_ttir(mod, {}, opts, capability)  # (mod, metadata, opt, capability) in 3.4-3.9
    return _relative(source), _relative(str(mod))


def _takes_target(make_ir) -> bool:
    import inspect
    return "target" in inspect.signature(make_ir).parameters


def _relative(text: str) -> str:
    # Triton prints the absolute path of kernels.py; keep the files independent of the checkout
    # location by printing it relative to the repository root (the only change to Triton's text).
    return text.replace(f'"{ROOT}/', '"')


def manifest_entry(fx: dict, made: set | None = None) -> dict:
    """`made`: the files this Triton produced (None: all of them)."""
    ok = (lambda f: True) if made is None else (lambda f: f in made)
    files = {"ttir": f"{fx['name']}.ttir"}
    variants = [{"file": f"{fx['name']}_sm{cap}.ttir", "target": f"cuda:{cap}"} for cap in fx["targets"][1:]
                if ok(f"{fx['name']}_sm{cap}.ttir")]
    if fx["source"] and ok(f"{fx['name']}.source.ttir"):
        files["source"] = f"{fx['name']}.source.ttir"
    return {
        "name": fx["name"],
        "file": files["ttir"],
        "source_file": files.get("source"),
        "variants": variants,
        "kernel": fx["fn"].__name__,
        "target": f"cuda:{fx['targets'][0]}",
        "debug": fx["debug"],
        "grid": fx["grid"],
        "constexprs": fx["const"],
        "args": fx["args"],
        "note": fx["note"],
    }


def outputs_for(fx: dict, skipped: list | None = None) -> dict[str, str]:
    """file name -> text for one fixture. An exception from the first target propagates (the fixture
    cannot be made); a further target that fails is left out and, with `skipped`, recorded there."""
    out = {}
    source, ttir = compile_ttir(fx, fx["targets"][0])
    out[f"{fx['name']}.ttir"] = ttir
    if fx["source"]:
        out[f"{fx['name']}.source.ttir"] = source
    for cap in fx["targets"][1:]:
        f = f"{fx['name']}_sm{cap}.ttir"
        try:
            out[f] = compile_ttir(fx, cap)[1]
        except Exception as e:
            if skipped is None:
                raise
            skipped.append({"name": fx["name"], "file": f, "reason": _reason(e)})
    return out


def _reason(e: Exception) -> str:
    """One readable line. Triton's CompilationError prints the source excerpt; the cause is chained
    (`__cause__`) or, when there is none, the last line of the message."""
    loc = ""
    if type(e).__name__ == "CompilationError":
        first = str(e).splitlines()[0] if str(e) else ""
        loc = f" ({first.rstrip(':')})" if first.startswith("at ") else ""
        if e.__cause__ is not None:
            c = e.__cause__
            return f"{type(c).__name__}: {str(c).strip().splitlines()[-1] if str(c).strip() else ''}{loc}"[:400]
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip() and set(ln.strip()) != {"^"}]
    return f"{type(e).__name__}: {lines[-1] if lines else ''}{loc}"[:400]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare with the committed files, write nothing")
    ap.add_argument("--only", nargs="*", help="fixture names to (re)generate")
    ap.add_argument("--out", help="output directory relative to the repository root (default: tests/ttir "
                    f"for triton {RECORD_VERSION}, tests/ttir/triton-X.Y for any other)")
    args = ap.parse_args(argv)
    kernels = _import_kernels()
    out_rel = args.out or default_outdir()
    outdir = os.path.join(ROOT, out_rel)
    record = os.path.normpath(out_rel) == os.path.normpath(HERE_REL)
    names = [f["name"] for f in kernels.FIXTURES]
    if len(set(names)) != len(names):
        raise SystemExit("duplicate fixture names")
    files = {}
    failed = []
    skipped = []  # only for other versions: kernels (or variants) this Triton cannot compile
    made_fx = []
    for fx in kernels.FIXTURES:
        if args.only and fx["name"] not in args.only:
            continue
        try:
            files.update(outputs_for(fx, None if record else skipped))
            made_fx.append(fx)
        except Exception as e:  # report every kernel that does not compile
            if record:
                failed.append(f"{fx['name']}: {type(e).__name__}: {e}")
            else:
                skipped.append({"name": fx["name"], "file": f"{fx['name']}.ttir", "reason": _reason(e)})
    if not record:
        skipped += [{"name": fx["name"], "file": f"{fx['name']}.ttir", "reason": fx["why_not"]}
                    for fx in kernels.NOT_AVAILABLE if not args.only or fx["name"] in args.only]
    made = set(files)
    manifest = {"triton": triton_version(),
                "fixtures": [manifest_entry(fx, None if record else made) for fx in
                             (kernels.FIXTURES if record else made_fx)]}
    if not record:
        manifest["skipped"] = skipped
    mtext = json.dumps(manifest, indent=1) + "\n"
    if not args.only:
        files["manifest.json"] = mtext
    if failed:
        print("\n".join(failed), file=sys.stderr)
        return 1
    if args.check:
        bad = [n for n, t in files.items()
               if not os.path.exists(os.path.join(outdir, n)) or open(os.path.join(outdir, n)).read() != t]
        for n in bad:
            print(f"differs: {out_rel}/{n}", file=sys.stderr)
        return 1 if bad else 0
    os.makedirs(outdir, exist_ok=True)
    for n, t in files.items():
        with open(os.path.join(outdir, n), "w") as f:
            f.write(t)
    for sk in skipped:
        print(f"skipped {sk['file']}: {sk['reason']}", file=sys.stderr)
    print(f"triton {triton_version()}: wrote {len(files)} files for {len(made_fx)} fixtures to {out_rel}/"
          + (f" ({len(skipped)} skipped)" if skipped else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
