#!/usr/bin/env python3
"""Record the kernel launches of the bundled examples on an NVIDIA GPU, for replay on tilescope.

    python3 tests/gpu/record_examples.py --out DIR        # needs a CUDA GPU, triton 3.6.0, torch

Run it from the repository root. Every correct example (examples/<name>.py other than buggy_* and demo)
is imported and its main() called unchanged; main() checks its own outputs against torch on the GPU.
While it runs, JITFunction.run is wrapped so that each launch (at most --max-launches per example) is
recorded:
  * the kernel: example module, the module attribute that holds it, the function name;
  * every argument as the launch received it: tensors by their whole storage (raw bytes, copied to the
    host after a synchronize, BEFORE the launch) plus dtype, shape, strides and storage offset (two
    arguments on one storage share it, so aliasing replays too); scalars; constexprs and launch
    options (num_warps, ...) as keyword arguments, including those added by triton.heuristics and the
    configuration that triton.autotune chose (the autotuner's benchmark launches are not recorded;
    its best_config is written next to the launch);
  * the grid, resolved (a callable grid is called with the bound arguments, as Triton does);
  * each storage AFTER the launch (synchronize, copy), saved only when it changed.
tests/python/test_gpu_examples.py rebuilds the arguments on the CPU from the saved bytes, launches the
same kernel object through tilescope and compares with the post-launch bytes.

Written (3 files): DIR/examples.npz (raw storage bytes as uint8 arrays "<example>/<launch>/pre/<storage>"
and ".../post/<storage>"), DIR/examples.json (index: device, versions, per example its status and
launches), DIR/examples_log.txt. Copy them into tests/gpu/data/.

Kernels are compiled with enable_fp_fusion=False (TRITON_DEFAULT_FP_FUSION=0), as for the fixture ground
truth (make_ground_truth.py): with fusion on, the NVPTX backend contracts a TTIR mulf+addf into one fma,
while tilescope rounds each TTIR op as written. Everything else is Triton's default (approximate
exp/div/sqrt, TF32 for fp32 tl.dot).

Without a GPU, --self-test records with tilescope as the executor (DEVICE is "cpu" in the examples then);
that data is only for testing this harness and is marked executor=tilescope in the index.
"""
from __future__ import annotations

import argparse
import glob
import hashlib
import importlib.util
import inspect
import io
import json
import os
import platform
import sys
import threading
import time
import traceback
from contextlib import redirect_stdout

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
EXAMPLES = os.path.join(ROOT, "examples")
MODULE_PREFIX = "tilescope_example_"


def correct_examples() -> list[str]:
    """The correct Triton examples (NKI ones run on Trainium, not on the GPU; error_ ones stop by design)."""
    return sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(EXAMPLES, "*.py"))
                  if not os.path.basename(p).startswith(("buggy_", "demo", "error_", "nki_")))


