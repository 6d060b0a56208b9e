#!/usr/bin/env python3
"""NKI kernels on tilescope: each instruction's fixed cost and the tile throughput; run by `make bench-nki`.

    python3 bench/nki.py [--reps N] [--no-results]

1. Fixed cost: a kernel of 4096 `nisa.tensor_copy` instructions of one element each (specialized in
   Python, checked in C++, run under the default analyses), per instruction; against NumPy doing the same
   4096 one-element copies between arrays.
2. Throughput: a 2048 x 2048 x 2048 bfloat16 matmul as a tiled NKI kernel (128 x 128 stationary, 128 x 512
   moving, float32 accumulation in PSUM, a PSUM -> SBUF copy and a DMA out per output tile), against NumPy
   running the same op sequence (per output tile, the 16 tile products in float32, then the cast).
3. Attention: examples/nki_attention.py's flash attention kernel on one bfloat16 head of 2048 queries and
   keys, head dim 128 (16 x 16 tile pairs, up to 13 instructions each: two nc_matmul, a transpose, the running
   softmax), against NumPy running the same op sequence tile by tile (float32 matmuls and exponentials,
   the weights rounded to bfloat16).

Median of --reps runs after one warm-up. Writes the section between `<!-- bench-nki:begin -->` and
`<!-- bench-nki:end -->` of bench/RESULTS.md.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import ml_dtypes
import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import tilescope.nki as nki  # noqa: E402
import tilescope.nki.isa as nisa  # noqa: E402
import tilescope.nki.language as nl  # noqa: E402

BEGIN, END = "<!-- bench-nki:begin -->", "<!-- bench-nki:end -->"
COPIES = 4096
SIZE = 2048


@nki.jit
def copies_kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((1, COPIES), dtype=a.dtype, buffer=nl.sbuf)
    u = nl.ndarray((1, COPIES), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    for i in nl.affine_range(COPIES):
        nisa.tensor_copy(dst=u[:, i:i + 1], src=t[:, COPIES - 1 - i:COPIES - i])
    nisa.dma_copy(dst=out, src=u)
    return out


def copies_numpy(a):
    t = a.copy()
    u = np.empty_like(t)
    for i in range(COPIES):
        u[:, i:i + 1] = t[:, COPIES - 1 - i:COPIES - i]
    return u.copy()


@nki.jit
def matmul_kernel(a_t, b):
    K, M = a_t.shape
    N = b.shape[1]
    out = nl.ndarray((M, N), dtype=a_t.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // 128):
                ta = nl.ndarray((128, 128), dtype=a_t.dtype, buffer=nl.sbuf)
                tb = nl.ndarray((128, 512), dtype=b.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=ta, src=a_t[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                nisa.dma_copy(dst=tb, src=b[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                nisa.nc_matmul(dst=acc, stationary=ta, moving=tb)
            res = nl.ndarray((128, 512), dtype=a_t.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res, src=acc)
            nisa.dma_copy(dst=out[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], src=res)
    return out


def matmul_numpy(a_t, b):
    K, M = a_t.shape
    N = b.shape[1]
    out = np.empty((M, N), dtype=a_t.dtype)
    for m in range(M // 128):
        for n in range(N // 512):
            acc = np.zeros((128, 512), dtype=np.float32)
            for k in range(K // 128):
                ta = a_t[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128].astype(np.float32)
                tb = b[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512].astype(np.float32)
                acc += ta.T @ tb
            out[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512] = acc.astype(a_t.dtype)
    return out


def load_example(name):
    """examples/<name>.py, whose `import nki` is tilescope.nki here (as under `tilescope sanitize`)."""
    import importlib.util

    import tilescope.nki
    import tilescope.nki.isa
    import tilescope.nki.language

    sys.modules.update({"nki": tilescope.nki, "nki.language": tilescope.nki.language, "nki.isa": tilescope.nki.isa})
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "examples", name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def attention_numpy(q, k, v):
    """The op sequence of nki_attention's kernel (not causal) in NumPy, tile by tile."""
    heads, s, d = q.shape
    scale = np.float32(1.0 / np.sqrt(d))
    out = np.empty_like(q)
    for h in range(heads):
        kt = k[h].T.astype(np.float32)
        vt = v[h].astype(np.float32)
        for q0 in range(0, s, 128):
            qt = q[h, q0:q0 + 128].T.astype(np.float32)
            m = l = o = corr = None
            for k0 in range(0, k.shape[1], 128):
                sc = qt.T @ kt[:, k0:k0 + 128]
                m_new = sc.max(axis=1, keepdims=True)
                if m is not None:
                    m_new = np.maximum(m_new, m)
                    corr = np.exp((m - m_new) * scale)
                pf = np.exp(sc * scale + m_new * -scale)
                rowsum = pf.sum(axis=1, keepdims=True)
                pt = pf.astype(ml_dtypes.bfloat16).T.astype(np.float32)
                pv = pt.T @ vt[k0:k0 + 128]
                if m is None:
                    l, o = rowsum, pv
                else:
                    l, o = l * corr + rowsum, o * corr + pv
                m = m_new
            out[h, q0:q0 + 128] = (o * (np.float32(1) / l)).astype(q.dtype)
    return out


