"""The trace: `tilescope trace -- python prog.py` records every launch of every process into one file;
`tilescope.load_trace` reads it back; `tilescope show` summarizes it; `tilescope replay` runs a launch
again from the file alone and `--save-inputs` writes it as a `tilescope run` reproducer.

Expected values come from the program's own data (saved with numpy by the traced program) and from
the kernel's source: offsets and mask counts of a masked vector add computed with numpy, lines found
by marker comments.
"""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tilescope

N, BLOCK = 1000, 256
GRID = (N + BLOCK - 1) // BLOCK

PROGRAM = """
import subprocess, sys
import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)  # MARK-x-load
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)  # MARK-store


@triton.jit
def shift_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs + 1, mask=mask)  # MARK-bug: reads x[n] in the last program
    tl.store(out_ptr + offs, x, mask=mask)


if __name__ == "__main__":
    torch.manual_seed(0)
    n, BLOCK = {N}, {BLOCK}
    x, y = torch.randn(n), torch.randn(n)
    out = torch.zeros(n)
    np.save("x.npy", x.numpy())
    np.save("y.npy", y.numpy())
    add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
    assert torch.equal(out, x + y)
    z = torch.zeros(n)
    shift_kernel[(triton.cdiv(n, BLOCK),)](x, z, n, BLOCK=BLOCK)
    if "--child" not in sys.argv:
        # A second process of the run: its launch goes into the same trace.
        subprocess.run([sys.executable, __file__, "--child"], check=True)
""".replace("{N}", str(N)).replace("{BLOCK}", str(BLOCK))


def line_of(marker: str, text: str) -> int:
    hits = [i + 1 for i, line in enumerate(text.splitlines()) if marker in line]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def tilescope_cli(args, cwd, **kw):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TILESCOPE") or k == "TILESCOPE_BIN"}
    return subprocess.run([sys.executable, "-m", "tilescope"] + args, cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600, **kw)


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    d = tmp_path_factory.mktemp("trace")
    prog = d / "prog.py"
    prog.write_text(PROGRAM)
    p = tilescope_cli(["trace", "--color", "never", "-o", "run.tstrace", "--", sys.executable, str(prog)], d)
    assert p.returncode == 1, p.stderr  # the shift kernel's out-of-bounds read
    assert "trace of 4 launch(es) written to run.tstrace" in p.stderr, p.stderr
    return d, str(prog), tilescope.load_trace(d / "run.tstrace")


def test_every_launch_of_every_process_is_recorded(traced):
    d, prog, t = traced
    # The parent's two launches, then the child's (each process commits its own launches in order).
    assert [launch["name"] for launch in t.launches] == ["add_kernel", "shift_kernel"] * 2
    assert len({launch["process"] for launch in t.launches}) == 2
    assert t.launches[0]["process"] != t.launches[2]["process"]
    assert t.launches[0]["grid"] == (GRID, 1, 1) and t.launches[0]["programs"] == GRID
    rec = t.launches[0]["record"]
    assert [a["name"] for a in rec["args"]] == ["x_ptr", "y_ptr", "out_ptr", "n"]
    assert rec["args"][0]["dtype"] == "f32" and rec["args"][0]["shape"] == [N]
    assert rec["specialization"]["constexprs"]["BLOCK"] == str(BLOCK)
    assert any(frame.startswith(prog + ":") for frame in rec["stack"]), rec["stack"]
    assert t.launches[0]["started"] <= t.launches[0]["ended"]
    assert t.sources[prog] == open(prog).read()
    assert t.launches[0]["dropped"] == {} and t.launches[0]["detail_stride"] == 1
    # Every program's wall time, by linear id: GRID programs, each of which ran.
    for launch in t.launches:
        ns = t.program_ns(launch["id"])
        assert ns is not None and len(ns) == GRID and (ns > 0).all(), (launch["id"], ns)


