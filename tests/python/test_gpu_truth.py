"""Compare tilescope with outputs measured on an NVIDIA H200 (tests/gpu/data/, made by
tests/gpu/make_ground_truth.py from the same kernels, TTIR and inputs).

Comparison rules (the GPU's own behaviour, reference §2.2 and §5):
* Bit-exact by default, for integer ops, conversions, atomics, exactly rounded float ops (+ - * with
  fp fusion off, div_rn, sqrt_rn, fma, min/max, fmod), and element order. NaNs compare equal to any NaN:
  the GPU writes the canonical NaN 0x7FFFFFFF where a CPU writes 0x7FC00000; NaN payloads are not
  part of any semantics tilescope promises.
* Approximate GPU math gets an ulp tolerance, per output row (TOL below): `math.exp/exp2/log/log2`
  (ex2.approx / lg2.approx based), `arith.divf` (div.full.f32, 2 ulp), `math.sqrt`/`rsqrt` (approx),
  `math.sin/cos` (sin.approx, absolute error), libdevice `__nv_*` (documented 1-4 ulp).
* Dots and reductions whose summation order is the hardware's (tensor-core trees, warp shuffles) get
  a bound relative to sum(|terms|); Hopper fp8 wgmma accumulates with reduced precision.
* Float -> i8 converts at 16 bits on the GPU (cvt.rzi.s16/u16) and a store keeps the low byte, which
  tilescope matches; `f.to(u8).to(i32)` reads the whole 16-bit register (256.0 gives 256, reference §5),
  which an i8 cannot hold: lanes whose 16-bit result exceeds a byte are not compared.
* The lock counter's order log depends on the schedule; only the count is compared.
"""
from __future__ import annotations

import hashlib
import json
import os
import re

import numpy as np
import pytest

import expected as ex
import tsrun

DATA = os.environ.get("TILESCOPE_GPU_DATA") or os.path.join(tsrun.ROOT, "tests", "gpu", "data")
NPZ = os.path.join(DATA, "ground_truth.npz")
META = os.path.join(DATA, "meta.json")
BIN = tsrun.tilescope_bin()




def _load():
    if not os.path.exists(NPZ):
        return {}, {}
    with open(META) as f:
        meta = json.load(f)
    z = np.load(NPZ)
    return meta, {k: z[k] for k in z.files}


META_D, ARR = _load()
FIX = {f["name"]: f for f in tsrun.manifest()["fixtures"]}


def _dot_mag(i, a="a_ptr", b="b_ptr", conv=None):
    A, B = i[a], i[b]
    if conv:
        A, B = tsrun.fd.to_float(A, conv), tsrun.fd.to_float(B, conv)
    A, B = np.abs(A.astype(np.float64)), np.abs(B.astype(np.float64))
    return A @ B


def rows(n, default, **over):
    d = {r: default for r in range(n)}
    d.update({int(k[1:]): v for k, v in over.items()})
    return d


# Tolerance per (fixture, output): a factory (gpu, inputs) -> Check, or a {row: factory} dict.
def exact(g, i):
    return ex.Exact(g)


def ulp(n, atol=0.0):
    return lambda g, i: ex.Ulp(g, n, atol=atol)


def dot(scale, conv=None, **kw):
    return lambda g, i: ex.DotTol(g, _dot_mag(i, conv=conv, **kw), scale)


def close(rtol, atol=0.0):
    return lambda g, i: ex.Close(g, rtol, atol)


