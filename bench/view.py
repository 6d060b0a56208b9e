#!/usr/bin/env python3
"""How fast the web visualizer answers on a large trace (`make bench-view`; issue 12, item 4).

    python3 bench/view.py [--programs 8192] [--grid 65536] [--md bench/VIEW.md]

Records a trace of a row-sum kernel whose every program loads its row in 128 tiles (8192 programs: about
a million recorded accesses, a 200 MB trace), serves it with `tilescope view`, then measures:

- the API (medians of repeated requests over HTTP): the first view's calls, one program's accesses,
  per-element counts of a 33-million-element argument, the accesses that touched one element;
- the page in Debian's Chromium (web/tests/timing.mjs): navigation to the first complete view, and
  switching programs (arrow key) and ops (`j`), each until the page shows the new selection.

Then a large grid: the same kernel on --grid programs (65536) of one 128-column row each (4 tiles), and the
page's program and op switches on it. Aims (the issue): first view under 1 s, a switch under 100 ms.
Writes bench/VIEW.md with the machine. TILESCOPE_WEB_DIR (a built web/dist) measures another front end.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
TILESCOPE = os.environ.get("TILESCOPE_BIN") or os.path.join(ROOT, "build", "tilescope")

KERNEL = textwrap.dedent("""\
    import sys
    import torch, triton, triton.language as tl

    @triton.jit
    def row_sum(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        for k in range(0, n_cols, BLOCK):
            cols = k + tl.arange(0, BLOCK)
            acc += tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
        tl.store(out_ptr + row, tl.sum(acc, axis=0))

    rows = int(sys.argv[1])
    x = torch.randn(rows, int(sys.argv[2]) if len(sys.argv) > 2 else 128 * 32)
    out = torch.empty(rows)
    row_sum[(rows,)](x, out, x.shape[1], BLOCK=32)
    assert torch.allclose(out, x.sum(1), atol=1e-3)
""")


def timed_get(port: int, token: str, path: str, repeat: int) -> tuple[float, int]:
    times, size = [], 0
    for _ in range(repeat):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        t = time.perf_counter()
        c.request("GET", path, headers={"Host": f"127.0.0.1:{port}", "Authorization": f"Bearer {token}"})
        r = c.getresponse()
        body = r.read()
        times.append(time.perf_counter() - t)
        assert r.status == 200, (path, body[:200])
        size = len(body)
        c.close()
    return statistics.median(times) * 1000, size


def timing(url: str) -> dict:
    node = subprocess.run(["node", os.path.join(ROOT, "web", "tests", "timing.mjs"), url, "10"],
                          capture_output=True, text=True, timeout=600, cwd=os.path.join(ROOT, "web"))
    assert node.returncode == 0, node.stderr
    return json.loads(node.stdout)


def page_timing(trace: str) -> dict:
    """`tilescope view TRACE` measured in the browser (timing.mjs)."""
    view = subprocess.Popen([TILESCOPE, "view", trace], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        m = None
        for _ in range(5):
            m = re.search(r"(http://127\.0\.0\.1:\d+/\?token=[0-9a-f]{64})", view.stdout.readline())
            if m:
                break
        assert m, view.stderr.read()
        return timing(m.group(1))
    finally:
        view.send_signal(2)
        view.wait(timeout=10)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--programs", type=int, default=8192)
    ap.add_argument("--grid", type=int, default=65536, help="programs of the large-grid trace (0: skip it)")
    ap.add_argument("--md", default=os.path.join(ROOT, "bench", "VIEW.md"))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        prog = os.path.join(d, "row_sum.py")
        with open(prog, "w") as f:
            f.write(KERNEL)
        trace = os.path.join(d, "big.tstrace")
        t = time.perf_counter()
        subprocess.run([TILESCOPE, "trace", "-o", trace, "--", sys.executable, prog, str(a.programs)], check=True,
                       capture_output=True, timeout=1800)
        record_s = time.perf_counter() - t
        import sqlite3
        con = sqlite3.connect(f"file:{trace}?mode=ro", uri=True)
        accesses = con.execute("SELECT count(*) FROM accesses").fetchone()[0]
        con.close()
        size_mb = os.path.getsize(trace) / 2**20
        view = subprocess.Popen([TILESCOPE, "view", trace], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            m = None
            for _ in range(5):
                m = re.search(r"(http://127\.0\.0\.1:(\d+)/\?token=([0-9a-f]{64}))", view.stdout.readline())
                if m:
                    break
            assert m, view.stderr.read()
            url, port, token = m.group(1), int(m.group(2)), m.group(3)
            api = []
            for label, path, repeat in [
                ("session", "/api/session", 5),
                ("launches", "/api/launches", 5),
                ("one launch (args, sites, findings)", "/api/launches/1", 5),
                ("programs (findings per program)", "/api/launches/1/programs", 5),
                ("one program's accesses (129 rows)", f"/api/launches/1/programs/{a.programs // 2}/0/0", 9),
                ("per-element counts, 33M elements (runs)", "/api/launches/1/args/0/counts", 3),
                ("bytes per program (decodes every access)", "/api/launches/1/programs?bytes=1", 3),
                ("accesses that touched one element", "/api/launches/1/args/0/elements/123456", 3),
            ]:
                ms, size = timed_get(port, token, path, repeat)
                api.append((label, path, ms, size))
            page = timing(url)
            rss_mb = int(open(f"/proc/{view.pid}/status").read().split("VmRSS:")[1].split()[0]) / 1024
        finally:
            view.send_signal(2)
            view.wait(timeout=10)
        grid_page = None
        if a.grid:
            trace2 = os.path.join(d, "grid.tstrace")
            subprocess.run([TILESCOPE, "trace", "-o", trace2, "--", sys.executable, prog, str(a.grid), "128"],
                           check=True, capture_output=True, timeout=1800)
            grid_page = page_timing(trace2)
    med = statistics.median
    lines = [
        "# The web visualizer on a large trace",
        "",
        "Written by `make bench-view` (`bench/view.py`): a trace of a row-sum kernel "
        f"({a.programs} programs, each loading its row of 4096 floats in 128 tiles), served by `tilescope view` "
        "and measured over HTTP and in Debian's Chromium (headless, Playwright).",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}; "
        f"{time.strftime('%Y-%m-%d')}. Trace: {accesses:,} recorded accesses, {size_mb:.0f} MiB, recorded in "
        f"{record_s:.1f} s. Server memory after the run: {rss_mb:.0f} MiB resident.",
        "",
        "| request | route | median (ms) | bytes |",
        "| --- | --- | ---: | ---: |",
    ] + [f"| {label} | `{path}` | {ms:.1f} | {size:,} |" for label, path, ms, size in api] + [
        "",
        "| in the browser | median (ms) | max (ms) | aim |",
        "| --- | ---: | ---: | --- |",
        f"| first view (navigation to the first finding's op drawn) | {page['first_view_ms']} | "
        f"{page['first_view_ms']} | under 1000 |",
        f"| switch program (arrow key) | {med(page['program_switch_ms'])} | {max(page['program_switch_ms'])} | "
        "under 100 |",
        f"| switch op (`j`) | {med(page['op_switch_ms'])} | {max(page['op_switch_ms'])} | under 100 |",
        "",
    ]
    if grid_page:
        lines += [
            f"A grid of {a.grid} programs (one 128-column row each: 4 loads and a store; every program's detail "
            "recorded), in the same browser:",
            "",
            "| in the browser | median (ms) | max (ms) | aim |",
            "| --- | ---: | ---: | --- |",
            f"| first view | {grid_page['first_view_ms']} | {grid_page['first_view_ms']} | under 1000 |",
            f"| switch program (arrow key) | {med(grid_page['program_switch_ms'])} | "
            f"{max(grid_page['program_switch_ms'])} | under 100 |",
            f"| switch op (`j`) | {med(grid_page['op_switch_ms'])} | {max(grid_page['op_switch_ms'])} | under 100 |",
            "",
        ]
    with open(a.md, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
