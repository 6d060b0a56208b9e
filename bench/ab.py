#!/usr/bin/env python3
"""Compare two tilescope builds on `make bench`'s workloads: is a change slower?

    python3 bench/ab.py BASE_BIN NEW_BIN [--rounds N] [--threads T] [--only NAME ...] [--sanitizer]

Both binaries run the same TTIR (compiled once by Triton, no GPU) on the same .npy inputs
(bench/run.py's workloads), alternating A B B A ... so that drift in the machine's load hits both
alike. Each run is timed by the binary itself (`--time`: the launch only). Prints, per workload, the
median and the minimum of each side and the ratio NEW/BASE of both (below 1.00 = faster); the minimum
is the steadier number on a shared machine. The two builds' outputs must be bit-identical (exit 1
otherwise). Without `--sanitizer` both run `--no-poison --no-races` (the plain
engine); with it, the full sanitizer (with the race detector). Nothing is written to bench/RESULTS.md: record what matters in
the change's notes (machine, load, rounds).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as bench  # noqa: E402  (bench/run.py: workloads, inputs, one timed run)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("base")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=8, help="runs of each binary per workload")
    ap.add_argument("--threads", type=int, default=0, help="--threads for both (0: the default, all cores)")
    ap.add_argument("--only", nargs="*", help="workloads to run (default: all)")
    ap.add_argument("--sanitizer", action="store_true", help="time the full sanitizer, not --no-poison")
    args = ap.parse_args(argv)
    for b in (args.base, args.new):
        if not os.access(b, os.X_OK):
            ap.error(f"{b}: not an executable")
    import numpy as np

    extra = [] if args.sanitizer else ["--no-poison", "--no-races"]
    if args.threads:
        extra += ["--threads", str(args.threads)]
    names = args.only or list(bench.WORKLOADS)
    with tempfile.TemporaryDirectory(prefix="tilescope-ab-") as tmp:
        env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "run.py"),
                        "--emit-ttir", tmp], check=True, env=env)
        rng = np.random.default_rng(0)
        print(f"{'workload':<14} {'base median':>12} {'new median':>12} {'ratio':>6}   "
              f"{'base min':>10} {'new min':>10} {'ratio':>6}")
        for name in names:
            w = bench.WORKLOADS[name]
            arrs = bench.make_inputs(w, rng)
            ttir = os.path.join(tmp, f"{name}.ttir")
            t = {args.base: [], args.new: []}
            first = {}
            for r in range(args.rounds):
                order = (args.base, args.new) if r % 2 == 0 else (args.new, args.base)
                for b in order:
                    times, _, outs = bench.run_tilescope(b, ttir, w, arrs, tmp, 1, extra)
                    t[b] += times
                    first.setdefault(b, outs)
            for k in first[args.base]:  # a faster wrong answer is no answer
                if not np.array_equal(first[args.base][k], first[args.new][k], equal_nan=True):
                    print(f"{name}: the outputs of the two builds differ ({k})", file=sys.stderr)
                    return 1
            mb, mn = statistics.median(t[args.base]), statistics.median(t[args.new])
            lb, ln = min(t[args.base]), min(t[args.new])
            print(f"{name:<14} {mb * 1e3:>9.2f} ms {mn * 1e3:>9.2f} ms {mn / mb:>6.3f}   "
                  f"{lb * 1e3:>7.2f} ms {ln * 1e3:>7.2f} ms {ln / lb:>6.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