def test_accesses_of_a_masked_vector_add(traced):
    d, prog, t = traced
    text = open(prog).read()
    sites = t.sites[t.launches[0]["kernel"]]
    x_load = [s["site"] for s in sites if s["op"] == "tt.load" and s["line"] == line_of("MARK-x-load", text)]
    store = [s["site"] for s in sites if s["op"] == "tt.store" and s["line"] == line_of("MARK-store", text)]
    assert len(x_load) == 1 and len(store) == 1
    assert sites[x_load[0]]["file"] == prog and sites[x_load[0]]["var"] == "x"
    a = t.accesses
    offs = np.arange(GRID * BLOCK)
    mask = offs < N
    for site, kind, arg in ((x_load[0], "load", 0), (store[0], "store", 2)):
        rows = np.nonzero((a["launch"] == 1) & (a["site"] == site))[0]
        assert len(rows) == GRID
        for r in rows:
            p = a["pid"][r][0]
            lane_offs, lane_mask = offs[p * BLOCK:(p + 1) * BLOCK], mask[p * BLOCK:(p + 1) * BLOCK]
            assert a["kind"][r] == kind and a["arg"][r] == arg
            assert a["lanes"][r] == BLOCK and a["active"][r] == lane_mask.sum() and a["oob"][r] == 0
            assert np.array_equal(t.offsets(r), lane_offs[lane_mask])
    loads, stores = t.element_counts(1, 0)
    assert np.array_equal(loads, np.ones(N)) and not stores.any()
    loads, stores = t.element_counts(1, 2)
    assert np.array_equal(stores, np.ones(N)) and not loads.any()
    stats = t.site_stats
    i = np.nonzero((stats["launch"] == 1) & (stats["site"] == x_load[0]))[0][0]
    assert stats["executions"][i] == GRID and stats["active"][i] == N and stats["bytes"][i] == 4 * N


def test_contents_before_and_after(traced):
    d, prog, t = traced
    x, y = np.load(d / "x.npy"), np.load(d / "y.npy")
    assert np.array_equal(t.contents(1, 0, "before"), x)
    assert not t.contents(1, 2, "before").any()
    assert np.array_equal(t.contents(1, 2, "after"), x + y)
    # The inputs were not stored into: their after rows say unchanged and read as the before bytes.
    assert np.array_equal(t.contents(1, 0, "after"), x) and np.array_equal(t.contents(1, 1, "after"), y)
    unchanged = dict(t.connection.execute("SELECT arg, unchanged FROM contents WHERE launch = 1 AND phase = 'after'"))
    assert unchanged == {0: 1, 1: 1, 2: 0}
    # out was zeros: stored as one byte repeated (its period), read back whole.
    assert t.connection.execute("SELECT c.period, c.chunks, length(k.data) FROM contents c JOIN content_chunks k "
                                "USING (launch, arg, phase) WHERE launch = 1 AND arg = 2 AND phase = 'before'"
                                ).fetchone() == (1, 1, 1)
    assert t.contents(1, 2, "before").shape == x.shape


def test_findings_are_the_reports(traced):
    d, prog, t = traced
    text = open(prog).read()
    found = [(f["launch"], f["kind"], f["line"]) for f in t.findings]
    bug = line_of("MARK-bug", text)
    assert found == [(2, "out-of-bounds-load", bug), (4, "out-of-bounds-load", bug)]
    f = t.findings[0]
    assert f["lanes"]["count"] == 1 and f["offsets"]["min"] == N
    # The access rows agree: the last program's load has one lane out of bounds, at element N of x.
    a = t.accesses
    rows = [r for r in range(len(a["launch"])) if a["launch"][r] == 2 and a["oob"][r]]
    assert len(rows) == 1 and a["pid"][rows[0]][0] == GRID - 1 and a["oob"][rows[0]] == 1
    assert t.offsets(rows[0], oob=True).tolist() == [N]
    assert t.launches[1]["findings"][0] == {k: v for k, v in f.items() if k != "launch"}


def test_show_summarizes(traced):
    d, prog, t = traced
    p = tilescope_cli(["show", "run.tstrace"], d)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "4 launch(es) in 2 process(es)" in out, out
    assert "add_kernel  2 launch(es)" in out and "shift_kernel  2 launch(es)" in out, out
    assert "findings: " in out and "out-of-bounds" in out, out
    # Bytes per line over the two processes: the add's two loads and its store move 4 * N per launch,
    # the shift's store too, the shift's load 4 * (N - 1) in bounds (its last lane reads past x).
    top = [line.split() for line in out.split("top lines by bytes")[1].splitlines()[2:] if line.strip()]
    assert [int(row[0]) for row in top] == [8 * N] * 4 + [8 * (N - 1)], out
    text = open(prog).read()
    assert top[4][3] == f"{prog}:{line_of('MARK-bug', text)}", out
    assert top[0][3] == f"{prog}:{line_of('MARK-x-load', text)}" and "tl.load(x_ptr + offs, mask=mask)" in out


