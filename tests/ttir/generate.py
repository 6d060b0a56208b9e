#!/usr/bin/env python3
"""Compile every kernel of kernels.py to TTIR with Triton, without a GPU, and write the fixture corpus.

    python3 tests/ttir/generate.py            # from the repository root (any cwd works)
    python3 tests/ttir/generate.py --check    # regenerate in memory and fail if a committed file differs

Writes, for each fixture of kernels.FIXTURES:
  tests/ttir/<name>.ttir            kernel.asm["ttir"] for the first target (cuda:90 unless noted)
  tests/ttir/<name>_sm<cap>.ttir    the same kernel for further targets (cuda:80 rewrites descriptors)
  tests/ttir/<name>.source.ttir     kernel.asm["source"] (IR as the frontend emitted it, block pointers
                                    still present) when the fixture asks for it
  tests/ttir/manifest.json          kernel name, grid, arguments (names, dtypes, shapes, generators)

Route (reference §4.2): ASTSource.make_ir + backend.make_ttir; str(module) prints exactly what
asm["ttir"] / asm["source"] hold (debug info and name-location prefixes on). The process runs from the
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
    mod = src.make_ir(target, opts, backend.get_codegen_implementation(opts), backend.get_module_map(), ctx)
    source = str(mod)
    mod = backend.make_ttir(mod, {}, opts, capability)
    return _relative(source), _relative(str(mod))


def _relative(text: str) -> str:
    # Triton prints the absolute path of kernels.py; keep the files independent of the checkout
    # location by printing it relative to the repository root (the only change to Triton's text).
    return text.replace(f'"{ROOT}/', '"')


def manifest_entry(fx: dict) -> dict:
    files = {"ttir": f"{fx['name']}.ttir"}
    variants = [{"file": f"{fx['name']}_sm{cap}.ttir", "target": f"cuda:{cap}"} for cap in fx["targets"][1:]]
    if fx["source"]:
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


def outputs_for(fx: dict) -> dict[str, str]:
    """file name -> text for one fixture."""
    out = {}
    source, ttir = compile_ttir(fx, fx["targets"][0])
    out[f"{fx['name']}.ttir"] = ttir
    if fx["source"]:
        out[f"{fx['name']}.source.ttir"] = source
    for cap in fx["targets"][1:]:
        out[f"{fx['name']}_sm{cap}.ttir"] = compile_ttir(fx, cap)[1]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare with the committed files, write nothing")
    ap.add_argument("--only", nargs="*", help="fixture names to (re)generate")
    args = ap.parse_args(argv)
    kernels = _import_kernels()
    outdir = os.path.join(ROOT, HERE_REL)
    names = [f["name"] for f in kernels.FIXTURES]
    if len(set(names)) != len(names):
        raise SystemExit("duplicate fixture names")
    files = {}
    failed = []
    for fx in kernels.FIXTURES:
        if args.only and fx["name"] not in args.only:
            continue
        try:
            files.update(outputs_for(fx))
        except Exception as e:  # report every kernel that does not compile, then fail
            failed.append(f"{fx['name']}: {type(e).__name__}: {e}")
    manifest = {"triton": __import__("triton").__version__,
                "fixtures": [manifest_entry(fx) for fx in kernels.FIXTURES]}
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
            print(f"differs: tests/ttir/{n}", file=sys.stderr)
        return 1 if bad else 0
    for n, t in files.items():
        with open(os.path.join(outdir, n), "w") as f:
            f.write(t)
    print(f"wrote {len(files)} files for {len(kernels.FIXTURES)} fixtures to {HERE_REL}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
