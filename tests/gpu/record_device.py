#!/usr/bin/env python3
"""Record what a real NVIDIA GPU, torch and Triton answer to the device queries Triton programs make,
and the compiled forms of the kernels of tests/gpu/device_kernels.py, for tilescope's emulated device.

    python3 tests/gpu/record_device.py --out tests/gpu/data/device_h200.json   # needs a CUDA GPU

Recorded: torch.cuda's answers (availability, count, current device, capability, name, every public
field of get_device_properties(0)); Triton's driver's (current target, utils.get_device_properties,
active torch device); for each kernel of device_kernels.CASES compiled by `kernel.warmup` with Triton's
defaults: asm keys, metadata, n_regs / n_spills / n_max_threads (from the CUDA driver, after
_init_handles()), the TTIR, TTGIR and PTX text (with
sha256 of each as device_kernels.normalized gives it), and what the bundled `cuobjdump -res-usage` says of the cubin.
tests/python/test_device.py compares tilescope's emulated sm_90 device and its lazily compiled asm with
this file.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile

MAX_TEXT = 100_000  # characters of PTX above which a kernel's texts are kept as hashes only
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def jsonable(v):
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    return repr(v)


def res_usage(cubin: bytes) -> str:
    import triton

    exe = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(cubin)
    try:
        return subprocess.run([exe, "-res-usage", f.name], capture_output=True, text=True).stdout
    finally:
        os.remove(f.name)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    import torch
    import triton

    import device_kernels

    c = torch.cuda
    props = c.get_device_properties(0)
    fields = {n: jsonable(getattr(props, n)) for n in dir(props) if not n.startswith("_")
              and not callable(getattr(props, n))}
    drv = triton.runtime.driver.active
    t = drv.get_current_target()
    out = {
        "versions": {"python": platform.python_version(), "torch": torch.__version__, "triton": triton.__version__,
                     "cuda": torch.version.cuda},
        "torch": {
            "is_available": c.is_available(), "device_count": c.device_count(), "current_device": c.current_device(),
            "capability": list(c.get_device_capability()), "name": c.get_device_name(), "properties": fields,
            "properties_repr": repr(props), "arch_list": c.get_arch_list(), "is_bf16_supported": c.is_bf16_supported(),
            "mem_get_info_total": c.mem_get_info()[1],
        },
        "triton": {
            "target": [t.backend, t.arch, t.warp_size],
            "device_properties": jsonable(drv.utils.get_device_properties(0)),
            "active_torch_device": str(drv.get_active_torch_device()),
            "current_device": drv.get_current_device(),
            "device_interface": drv.get_device_interface().__name__,
        },
        "kernels": {},
        "kernel_dir": HERE,
        "note": ("Recorded by tests/gpu/record_device.py; texts of kernels whose PTX is over "
                 f"{MAX_TEXT} characters are kept only as sha256 of device_kernels.normalized(text) (as for "
                 "the others: *_sha256)"),
    }
    for name, (kernel, make_args, opts) in device_kernels.CASES.items():
        args, consts = make_args(torch, "cuda")
        k = kernel.warmup(*args, grid=(1, ), **consts, **opts)
        k._init_handles()
        md = k.metadata._asdict()
        out["kernels"][name] = {
            "asm_keys": sorted(k.asm.keys()),
            "metadata": jsonable(md),
            "n_regs": k.n_regs, "n_spills": k.n_spills, "n_max_threads": k.n_max_threads,
            "llir_sha256": hashlib.sha256(k.asm["llir"].encode()).hexdigest(),
            "cubin_bytes": len(k.asm["cubin"]),
            "res_usage": res_usage(k.asm["cubin"]),
        }
        for ext in ("ttir", "ttgir", "ptx"):
            text = k.asm[ext]
            rec = out["kernels"][name]
            rec[ext + "_chars"] = len(text)
            rec[ext + "_sha256"] = hashlib.sha256(device_kernels.normalized(ext, text, HERE).encode()).hexdigest()
            if len(k.asm["ptx"]) <= MAX_TEXT:
                rec[ext] = text
        print(name, "regs", k.n_regs, "spills", k.n_spills, "max_threads", k.n_max_threads, "shared", md["shared"])
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    print(json.dumps({k: v for k, v in out.items() if k != "kernels"}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