def source_sha256(name: str) -> str:
    with open(os.path.join(EXAMPLES, name + ".py"), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def import_example(name: str):
    """examples/<name>.py as module tilescope_example_<name> (imported once per process)."""
    mod_name = MODULE_PREFIX + name
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    spec = importlib.util.spec_from_file_location(mod_name, os.path.join(EXAMPLES, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[mod_name]
        raise
    return mod


def base_jit(fn):
    """The JITFunction under autotune/heuristics wrappers (None if there is none)."""
    while fn is not None and not hasattr(fn, "pre_run_hooks"):
        fn = getattr(fn, "fn", None)
    return fn


def kernel_attr(mod, jitfn) -> str | None:
    """Name of the module global whose (wrapped) JITFunction is jitfn."""
    for k, v in vars(mod).items():
        try:
            if base_jit(v) is jitfn:
                return k
        except Exception:
            continue
    return None


def resolve_grid(jitfn, grid, args, kwargs) -> list[int]:
    if callable(grid):
        params = inspect.signature(jitfn.fn).parameters
        bound = inspect.signature(jitfn.fn).bind(*args, **{k: v for k, v in kwargs.items() if k in params})
        bound.apply_defaults()
        grid = grid(dict(bound.arguments))
    g = [int(x) for x in (grid if isinstance(grid, (tuple, list)) else (grid,))]
    return g + [1] * (3 - len(g))


class Unrecordable(Exception):
    pass


class Recorder:
    """Wraps JITFunction.run; records launches of the current example."""

    def __init__(self, max_launches: int, sync):
        self.max_launches = max_launches
        self.sync = sync
        self.example = None
        self.module = None
        self.launches: list[dict] = []
        self.arrays: dict[str, "np.ndarray"] = {}
        self.skipped = 0
        self.local = threading.local()

    # -- encoding -------------------------------------------------------------------------
    def _storage_bytes(self, t):
        import torch

        u = torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())
        return u.cpu().numpy().copy()

    def _encode(self, v, storages: dict):
        import numpy as np
        import torch
        import triton.language as tl

        if isinstance(v, torch.Tensor):
            st = v.untyped_storage()
            key = (str(v.device), st.data_ptr())
            if key not in storages:
                storages[key] = (len(storages), v)
            return {"kind": "tensor", "storage": storages[key][0], "dtype": str(v.dtype).split(".")[-1],
                    "shape": list(v.shape), "strides": list(v.stride()), "offset": int(v.storage_offset()),
                    "device": str(v.device)}
        if v is None or isinstance(v, (bool, int, float, str)):
            return {"kind": "value", "value": v}
        if isinstance(v, np.generic):
            return {"kind": "value", "value": v.item()}
        if isinstance(v, tl.dtype):
            return {"kind": "tl_dtype", "name": str(v)}
        if isinstance(v, (tuple, list)):
            return {"kind": "tuple", "items": [self._encode(x, storages) for x in v]}
        raise Unrecordable(f"argument of type {type(v).__name__}")

    # -- the wrapper ----------------------------------------------------------------------
    def wrap(self, inner):
        rec = self

        def recording_run(jitfn, *args, grid, warmup, **kwargs):
            if (warmup or rec.example is None or getattr(rec.local, "benchmarking", 0)
                    or len(rec.launches) >= rec.max_launches):
                if not warmup and rec.example is not None and not getattr(rec.local, "benchmarking", 0):
                    rec.skipped += 1
                return inner(jitfn, *args, grid=grid, warmup=warmup, **kwargs)
            try:
                entry, storages = rec._before(jitfn, args, grid, kwargs)
            except Unrecordable as e:
                rec.skipped += 1
                rec.log(f"  not recorded: launch of {jitfn.fn.__name__}: {e}")
                return inner(jitfn, *args, grid=grid, warmup=warmup, **kwargs)
            ret = inner(jitfn, *args, grid=grid, warmup=warmup, **kwargs)
            rec._after(entry, storages)
            return ret

        recording_run.__wrapped__ = inner
        return recording_run

    def _before(self, jitfn, args, grid, kwargs):
        storages: dict = {}
        idx = len(self.launches)
        enc_args = [self._encode(a, storages) for a in args]
        enc_kwargs = {k: self._encode(v, storages) for k, v in kwargs.items()}
        entry = {
            "index": idx,
            "kernel": jitfn.fn.__name__,
            "attr": kernel_attr(self.module, jitfn),
            "kernel_module": jitfn.fn.__module__,
            "arg_names": list(jitfn.arg_names),
            "args": enc_args,
            "kwargs": enc_kwargs,
            "grid": resolve_grid(jitfn, grid, args, kwargs),
        }
        at = getattr(self.local, "autotuner", None)
        if at is not None and base_jit(at) is jitfn and getattr(at, "best_config", None) is not None:
            entry["autotune_best_config"] = {"str": str(at.best_config),
                                             "kwargs": {k: repr(v) for k, v in at.best_config.all_kwargs().items()}}
        self.sync()
        for sid, t in storages.values():
            self.arrays[f"{self.example}/{idx}/pre/{sid}"] = self._storage_bytes(t)
        entry["storages"] = [{"id": sid, "nbytes": int(t.untyped_storage().nbytes()), "device": str(t.device)}
                             for sid, t in storages.values()]
        return entry, storages

    def _after(self, entry, storages):
        idx = entry["index"]
        self.sync()
        for sid, t in storages.values():
            post = self._storage_bytes(t)
            pre = self.arrays[f"{self.example}/{idx}/pre/{sid}"]
            changed = post.tobytes() != pre.tobytes()
            entry["storages"][sid]["changed"] = changed
            if changed:
                self.arrays[f"{self.example}/{idx}/post/{sid}"] = post
        self.launches.append(entry)

    log = print


def install(rec: Recorder) -> None:
    from triton.runtime import autotuner, jit

    jit.JITFunction.run = rec.wrap(jit.JITFunction.run)

    # The autotuner's benchmark launches are not recorded; its final launch (best config) is.
    orig_bench = autotuner.Autotuner._bench

    def bench(self, *args, **kwargs):
        rec.local.benchmarking = getattr(rec.local, "benchmarking", 0) + 1
        try:
            return orig_bench(self, *args, **kwargs)
        finally:
            rec.local.benchmarking -= 1

    autotuner.Autotuner._bench = bench
    orig_run = autotuner.Autotuner.run

    def run(self, *args, **kwargs):
        prev = getattr(rec.local, "autotuner", None)
        rec.local.autotuner = self
        try:
            return orig_run(self, *args, **kwargs)
        finally:
            rec.local.autotuner = prev

    autotuner.Autotuner.run = run


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", nargs="*", help="example names (default: every correct example)")
    ap.add_argument("--max-launches", type=int, default=4, help="launches recorded per example (default 4)")
    ap.add_argument("--self-test", action="store_true",
                    help="no GPU: execute with tilescope on the CPU (only to test this harness)")
    args = ap.parse_args(argv)
    out_dir = os.path.abspath(args.out)
    os.makedirs(out_dir, exist_ok=True)
    logf = open(os.path.join(out_dir, "examples_log.txt"), "w")

    def log(msg):
        print(msg, flush=True)
        logf.write(msg + "\n")
        logf.flush()

    os.environ["TRITON_DEFAULT_FP_FUSION"] = "0"  # before triton is imported (see the module docstring)
    import numpy as np
    import torch
    import triton

    cuda = torch.cuda.is_available()
    if args.self_test:
        import tilescope
        from tilescope import _state

        tilescope.install()
        _state.sanitize_all = True
        executor, sync = "tilescope", (lambda: None)
        if cuda:
            log("warning: --self-test with a GPU present: the examples' tensors are CUDA tensors staged by tilescope")
    elif cuda:
        executor, sync = "cuda", torch.cuda.synchronize
        # Device-side tensor descriptors need a global scratch allocator (none of the examples uses one yet).
        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    else:
        log("error: no CUDA device (use --self-test to exercise the harness on the CPU with tilescope)")
        return 2

    rec = Recorder(args.max_launches, sync)
    rec.log = log
    install(rec)

    meta = {
        "executor": executor,
        "device": torch.cuda.get_device_name(0) if cuda else platform.processor() or platform.machine(),
        "capability": list(torch.cuda.get_device_capability(0)) if cuda else [],
        "triton": triton.__version__, "torch": torch.__version__, "python": platform.python_version(),
        "cuda": torch.version.cuda, "date": time.strftime("%Y-%m-%d %H:%M:%S"), "enable_fp_fusion": False,
        "max_launches": args.max_launches, "examples": {},
    }
    names = args.only or correct_examples()
    log(f"recording {len(names)} examples on {meta['device']} ({executor}), triton {triton.__version__}, "
        f"torch {torch.__version__}")
    for name in names:
        t0 = time.time()
        rec.example, rec.launches, rec.skipped = name, [], 0
        info = {"source_sha256": source_sha256(name)}
        buf = io.StringIO()
        try:
            rec.module = import_example(name)
            with redirect_stdout(buf):
                rec.module.main()
            info["status"] = "ok"
        except BaseException as e:  # an assertion of the example or a Triton error: record it, go on
            info["status"] = "main-failed"
            info["error"] = "".join(traceback.format_exception_only(type(e), e)).strip()[-2000:]
            log(traceback.format_exc()[-4000:])
            if isinstance(e, KeyboardInterrupt):
                raise
        finally:
            rec.example = None
        info["stdout"] = buf.getvalue()[-500:]
        info["launches"] = rec.launches
        info["launches_not_recorded"] = rec.skipped
        info["seconds"] = round(time.time() - t0, 2)
        meta["examples"][name] = info
        log(f"{name}: {info['status']}, {len(rec.launches)} launches recorded"
            f"{f', {rec.skipped} more not recorded' if rec.skipped else ''}, {info['seconds']} s")
        # Saved after every example, so a crash still leaves what ran before it.
        np.savez_compressed(os.path.join(out_dir, "examples.npz"), **rec.arrays)
        with open(os.path.join(out_dir, "examples.json"), "w") as f:
            json.dump(meta, f, indent=1)
    size = os.path.getsize(os.path.join(out_dir, "examples.npz"))
    bad = [n for n, v in meta["examples"].items() if v["status"] != "ok"]
    log(f"wrote {out_dir}/examples.npz ({size / 1e6:.2f} MB), examples.json; failed: {bad or 'none'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
