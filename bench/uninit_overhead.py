#!/usr/bin/env python3
"""Overhead of uninitialized-memory tracking (the `uninit` analysis), in one process.

    python3 bench/uninit_overhead.py [--repeat N]

Each workload launches the same kernel through `@tilescope.trace("sanitizer")` twice, with tracking
(the default) and with `uninit=False`, interleaved, median of N; inputs are host-written
(`torch.randn`, or `torch.empty` filled by `copy_`, so the first kernel read of each window compares
it with the sentinel) and outputs come from a fresh (wrapped, so tracked) `torch.empty` per launch on
both sides: the worst case, every store defines bits of a tracked allocation, and the difference is
the analysis alone. Then the cost of the wrapped `torch.empty` (tracking and the sentinel fill, which
touches every page) against the unwrapped function (which touches none), and `torch.zeros` for
comparison. Prints a Markdown table (README, "Uninitialized memory").
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
import triton
import triton.language as tl

import tilescope


def _add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def _softmax(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * cols + c, mask=c < cols, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * cols + c, e / tl.sum(e, axis=0), mask=c < cols)


def kernels(fn):
    on = tilescope.trace("sanitizer")(triton.jit(fn))
    off = tilescope.trace("sanitizer", uninit=False)(triton.jit(fn))
    return on, off


def timed(f, repeat):
    f()  # compile, warm up
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        out.append(time.perf_counter() - t0)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    add_on, add_off = kernels(_add)
    sm_on, sm_off = kernels(_softmax)
    n = 1 << 22
    x = torch.randn(n)
    y = torch.empty(n)
    y.copy_(torch.randn(n))  # host-written torch.empty memory: read through the window check
    rows, cols = 2048, 1024
    a = torch.randn(rows, cols)

    def add(k):
        return lambda: k[(triton.cdiv(n, 1024),)](x, y, torch.empty(n), n, BLOCK=1024)

    def softmax(k):
        return lambda: k[(rows,)](a, torch.empty(rows, cols), cols, BLOCK=cols)

    empty_raw = torch.empty.__wrapped__
    rows_out = []
    for name, on, off in (("vector_add 4M fp32", add(add_on), add(add_off)),
                          ("softmax 2048x1024 fp32", softmax(sm_on), softmax(sm_off)),
                          ("torch.empty(4M fp32)", lambda: torch.empty(n), lambda: empty_raw(n))):
        t_on, t_off = [], []
        for _ in range(args.repeat):  # interleaved
            t_off += timed(off, 1)
            t_on += timed(on, 1)
        m_on, m_off = statistics.median(t_on), statistics.median(t_off)
        rows_out.append((name, m_off * 1e3, m_on * 1e3, m_on / m_off))
    print("| workload | uninit off | uninit on | overhead |")
    print("| --- | ---: | ---: | ---: |")
    for name, off, on, r in rows_out:
        print(f"| {name} | {off:.2f} ms | {on:.2f} ms | {r:.2f}x |")
    zeros = statistics.median(timed(lambda: torch.zeros(n), args.repeat))
    print(f"\n(torch.zeros(4M fp32), for comparison: {zeros * 1e3:.2f} ms)")
    assert not [f for f in tilescope.findings() if f["kind"] == "uninitialized-read"], tilescope.findings()


if __name__ == "__main__":
    main()
