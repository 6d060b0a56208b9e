#!/usr/bin/env python3
"""Run the TTIR fixture kernels on an NVIDIA GPU and save inputs + outputs as the ground truth that
tests/python/test_gpu_truth.py compares tilescope with.

    python3 tests/gpu/make_ground_truth.py --out DIR          # needs a CUDA GPU, triton 3.6.0, torch

Run it from anywhere inside a checkout of this repository. It writes (at most 4 files):
  DIR/ground_truth.npz   "<fixture>/in/<arg>" and "<fixture>/out/<arg>" arrays (storage dtypes: bf16 as
                         uint16 bits, fp8 as uint8 bits, unsigned ints as their unsigned numpy types)
  DIR/meta.json          device, versions, and per fixture: status, error, grid, whether the TTIR
                         compiled here equals the committed tests/ttir/<name>.ttir
  DIR/log.txt            progress log (also on stdout)
Copy them into tests/gpu/data/.

How each kernel runs: the very ASTSource that tests/ttir/generate.py turns into the committed fixture
(same kernels.py, signature, constexprs, debug flag and num_warps) is compiled here with
triton.compile for this GPU and launched with the fixture's inputs (tests/ttir/fixture_data.py, fixed
seed). The TTIR of that compilation is compared, after normalising Triton's install path, with the
committed fixture, so the GPU result belongs to exactly that TTIR.

Compilation uses enable_fp_fusion=False: by default the NVPTX backend contracts a separate mulf+addf
of the TTIR into one fma, which changes the last bit; with fusion off the GPU rounds each TTIR op as
written, which is what tilescope implements. Everything else is the default (approximate exp / div /
sqrt / sin on the GPU: the comparison test documents those tolerances).

Results are saved after every kernel, so a hang (e.g. in the spin-lock kernel, which runs last) still
leaves everything before it.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
import time
import traceback

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# Not run on the GPU: a failing device_assert poisons the CUDA context; inline PTX is only an error test.
SKIP = {"device_assert_fail": "a failing device assert kills the CUDA context",
        "inline_asm": "error test only"}
# Run last: they could hang the device if something were wrong.
LAST = ["lock_counter"]


def normalise(ttir: str) -> str:
    # Callsite locations name Triton's own files (standard.py, random.py) by absolute install path.
    return re.sub(r'"[^"]*?/triton/language/', '"<triton>/language/', ttir)


def to_torch(arr: np.ndarray):
    import torch
    view = {np.dtype(np.uint16): np.int16, np.dtype(np.uint32): np.int32, np.dtype(np.uint64): np.int64}
    a = arr.view(view[arr.dtype]) if arr.dtype in view else arr
    return torch.from_numpy(np.ascontiguousarray(a).copy()).cuda()


def from_torch(t, like: np.ndarray) -> np.ndarray:
    return t.cpu().numpy().view(like.dtype).reshape(like.shape).copy()


def launch(fx, ck, host, const, arrays):
    import torch
    name = fx["name"]
    dev = {k: to_torch(v) for k, v in host.items()}
    values = []
    for an in fx["fn"].arg_names:
        if an in const:
            values.append(const[an])
        elif an in dev:
            values.append(dev[an])
        else:
            a = next(a for a in fx["args"] if a["name"] == an)
            values.append(float(a["value"]) if a["dtype"].startswith("f") else int(a["value"]))
    grid = tuple(fx["grid"]) + (1,) * (3 - len(fx["grid"]))
    ck[grid](*values)
    torch.cuda.synchronize()
    for a in fx["args"]:
        if a["kind"] != "ptr":
            continue
        arrays[f"{name}/in/{a['name']}"] = host[a["name"]]
        if a["role"] in ("out", "inout"):
            arrays[f"{name}/out/{a['name']}"] = from_torch(dev[a["name"]], host[a["name"]])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", nargs="*", help="fixture names")
    ap.add_argument("--dry-run", action="store_true",
                    help="no GPU: check TTIR agreement and compile for sm_90 only, launch nothing")
    args = ap.parse_args(argv)
    out_dir = os.path.abspath(args.out)
    os.makedirs(out_dir, exist_ok=True)
    logf = open(os.path.join(out_dir, "log.txt"), "w")

    def log(msg):
        print(msg, flush=True)
        logf.write(msg + "\n")
        logf.flush()

    sys.path.insert(0, os.path.join(ROOT, "tests", "ttir"))
    import generate  # noqa: E402  (chdir to ROOT and imports kernels through a relative path)
    kernels = generate._import_kernels()
    import fixture_data as fd
    import torch
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    # Device-side tensor descriptors (tl.make_tensor_descriptor) need a global scratch allocator.
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))

    cap = (9, 0) if args.dry_run else torch.cuda.get_device_capability()
    meta = {
        "device": "dry run (no GPU)" if args.dry_run else torch.cuda.get_device_name(), "capability": list(cap), "triton": triton.__version__,
        "torch": torch.__version__, "numpy": np.__version__, "python": platform.python_version(),
        "enable_fp_fusion": False, "date": time.strftime("%Y-%m-%d %H:%M:%S"), "fixtures": {},
    }
    try:
        meta["nvidia_smi"] = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                            capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception as e:  # noqa: BLE001
        meta["nvidia_smi"] = f"unavailable: {e}"
    log(f"device {meta['device']} sm_{cap[0]}{cap[1]}, triton {triton.__version__}, torch {torch.__version__}")

    arrays: dict[str, np.ndarray] = {}

    def save():
        np.savez_compressed(os.path.join(out_dir, "ground_truth.npz"), **arrays)
        with open(os.path.join(out_dir, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)

    fixtures = [f for f in kernels.FIXTURES if not args.only or f["name"] in args.only]
    fixtures.sort(key=lambda f: f["name"] in LAST)
    for fx in fixtures:
        name = fx["name"]
        info = {"grid": fx["grid"], "kernel": fx["fn"].__name__}
        meta["fixtures"][name] = info
        if name in SKIP:
            info["status"] = "skipped"
            info["reason"] = SKIP[name]
            continue
        t0 = time.time()
        try:
            # 1. The TTIR this GPU run belongs to must be the committed fixture.
            _, ttir = generate.compile_ttir(fx, fx["targets"][0])
            committed_path = os.path.join(ROOT, "tests", "ttir", f"{name}.ttir")
            committed = open(committed_path).read() if os.path.exists(committed_path) else ""
            info["ttir_matches_fixture"] = normalise(ttir) == normalise(committed)
            info["ttir_sha256"] = hashlib.sha256(normalise(ttir).encode()).hexdigest()
            if not info["ttir_matches_fixture"]:
                info["device_ttir"] = ttir

            # 2. Compile the same ASTSource for this GPU and launch it.
            sig, const = generate.signature_of(fx)
            src = ASTSource(fn=fx["fn"], signature=sig, constexprs=const)
            opts = {"debug": bool(fx["debug"]), "num_warps": fx["num_warps"], "enable_fp_fusion": False}
            ck = triton.compile(src, target=GPUTarget("cuda", cap[0] * 10 + cap[1], 32), options=opts)
            host = fd.make_inputs(fx)
            if args.dry_run:
                info["status"] = "compiled"
            else:
                launch(fx, ck, host, const, arrays)
                info["status"] = "ok"
        except Exception as e:  # noqa: BLE001  (record and go on with the next kernel)
            info["status"] = "error"
            info["error"] = f"{type(e).__name__}: {e}"
            info["traceback"] = traceback.format_exc()[-4000:]
        info["seconds"] = round(time.time() - t0, 3)
        log(f"{name:24s} {info['status']:8s} ttir_match={info.get('ttir_matches_fixture')} "
            f"{info.get('error', '')[:200]}")
        save()
        if info["status"] == "error" and "CUDA" in info.get("error", "") and "illegal" in info["error"].lower():
            log("CUDA context is broken; stopping")
            break
    save()
    ok = sum(1 for v in meta["fixtures"].values() if v.get("status") == "ok")
    log(f"done: {ok} ok of {len(meta['fixtures'])}; wrote {out_dir}/ground_truth.npz and meta.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