def test_replay_gives_the_recorded_findings(traced, tmp_path):
    d, prog, t = traced
    js = tmp_path / "replay.json"
    p = tilescope_cli(["replay", str(d / "run.tstrace"), "--launch", "2", "--json", str(js), "--color", "never"], d)
    assert p.returncode == 1, p.stderr
    assert "the same findings as recorded" in p.stderr, p.stderr
    replayed = json.loads(js.read_text())
    assert [(f["kind"], f["line"], f["lanes"]["count"], f["offsets"]["min"]) for f in replayed] == \
        [(f["kind"], f["line"], f["lanes"]["count"], f["offsets"]["min"]) for f in t.launches[1]["findings"]]
    p = tilescope_cli(["replay", str(d / "run.tstrace"), "--launch", "1"], d)
    assert p.returncode == 0 and "no findings; the same findings as recorded" in p.stderr, p.stderr
    p = tilescope_cli(["replay", str(d / "run.tstrace"), "--launch", "9"], d)
    assert p.returncode == 2 and "no launch 9 (the trace has launches 1 to 4)" in p.stderr, p.stderr


def test_save_inputs_runs_under_tilescope_run(traced, tmp_path):
    d, prog, t = traced
    out = tmp_path / "repro"
    p = tilescope_cli(["replay", str(d / "run.tstrace"), "--launch", "1", "--save-inputs", str(out)], d)
    assert p.returncode == 0, p.stderr
    assert sorted(os.listdir(out)) == ["add_kernel.ttir", "out_ptr.npy", "run.sh", "x_ptr.npy", "y_ptr.npy"]
    assert np.array_equal(np.load(out / "x_ptr.npy"), np.load(d / "x.npy"))
    env = dict(os.environ, TILESCOPE_BIN=os.environ.get("TILESCOPE_BIN") or _installed_bin())
    # Run from another directory: run.sh finds its own files, and a relative --save path is the caller's.
    r = subprocess.run(["sh", str(out / "run.sh"), "--save", "out_ptr=sum.npy"], env=env, capture_output=True,
                       text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert not (out / "sum.npy").exists()
    assert np.array_equal(np.load(tmp_path / "sum.npy"), np.load(d / "x.npy") + np.load(d / "y.npy"))
    # The buggy launch's reproducer finds the same out-of-bounds read.
    out2 = tmp_path / "repro2"
    p = tilescope_cli(["replay", str(d / "run.tstrace"), "--launch", "2", "--save-inputs", str(out2)], d)
    js = tmp_path / "run.json"
    r = subprocess.run(["sh", str(out2 / "run.sh"), "--json", str(js)], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 1, r.stderr
    assert [(f["kind"], f["line"], f["lanes"]["count"]) for f in json.loads(js.read_text())] == \
        [(f["kind"], f["line"], f["lanes"]["count"]) for f in t.launches[1]["findings"]]


def _installed_bin() -> str:
    from tilescope.__main__ import binary

    return binary()


def test_budget_drops_inputs_and_replay_says_so(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    p = tilescope_cli(["sanitize", "--trace", "small.tstrace", "--trace-budget", "2K", "--", sys.executable,
                       str(prog), "--child"], tmp_path)
    assert p.returncode == 1, p.stderr
    t = tilescope.load_trace(tmp_path / "small.tstrace")
    assert t.launches[0]["dropped"]["contents_before"] == ["x_ptr", "y_ptr", "out_ptr"]
    assert t.contents(1, 0, "before") is None
    p = tilescope_cli(["replay", "small.tstrace", "--launch", "1"], tmp_path)
    assert p.returncode == 2
    assert "the contents of argument 'x_ptr' before the launch are not in the trace" in p.stderr, p.stderr
    # A budget under 1 MiB is shown in KiB; 0 is a budget (only what every launch writes); a negative
    # size is an error.
    assert "of 2.0 KiB of budget used" in tilescope_cli(["show", "small.tstrace"], tmp_path).stdout
    p = tilescope_cli(["sanitize", "--trace", "zero.tstrace", "--trace-budget", "0", "--", sys.executable,
                       str(prog), "--child"], tmp_path)
    t = tilescope.load_trace(tmp_path / "zero.tstrace")
    assert t.meta["budget"] == "0" and t.launches[0]["detail_stride"] == 0 and len(t.launches) == 2
    # Nor the programs' times (8 bytes a program: GRID of them).
    assert t.program_ns(1) is None and t.launches[0]["dropped"]["program_times"] >= 8 * GRID
    p = tilescope_cli(["sanitize", "--trace", "neg.tstrace", "--trace-budget", "-5", "--", "true"], tmp_path)
    assert p.returncode == 2 and "'-5' is not a size" in p.stderr, p.stderr
    p = tilescope_cli(["sanitize", "--trace", str(tmp_path), "--", "true"], tmp_path)
    assert p.returncode == 2 and "is a directory, not a trace file" in p.stderr, p.stderr


def test_reader_errors_say_what_is_wrong(traced, tmp_path):
    d, prog, t = traced
    with pytest.raises(ValueError, match="the phase is 'before' or 'after'"):
        t.contents(1, 0, "during")
    with pytest.raises(KeyError, match="no launch 99"):
        t.contents(99, 0)
    with pytest.raises(KeyError, match="has no buffer argument 3"):  # n, a scalar
        t.contents(1, 3)
    import numpy as np
    assert np.array_equal(t.contents(np.int64(1), np.int64(0)), t.contents(1, 0))
    # Garbage over the meta table's page: TraceError, not sqlite3's own exception.
    raw = bytearray((d / "run.tstrace").read_bytes())
    page = 32768  # page 2 (32 KiB pages): the first table after sqlite_master
    raw[page:page + 64] = b"\xff" * 64
    (tmp_path / "bad.tstrace").write_bytes(bytes(raw))
    with pytest.raises(tilescope.TraceError, match="truncated or corrupted"):
        tilescope.load_trace(tmp_path / "bad.tstrace")
    # A version that is not all digits is refused by both readers alike.
    v = tmp_path / "v.tstrace"
    v.write_bytes((d / "run.tstrace").read_bytes())
    con = sqlite3.connect(v)
    con.execute("UPDATE meta SET value = '2.0' WHERE key = 'version'")
    con.commit()
    con.close()
    with pytest.raises(tilescope.TraceError, match="unknown trace format version '2.0'"):
        tilescope.load_trace(v)
    p = tilescope_cli(["show", str(v)], tmp_path)
    assert p.returncode == 2 and "unknown trace format version '2.0'" in p.stderr, p.stderr


def test_bad_files_are_clear_errors(tmp_path):
    bad = tmp_path / "notes.tstrace"
    bad.write_text("not a trace\n")
    with pytest.raises(tilescope.TraceError, match="notes.tstrace: not a tilescope trace"):
        tilescope.load_trace(bad)
    p = tilescope_cli(["show", str(bad)], tmp_path)
    assert p.returncode == 2 and "not a tilescope trace (not an SQLite database)" in p.stderr, p.stderr
    newer = tmp_path / "newer.tstrace"
    con = sqlite3.connect(newer)
    con.executescript("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
                      "INSERT INTO meta VALUES ('format', 'tilescope-trace'), ('version', '99');")
    con.close()
    with pytest.raises(tilescope.TraceError, match="version 99 is newer than this tilescope reads"):
        tilescope.load_trace(newer)
    p = tilescope_cli(["show", str(newer)], tmp_path)
    assert p.returncode == 2 and "version 99 is newer" in p.stderr, p.stderr


def test_a_killed_process_keeps_its_committed_launches(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM.replace('    if "--child" not in sys.argv:',
                                    '    import os, signal\n    os.kill(os.getpid(), signal.SIGKILL)\n'
                                    '    if "--child" not in sys.argv:'))
    p = tilescope_cli(["trace", "-o", "killed.tstrace", "--", sys.executable, str(prog)], tmp_path)
    assert p.returncode == 128 + 9, p.stderr
    t = tilescope.load_trace(tmp_path / "killed.tstrace")  # a valid file (the integrity check runs)
    assert [launch["name"] for launch in t.launches] == ["add_kernel", "shift_kernel"]
    assert [f["launch"] for f in t.findings] == [2]


ALIASING = """
import torch
import triton
import triton.language as tl


@triton.jit
def shift_left(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs + 1, mask=offs + 1 < n)
    tl.store(out_ptr + offs, x, mask=offs + 1 < n)  # MARK-race: with out = x, program p writes what p - 1 reads


x = torch.arange(256, dtype=torch.float32)
shift_left[(4,)](x, x, 256, BLOCK=64)
"""


def test_replay_rebuilds_arguments_that_alias(tmp_path):
    prog = tmp_path / "alias.py"
    prog.write_text(ALIASING)
    p = tilescope_cli(["trace", "-o", "alias.tstrace", "--", sys.executable, str(prog)], tmp_path)
    t = tilescope.load_trace(tmp_path / "alias.tstrace")
    assert [f["kind"] for f in t.findings] == ["data-race"], p.stderr
    p = tilescope_cli(["replay", "alias.tstrace", "--launch", "1"], tmp_path)
    assert p.returncode == 1 and "the same findings as recorded" in p.stderr, p.stderr


def test_run_records_one_launch(tmp_path):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    x = np.arange(300, dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    r = subprocess.run([_installed_bin() if not os.environ.get("TILESCOPE_BIN") else os.environ["TILESCOPE_BIN"],
                        "run", os.path.join(root, "tests", "ttir", "add_tail.ttir"), "--grid", "3",
                        "--arg", "x_ptr=x.npy", "--arg", "y_ptr=f32[300]:ones", "--arg", "out_ptr=f32[300]:zeros",
                        "--arg", "n=i32:300", "--trace", "one.tstrace"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    t = tilescope.load_trace(tmp_path / "one.tstrace")
    assert len(t.launches) == 1 and t.launches[0]["programs"] == 3
    assert np.array_equal(t.contents(1, 0, "before"), x)
    assert np.array_equal(t.contents(1, 2, "after"), x + 1)


def test_profile_traces_say_the_sanitizer_was_off_and_replay_takes_max_steps(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    p = tilescope_cli(["profile", "--trace", "p.tstrace", "--", sys.executable, str(prog), "--child"], tmp_path)
    assert p.returncode == 0, p.stderr
    shown = tilescope_cli(["show", "p.tstrace"], tmp_path).stdout
    assert shown.count("no findings, sanitizer off (analyses: profile)") == 2, shown
    # Replay bounds each program as `tilescope run --max-steps` does.
    loop = tmp_path / "loop.py"
    loop.write_text(
        "import torch, triton, triton.language as tl\n"
        "@triton.jit\n"
        "def count(out_ptr, n):\n"
        "    acc = 0\n"
        "    for i in range(n):\n"
        "        acc += i\n"
        "    tl.store(out_ptr, acc)\n"
        "out = torch.zeros(1, dtype=torch.int32)\n"
        "count[(1,)](out, 1000)\n"
        "assert out.item() == sum(range(1000))\n")
    p = tilescope_cli(["trace", "-o", "loop.tstrace", "--", sys.executable, str(loop)], tmp_path)
    assert p.returncode == 0, p.stderr
    assert tilescope_cli(["replay", "loop.tstrace", "--launch", "1"], tmp_path).returncode == 0
    p = tilescope_cli(["replay", "loop.tstrace", "--launch", "1", "--max-steps", "100"], tmp_path)
    assert p.returncode == 2 and "the limit is 100 per program" in p.stderr, p.stderr


EXITING = """
import os, subprocess, sys
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)


x = torch.randn(100)
out = torch.empty(100)
if "--child" in sys.argv:
    for _ in range(3):
        add_kernel[(1,)](x, out, 100, BLOCK=128)
    sys.stdout.flush()
    os._exit(0)  # as multiprocessing's workers leave: no atexit hooks, so no report at exit
add_kernel[(1,)](x, out, 100, BLOCK=128)
subprocess.run([sys.executable, __file__, "--child"], check=True)
"""


@pytest.mark.parametrize("traced_run", [True, False])
def test_launches_of_a_process_that_leaves_through_os_exit(tmp_path, traced_run):
    # The parent launches once, its child three times and leaves through os._exit: the child's report
    # was last written at its first launch. With a trace the summary counts all 4 launches from it;
    # without one it says which count may be short, and never that tilescope is not installed.
    prog = tmp_path / "prog.py"
    prog.write_text(EXITING)
    cmd = ["trace", "-o", "run.tstrace"] if traced_run else ["sanitize"]
    p = tilescope_cli(cmd + ["--color", "never", "--", sys.executable, str(prog)], tmp_path)
    assert p.returncode == 0, p.stderr
    assert "not be installed" not in p.stderr and "no Python process reported" not in p.stderr, p.stderr
    if traced_run:
        assert len(tilescope.load_trace(tmp_path / "run.tstrace").launches) == 4
        assert ("no findings (4 launch(es) in 2 process(es); 2 of them counted from the trace: 1 process(es) "
                "ended without reporting at exit") in p.stderr, p.stderr
    else:
        assert ("no findings (2 launch(es) in 2 process(es); 1 process(es) ended without reporting at exit"
                in p.stderr), p.stderr
        assert "--trace counts them" in p.stderr, p.stderr


RACY = """
import torch
import triton
import triton.language as tl


@triton.jit
def racy(out_ptr, copy_ptr):
    p = tl.program_id(0)
    dst = tl.where(p % 3 == 0, 0, p)  # programs 0, 3 and 6 all store out[0]; the others out[p]
    tl.store(out_ptr + dst, p.to(tl.float32))  # MARK-store
    if p == 7:
        tl.store(copy_ptr, tl.load(out_ptr + 2))  # MARK-load: program 2 stores out[2]


out = torch.zeros(8)
copy = torch.zeros(1)
racy[(8,)](out, copy)
"""


def test_finding_programs_of_races(tmp_path):
    """load_trace's finding_programs: every program of each race, from the kernel above: programs 0, 3
    and 6 store the same element (a store-store race among exactly those three), and program 7 loads the
    element program 2 stores (a load-store race between 7 and 2, each on the side of its own op). No
    other program conflicts with another: the others store distinct elements."""
    prog = tmp_path / "racy.py"
    prog.write_text(RACY)
    p = tilescope_cli(["trace", "--color", "never", "-o", "run.tstrace", "--", sys.executable, str(prog)], tmp_path)
    assert p.returncode == 1 and "data-race" in p.stderr, p.stderr
    t = tilescope.load_trace(tmp_path / "run.tstrace")
    launch = t.launches[0]
    assert launch["dropped"] == {}
    fs = launch["findings"]
    store_line, load_line = line_of("MARK-store", RACY), line_of("MARK-load", RACY)
    races = [i for i, f in enumerate(fs) if f["kind"] == "data-race"]
    both = {i: {f["line"], (f.get("other") or {}).get("line")} for i, f in ((i, fs[i]) for i in races)}
    ww = [i for i in races if both[i] == {store_line}]
    rw = [i for i in races if both[i] == {store_line, load_line}]
    assert len(ww) == 1 and len(rw) == 1, fs
    assert t.programs_of(1, ww[0]) == [(0, 0, 0), (3, 0, 0), (6, 0, 0)]
    load_side = 0 if fs[rw[0]]["op"] == "tt.load" else 1
    assert t.programs_of(1, rw[0], side=load_side) == [(7, 0, 0)]
    assert t.programs_of(1, rw[0], side=1 - load_side) == [(2, 0, 0)]
    assert t.programs_of(1, rw[0]) == [(2, 0, 0), (7, 0, 0)]
    # The columns: one row per (finding, side, program); races record no execution, and the elements at
    # which that program raced: out[0] in the store-store race, out[2] in the load-store one.
    fp = t.finding_programs
    n = len(fp["finding"])
    assert fp["pid"].shape == (n, 3) and len(fp["runs"]) == n and set(fp["launch"]) == {1}
    assert set(fp["finding"]) <= set(races) and set(fp["seq"]) == {-1}
    element = {ww[0]: 0, rw[0]: 2}
    assert all(r.tolist() == [[element[int(f)], 1]] for f, r in zip(fp["finding"], fp["runs"])), fp["runs"]
    # The same rows as the table itself (sqlite3).
    con = sqlite3.connect(f"file:{tmp_path / 'run.tstrace'}?mode=ro", uri=True)
    rows = sorted(con.execute("SELECT finding, side, pid_x, pid_y, pid_z FROM finding_programs").fetchall())
    con.close()
    assert rows == sorted(zip(fp["finding"].tolist(), fp["side"].tolist(), *fp["pid"].T.tolist()))
