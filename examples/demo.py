"""`make demo`: run Triton-made TTIR on the CPU with `tilescope run` and check it against numpy.

Each step prints the command it runs, then what tilescope reported and whether the outputs match
numpy. The last steps show what a buggy launch and an op the CPU cannot run look like.
"""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
TTIR = ROOT / "tests" / "ttir"
BIN = os.environ.get("TILESCOPE_BIN", str(ROOT / "build" / "tilescope"))


def run(args: list[str]) -> subprocess.CompletedProcess:
    shown = " ".join(shlex.quote(a) for a in ["tilescope"] + args[1:])
    print(f"\n$ {shown}")
    p = subprocess.run(args, capture_output=True, text=True)
    for line in (p.stdout + p.stderr).strip().splitlines():
        print(f"  {line}")
    print(f"  (exit status {p.returncode})")
    return p


def check(name: str, got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> bool:
    ok = np.allclose(got, want, rtol=rtol, atol=atol)
    err = float(np.max(np.abs(got.astype(np.float64) - want)))
    print(f"  {name}: {'matches numpy' if ok else 'DOES NOT MATCH numpy'} (max abs error {err:.3g})")
    return ok


def main() -> int:
    rng = np.random.default_rng(0)
    ok = True
    with tempfile.TemporaryDirectory() as d:
        t = Path(d)
        # 1. vector add, 4096 elements, 32 programs of 128 lanes
        x, y = rng.standard_normal(4096, np.float32), rng.standard_normal(4096, np.float32)
        np.save(t / "x.npy", x)
        np.save(t / "y.npy", y)
        p = run([BIN, "run", str(TTIR / "add.ttir"), "--grid", "32", "--arg", f"x_ptr={t/'x.npy'}",
                 "--arg", f"y_ptr={t/'y.npy'}", "--arg", "out_ptr=f32[4096]:zeros", "--arg", "n=i32:4096",
                 "--save", f"out_ptr={t/'out.npy'}", "--time"])
        ok &= p.returncode == 0 and check("add", np.load(t / "out.npy"), x + y, 0, 0)

        # 2. row softmax, 64 rows of 100
        xs = (rng.standard_normal((64, 100)) * 3).astype(np.float32)
        np.save(t / "xs.npy", xs)
        p = run([BIN, "run", str(TTIR / "softmax.ttir"), "--grid", "64", "--arg", f"x_ptr={t/'xs.npy'}",
                 "--arg", "y_ptr=f32[64x100]:zeros", "--arg", "n_cols=i32:100", "--arg", "stride=i32:100",
                 "--save", f"y_ptr={t/'ys.npy'}"])
        e = np.exp(xs - xs.max(axis=1, keepdims=True))
        ok &= p.returncode == 0 and check("softmax", np.load(t / "ys.npy"), e / e.sum(axis=1, keepdims=True),
                                          1e-5, 1e-6)

        # 3. matmul, fp16 inputs, fp32 accumulate, 2x2 programs of 32x32 tiles with a K loop
        a = rng.standard_normal((64, 80)).astype(np.float16)
        b = rng.standard_normal((80, 48)).astype(np.float16)
        np.save(t / "a.npy", a)
        np.save(t / "b.npy", b)
        strides = ["M=i32:64", "N=i32:48", "K=i32:80", "sam=i32:80", "sak=i32:1", "sbk=i32:48", "sbn=i32:1",
                   "scm=i32:48", "scn=i32:1"]
        p = run([BIN, "run", str(TTIR / "matmul_f16.ttir"), "--grid", "2,2", "--arg", f"a_ptr={t/'a.npy'}",
                 "--arg", f"b_ptr={t/'b.npy'}", "--arg", "c_ptr=f32[64x48]:zeros",
                 *[x for s in strides for x in ("--arg", s)], "--save", f"c_ptr={t/'c.npy'}"])
        ok &= p.returncode == 0 and check("matmul", np.load(t / "c.npy"),
                                          a.astype(np.float64) @ b.astype(np.float64), 1e-4, 1e-4)

        # 4. a buggy launch: n says 4200 but the buffers hold 4096, and the grid covers 4224
        print("\nA buggy launch: n=4200 for 4096-element buffers. tilescope reports each access site with")
        print("its TTIR and Python locations; nothing outside the buffers is read or written.")
        p = run([BIN, "run", str(TTIR / "add.ttir"), "--grid", "33", "--arg", f"x_ptr={t/'x.npy'}",
                 "--arg", f"y_ptr={t/'y.npy'}", "--arg", "out_ptr=f32[4096]:zeros", "--arg", "n=i32:4200"])
        ok &= p.returncode == 1 and "out-of-bounds" in p.stderr

        # 5. an op that cannot run on a CPU: a clear, located error
        print("\nInline PTX cannot run on a CPU: a located error, not a crash.")
        p = run([BIN, "run", str(TTIR / "inline_asm.ttir"), "--arg", "x_ptr=i32[32]:arange",
                 "--arg", "y_ptr=i32[32]:zeros"])
        ok &= p.returncode == 2 and "unsupported op" in p.stderr
    print("\ndemo:", "all steps behaved as expected" if ok else "SOMETHING WENT WRONG")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