def timed(fn, *args, reps):
    fn(*args)
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        r = fn(*args)
        ts.append(time.perf_counter() - t)
    return statistics.median(ts), r


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-results", action="store_true")
    args = ap.parse_args(argv)
    import run as bench_run  # bench/run.py: the machine line

    t0 = time.time()
    a = np.arange(COPIES, dtype=np.float32).reshape(1, COPIES)
    t_copy, r = timed(copies_kernel, a, reps=args.reps)
    t_copy_np, r_np = timed(copies_numpy, a, reps=args.reps)
    assert np.array_equal(r, a[:, ::-1]) and np.array_equal(r_np, r)

    rng = np.random.default_rng(0)
    a_t = rng.standard_normal((SIZE, SIZE), dtype=np.float32).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((SIZE, SIZE), dtype=np.float32).astype(ml_dtypes.bfloat16)
    t_mm, r = timed(matmul_kernel, a_t, b, reps=args.reps)
    t_mm_np, r_np = timed(matmul_numpy, a_t, b, reps=args.reps)
    ref = a_t.astype(np.float64).T @ b.astype(np.float64)
    err = float(np.abs(r.astype(np.float64) - ref).max() / np.abs(ref).max())
    flops = 2.0 * SIZE ** 3

    attn = load_example("nki_attention")
    q, k, v = (rng.standard_normal((1, SIZE, 128), dtype=np.float32).astype(ml_dtypes.bfloat16) for _ in range(3))
    t_at, r = timed(attn.attention, q, k, v, reps=args.reps)
    t_at_np, r_np = timed(attention_numpy, q, k, v, reps=args.reps)
    assert attn.within_bound(r, q, k, v) and attn.within_bound(r_np, q, k, v)
    at_flops = 4.0 * SIZE * SIZE * 128
    pairs = (SIZE // 128) ** 2
    rows = [
        ("per instruction (tensor_copy, 1 element)", f"{t_copy / COPIES * 1e6:.1f} us", f"{t_copy_np / COPIES * 1e6:.2f} us",
         f"{t_copy / t_copy_np:.1f}x"),
        (f"{SIZE}^3 bf16 tiled matmul ({(SIZE // 128) ** 2 * (SIZE // 512)} nc_matmul)", f"{t_mm:.2f} s "
         f"({flops / t_mm / 1e9:.1f} GFLOP/s)", f"{t_mm_np:.2f} s ({flops / t_mm_np / 1e9:.1f} GFLOP/s)",
         f"{t_mm / t_mm_np:.1f}x"),
        (f"flash attention, 1 head, {SIZE} x {SIZE}, d = 128, bf16 ({pairs} tile pairs)",
         f"{t_at:.2f} s ({at_flops / t_at / 1e9:.1f} GFLOP/s)",
         f"{t_at_np:.2f} s ({at_flops / t_at_np / 1e9:.1f} GFLOP/s)", f"{t_at / t_at_np:.1f}x"),
    ]
    for row in rows:
        print("  ".join(row))
    print(f"matmul: max error {err:.2e} of the largest output (bf16 output rounding)")
    if not args.no_results:
        path = os.path.join(ROOT, "bench", "RESULTS.md")
        lines = [BEGIN, "## NKI kernels", "", "Written by `make bench-nki` (`bench/nki.py`); do not edit by hand.", "",
                 f"- Machine: {bench_run.machine()}; load average at the end (1/5/15 min): "
                 f"{' / '.join(f'{x:.1f}' for x in os.getloadavg())}.",
                 f"- Date: {time.strftime('%Y-%m-%d %H:%M')}; whole run {time.time() - t0:.0f} s; median of {args.reps} runs "
                 "after a warm-up. tilescope: the kernel specialized in Python, each instruction checked in C++, run "
                 "under the default analyses (sanitizer, races, uninitialized memory). NumPy: the same op sequence, "
                 "no checks.",
                 "", "| case | tilescope | NumPy, same op sequence | tilescope / NumPy |", "| --- | ---: | ---: | ---: |"]
        lines += [f"| {' | '.join(r)} |" for r in rows]
        lines += ["", f"The matmul's result is within {err:.1e} of float64's (relative to the largest output: bf16 "
                  "rounding of the output). The attention outputs of both are within nki_attention's documented "
                  "bound of float64's.", END]
        text = open(path).read() if os.path.exists(path) else ""
        block = "\n".join(lines)
        if BEGIN in text and END in text:
            text = text[:text.index(BEGIN)] + block + text[text.index(END) + len(END):]
        else:
            text = text.rstrip() + "\n\n" + block + "\n"
        with open(path, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