TOL = {
    ("softmax", "y_ptr"): close(2e-5, 1e-9),
    ("layernorm", "y_ptr"): lambda g, i: ex.Ulp(g.astype(np.float64), 1, dtype=np.float16),
    ("layernorm", "mean_ptr"): close(1e-5, 1e-6),
    ("layernorm", "rstd_ptr"): close(1e-5),
    ("matmul_f16", "c_ptr"): dot(80 * 2.0 ** -24),
    ("dot_f32_ieee", "c_ptr"): dot(32 * 2.0 ** -24),
    # Same TF32 rounding of the inputs on both sides leaves only the summation order.
    ("dot_f32_tf32", "c_ptr"): dot(2.0 ** -18),
    ("dot_f32_tf32x3", "c_ptr"): dot(2.0 ** -19),
    ("dot_f8e5", "c_ptr"): dot(2.0 ** -12, conv="f8e5"),
    ("dot_f16_out_f16", "c_ptr"): dot(2.0 ** -9),
    ("dot_3d", "c_ptr"): lambda g, i: ex.DotTol(g, np.abs(i["a_ptr"].astype(np.float64)) @ np.abs(i["b_ptr"].astype(np.float64)),
                                                 32 * 2.0 ** -24),
    ("row_reduce", "sum_ptr"): lambda g, i: ex.DotTol(g, np.abs(i["x_ptr"].astype(np.float64)).sum(axis=1), 50 * 2.0 ** -24),
    ("reduce_heavy", "out_ptr"): lambda g, i: ex.Close(g, 1e-5, 1e-5),
    ("scan", "cs_ptr"): close(1e-5, 1e-5),
    ("scan", "cp_ptr"): close(1e-5),
    ("math", "out_ptr"): rows(18, exact, r0=ulp(8), r1=ulp(8), r2=ulp(8, 1e-7), r3=ulp(8, 1e-7), r4=ulp(2), r7=ulp(4),
                              r11=ulp(4, 1e-7), r13=ulp(8, 1e-5), r14=ulp(8, 1e-5), r15=ulp(2)),
    ("libdevice", "out_ptr"): rows(16, ulp(6, 1e-7), r12=exact, r13=exact),
    ("edge_float", "out_ptr"): rows(12, exact, r8=ulp(2, 2.0 ** -126)),
    ("if_else", "y_ptr"): exact,
}

# Lanes compared (see module docstring).
MASKS = {
    ("edge_f2i", "u8_ptr"): lambda i: ~(i["x_ptr"].astype(np.float64) >= 256),  # NaN and x < 256
}
SKIP_OUT = {("lock_counter", "order_ptr")}


def _cases():
    out = []
    for name, info in sorted(META_D.get("fixtures", {}).items()):
        if info.get("status") == "ok" and name in FIX:
            out.append(name)
    return out


def test_ground_truth_present_and_matching_ttir():
    meta = META_D
    assert meta["fixtures"], "empty ground truth"
    ok = [n for n, v in meta["fixtures"].items() if v.get("status") == "ok"]
    assert len(ok) >= 30, f"only {len(ok)} fixtures ran on the GPU"
    stale = [n for n in ok if not meta["fixtures"][n].get("ttir_matches_fixture")]
    assert not stale, f"GPU run used TTIR that differs from the committed fixture: {stale}"
    # Runs made after the hash was recorded: the committed fixture must still be that TTIR.
    changed = []
    for n in ok:
        h = meta["fixtures"][n].get("ttir_sha256")
        if h and n in FIX:
            text = open(os.path.join(tsrun.TTIR_DIR, FIX[n]["file"])).read()
            text = re.sub(r'"[^"]*?/triton/language/', '"<triton>/language/', text)
            if hashlib.sha256(text.encode()).hexdigest() != h:
                changed.append(n)
    assert not changed, f"fixtures changed since the GPU run (re-run tests/gpu/make_ground_truth.py): {changed}"


@pytest.mark.parametrize("name", _cases())
def test_matches_gpu(name, tmp_path):
    fx = FIX[name]
    inputs = {a["name"]: ARR[f"{name}/in/{a['name']}"] for a in fx["args"] if a["kind"] == "ptr"}
    # The inputs saved on the GPU machine must be the ones fixture_data makes here (same generator).
    for k, v in tsrun.fd.make_inputs(fx).items():
        assert v.tobytes() == inputs[k].tobytes(), f"input {k} differs from the GPU machine's"
    res = tsrun.run(fx, str(tmp_path), inputs=inputs)
    assert res.returncode == 0, res.describe()
    errors = []
    for a in fx["args"]:
        key = (name, a["name"])
        if a["kind"] != "ptr" or a["role"] == "in" or key in SKIP_OUT:
            continue
        gpu = ARR[f"{name}/out/{a['name']}"]
        got = res.outputs[a["name"]]
        tol = TOL.get(key, exact)
        dt = a["dtype"] if a["dtype"] in ("bf16", "f8e5", "f8e4nv") else None
        if isinstance(tol, dict):
            checks = [(f"[{r}]", got[r], ex.Exact(gpu[r], dt) if f is exact else f(gpu[r], inputs))
                      for r, f in tol.items()]
        else:
            chk = ex.Exact(gpu, dt) if tol is exact else tol(gpu, inputs)
            if key in MASKS:
                chk.where(MASKS[key](inputs))
            checks = [("", got, chk)]
        for suffix, g, chk in checks:
            try:
                chk.check(g, f"{name}.{a['name']}{suffix} vs GPU")
            except AssertionError as e:
                errors.append(str(e))
    assert not errors, "\n".join(errors)
