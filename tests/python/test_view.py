"""The web visualizer (`tilescope view`): its API and security model over HTTP, and the page in a real
browser (Debian's Chromium driven by Playwright, web/tests/drive.mjs).

The trace is made here by `tilescope trace` on a bundled buggy example; what the page must show is read
from the trace file with Python's sqlite3 (tilescope.load_trace), never from the page or the API.
Screenshots go to out/screenshots/ (test artifacts).
"""
from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import subprocess
import sys
import threading

import pytest

import tilescope
from nki_programs import SCALE_ROWS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TILESCOPE = os.environ.get("TILESCOPE_BIN") or os.path.join(ROOT, "build", "tilescope")
EXAMPLE = os.path.join(ROOT, "examples", "buggy_softmax_off_by_one.py")
SHOTS = os.path.join(ROOT, "out", "screenshots")


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    d = tmp_path_factory.mktemp("view")
    # The example twice in one program: two launches to switch between.
    prog = ("import runpy, sys; [runpy.run_path(sys.argv[1], run_name='__main__') for _ in range(2)]")
    p = subprocess.run([TILESCOPE, "trace", "-o", "run.tstrace", "--", sys.executable, "-c", prog, EXAMPLE],
                       cwd=d, capture_output=True, text=True, timeout=300)
    assert (d / "run.tstrace").exists(), p.stderr
    return d / "run.tstrace"


@contextlib.contextmanager
def serving(trace):
    """`tilescope view TRACE` running: {"url", "port", "token", "proc"} from the URL it prints; Ctrl-C at the
    end stops it cleanly (exit status 0)."""
    p = subprocess.Popen([TILESCOPE, "view", str(trace)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        m = None
        for _ in range(5):
            m = re.search(r"(http://127\.0\.0\.1:(\d+)/\?token=([0-9a-f]{64}))", p.stdout.readline())
            if m:
                break
        assert m, p.stderr.read()
        yield {"url": m.group(1), "port": int(m.group(2)), "token": m.group(3), "proc": p}
    finally:
        p.send_signal(2)
        assert p.wait(timeout=10) == 0


@pytest.fixture(scope="module")
def server(trace):
    with serving(trace) as s:
        yield s


def request(server, path, headers=None, host=None, method="GET", body=None):
    c = http.client.HTTPConnection("127.0.0.1", server["port"], timeout=10)
    h = {"Host": host or f"127.0.0.1:{server['port']}"}
    h.update(headers if headers is not None else {"Authorization": f"Bearer {server['token']}"})
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def api(server, path):
    status, data = request(server, path)
    assert status == 200, (path, data)
    return json.loads(data)


# ---------------------------------------------------------------------------------------------
# API and security


def test_every_call_needs_the_token(server):
    for path in ("/api/launches", "/api/session", "/", "/api/launches/1/programs/0/0/0"):
        status, data = request(server, path, headers={})
        assert status == 401, path
        assert json.loads(data)["error"]["code"] == "unauthorized"
    status, _ = request(server, "/api/launches", headers={"Authorization": "Bearer " + "0" * 64})
    assert status == 401


def test_the_url_token_sets_a_cookie_that_authorizes(server):
    status, _ = request(server, "/?token=" + server["token"], headers={})
    assert status == 303
    c = http.client.HTTPConnection("127.0.0.1", server["port"], timeout=10)
    c.request("GET", "/?token=" + server["token"], headers={"Host": f"127.0.0.1:{server['port']}"})
    r = c.getresponse()
    cookie = r.getheader("Set-Cookie").split(";")[0]
    r.read()
    c.request("GET", "/api/session", headers={"Host": f"127.0.0.1:{server['port']}", "Cookie": cookie})
    r = c.getresponse()
    assert r.status == 200 and json.loads(r.read())["launches"] == 2


def test_wrong_host_and_cross_origin_are_rejected(server):
    assert request(server, "/api/launches", host="evil.example")[0] == 403
    assert request(server, "/api/launches", host=f"rebind.example:{server['port']}")[0] == 403
    origin = {"Authorization": f"Bearer {server['token']}", "Origin": "http://evil.example"}
    assert request(server, "/api/launches", headers=origin)[0] == 403


def test_bad_requests_are_json_errors(server):
    for path, status, code in [("/api/launches/99", 404, "not_found"), ("/api/launches/x", 400, "bad_parameter"),
                               ("/api/launches/1/args/0/contents/sideways", 400, "bad_parameter"),
                               ("/api/sources/12345", 404, "not_found"), ("/api/nothing", 404, "not_found"),
                               ("/api/launches/1/programs/0/0", 404, "not_found"),
                               # x is 16 x 100 elements (examples/buggy_softmax_off_by_one.py): 1600 is past it
                               ("/api/launches/1/args/0/elements/1600", 404, "not_found"),
                               ("/api/launches/1/args/0/elements/99999999999", 404, "not_found"),
                               ("/api/launches/1/args/3/elements/0", 404, "not_found")]:
        s, data = request(server, path)
        assert s == status, (path, data)
        assert json.loads(data)["error"]["code"] == code, (path, data)
    s, data = request(server, "/api/launches", method="POST", body=b"{}")
    assert s == 405
    s, data = request(server, "/api/launches/1/args/0/elements/1599")  # x's last element
    assert s == 200 and "accesses" in json.loads(data), data


def test_the_api_answers_what_the_trace_holds(server, trace):
    t = tilescope.load_trace(trace)
    launches = api(server, "/api/launches")
    assert [l["id"] for l in launches] == [l["id"] for l in t.launches]
    assert [l["findings"] for l in launches] == [len(l["findings"]) for l in t.launches]
    one = api(server, "/api/launches/1")
    assert [s["site"] for s in one["sites"]] == [s["site"] for s in t.sites[t.launches[0]["kernel"]]]
    prog = api(server, "/api/launches/1/programs/15/0/0")
    mask = (t.accesses["launch"] == 1) & (t.accesses["pid"] == [15, 0, 0]).all(axis=1)
    expected = sorted((int(s), int(q), int(a)) for s, q, a in zip(t.accesses["site"][mask], t.accesses["seq"][mask],
                                                                   t.accesses["arg"][mask]))
    assert sorted((a["site"], a["seq"], a["arg"]) for a in prog["accesses"]) == expected
    before = request(server, "/api/launches/1/args/0/contents/before")[1]
    assert len(before) == 16 * 100 * 4
    assert before == t.contents(1, 0, "before").tobytes()


def test_concurrent_requests(server):
    results = []

    def worker():
        for _ in range(20):
            results.append(request(server, "/api/launches/1/programs/3/0/0")[0])

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert results == [200] * 160


# ---------------------------------------------------------------------------------------------
# The page in a real browser


def runs_of(offsets) -> str:
    s = sorted(set(int(o) for o in offsets))
    out, i = [], 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and s[j + 1] == s[j] + 1:
            j += 1
        out.append(f"{s[i]}:{j - i + 1}")
        i = j + 1
    return ",".join(out)


def drive(server, steps, tmp_path):
    os.makedirs(SHOTS, exist_ok=True)
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"url": server["url"], "screenshots": SHOTS, "steps": steps}))
    p = subprocess.run(["node", os.path.join(ROOT, "web", "tests", "drive.mjs"), str(script)],
                       capture_output=True, text=True, timeout=120, cwd=os.path.join(ROOT, "web"))
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["console_errors"] == []
    return out["reads"]


def test_the_page_shows_the_bad_access(server, trace, tmp_path):
    t = tilescope.load_trace(trace)
    launch = t.launches[0]
    oob = launch["findings"][0]  # the page opens on the first finding (TTIR order): the load past the end
    assert oob["kind"] == "out-of-bounds-load"
    pid = oob["programs"]["first"][0]
    site = next(s for s in t.sites[launch["kernel"]] if s["ttir_line"] == oob["ttir"]["line"])
    mask = ((t.accesses["launch"] == launch["id"]) & (t.accesses["pid"] == pid).all(axis=1)
            & (t.accesses["site"] == site["site"]))
    def offsets(column):
        return [o for runs in (t.accesses[column][i] for i in mask.nonzero()[0]) for first, n in runs
                for o in range(first, first + n)]

    inside, outside = offsets("runs"), offsets("oob_runs")
    assert outside == list(range(oob["offsets"]["min"], oob["offsets"]["max"] + 1))
    store = next(s for s in t.sites[launch["kernel"]] if s["op"] == "tt.store")
    reads = drive(server, [
        {"read": ["grid", "#grid", "data-selected"]},
        {"read": ["marked", ".heatmap", "data-marked"]},
        {"read": ["outside", ".heatmap", "data-outside"]},
        {"read": ["py_lines", "#py", "data-lines"]},
        {"read": ["ttir_lines", "#ttir", "data-lines"]},
        {"screenshot": "view-finding"},
        # The TTIR line of the store: its Python line lights up.
        {"click_code_line": ["ttir", store["ttir_line"]]},
        {"read": ["py_after_ttir_click", "#py", "data-lines"]},
        # The next launch, then the program to the left by key.
        {"click": "#launches li[data-launch='2']"},
        {"read": ["launch2", "#launches li.selected", "data-launch"]},
        {"key": "ArrowLeft"},
        {"read": ["grid_after_key", "#grid", "data-selected"]},
        {"click": "#modes button[data-mode='all']"},
        {"read": ["count_legend", "#hist", "title"]},
        {"screenshot": "view-all-programs"},
        # Values before the launch of the loaded argument x: its histogram, and the .npy download.
        {"click": "#launches li[data-launch='1']"},
        {"click": "#modes button[data-mode='before']"},
        {"read": ["bins", "#hist", "data-bins"]},
        {"download": ["#npy", str(tmp_path / "x.npy")]},
        {"screenshot": "view-values"},
        # The theme toggle draws the histogram and its labels again in the new theme's text colour.
        {"pixels": ["fg_light", "#hist", "#1c2024"]},
        {"click": "#theme"},
        {"pixels": ["fg_dark_old", "#hist", "#1c2024"]},
        {"pixels": ["fg_dark_new", "#hist", "#e6e8eb"]},
        {"click": "#theme"},
    ], tmp_path)
    # style.css: --fg is #1c2024 in the light theme (headless Chromium's default), #e6e8eb in the dark.
    assert reads["fg_light"]["count"] > 50, reads["fg_light"]
    assert reads["fg_dark_old"]["count"] == 0 and reads["fg_dark_new"]["count"] > 50, (reads["fg_dark_old"],
                                                                                      reads["fg_dark_new"])
    assert reads["grid"] == ",".join(map(str, pid))
    assert reads["marked"] == runs_of(inside + outside)
    assert reads["outside"] == runs_of(outside) and outside and all(o >= 1600 for o in outside)
    assert reads["py_lines"] == str(oob["line"])
    assert reads["ttir_lines"] == str(oob["ttir"]["line"])
    assert reads["py_after_ttir_click"] == str(store["line"])
    assert reads["launch2"] == "2"
    assert reads["grid_after_key"] == f"{pid[0] - 1},0,0"
    # The access-count view's colour scale runs from 1 to the most accesses of one element of the
    # argument shown (x or y of launch 2).
    counts = {int((ld + st).max()) for a in range(2) for ld, st in [t.element_counts(2, a)]}
    legend = reads["count_legend"]
    assert legend.startswith("accesses per element (loads and stores, all programs): 1 .. "), legend
    assert int(legend.split(" .. ")[1].split(";")[0]) in counts, (legend, counts)
    import numpy as np
    x = t.contents(1, 0, "before").astype("float64")
    lo, hi = x.min(), x.max()
    want = np.bincount(np.minimum(63, np.floor((x - lo) / (hi - lo) * 64)).astype(int), minlength=64)
    assert reads["bins"] == ",".join(map(str, want))
    assert np.array_equal(np.load(tmp_path / "x.npy"), t.contents(1, 0, "before").reshape(16, 100))
    for name in ("view-finding", "view-all-programs", "view-values"):
        assert os.path.getsize(os.path.join(SHOTS, f"{name}.png")) > 10_000


def test_sanitize_view_serves_the_run_then_cleans_up(tmp_path):
    env = dict(os.environ, TMPDIR=str(tmp_path))
    p = subprocess.Popen([TILESCOPE, "sanitize", "--view", "--", sys.executable, EXAMPLE], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    url = None
    for _ in range(10):
        m = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=([0-9a-f]{64})", p.stdout.readline())
        if m:
            url = {"port": int(m.group(1)), "token": m.group(2)}
            break
    assert url, p.stderr.read()
    launches = api(url, "/api/launches")
    assert len(launches) == 1 and launches[0]["kinds"]["out-of-bounds-load"] == 1
    assert list(tmp_path.glob("*.tstrace")), "the temporary trace is there while the viewer runs"
    p.send_signal(2)
    assert p.wait(timeout=20) == 1  # the run's status: findings
    assert "out-of-bounds-load" in p.stderr.read()
    assert not list(tmp_path.glob("*.tstrace")), "the temporary trace is removed with the viewer"


ROW_SUM = """
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

x = torch.randn(int(sys.argv[1]), 4096)
out = torch.empty(x.shape[0])
row_sum[(x.shape[0],)](x, out, x.shape[1], BLOCK=32)
"""


def test_a_large_trace_is_served_without_loading_it(tmp_path):
    prog = tmp_path / "row_sum.py"
    prog.write_text(ROW_SUM)
    trace = tmp_path / "big.tstrace"
    subprocess.run([TILESCOPE, "trace", "-o", str(trace), "--", sys.executable, str(prog), "4096"], check=True,
                   capture_output=True, timeout=600)
    assert trace.stat().st_size > 64 * 2**20  # x (64 MiB) stored once: the launch stores nothing into it
    with serving(trace) as s:
        assert api(s, "/api/launches")[0]["programs"] == 4096
        prog_2000 = api(s, "/api/launches/1/programs/2000/0/0")
        assert len(prog_2000["accesses"]) == 129  # 128 tiles loaded, one store
        assert prog_2000["accesses"][0]["runs"] == [[2000 * 4096, 32]]
        assert api(s, "/api/launches/1/args/0/counts")["loads"] == [[1, 4096 * 4096]]  # every element once
        rss = int(open(f"/proc/{s['proc'].pid}/status").read().split("VmRSS:")[1].split()[0]) * 1024
        assert rss < trace.stat().st_size / 2, (rss, trace.stat().st_size)


def test_dot_values_step_by_step_match_numpy(tmp_path):
    """The values API runs the launch again from the trace: the dot's tiles and result in one program are
    the matmul of the stored inputs (numpy, float32), step by step along K."""
    trace = tmp_path / "mm.tstrace"
    subprocess.run([TILESCOPE, "trace", "-o", str(trace), "--", sys.executable,
                    os.path.join(ROOT, "examples", "matmul.py")], check=True, capture_output=True, timeout=300)
    t = tilescope.load_trace(trace)
    launch = t.launches[0]
    dot = next(s for s in t.sites[launch["kernel"]] if s["op"] == "tt.dot")
    a = t.contents(1, 0, "before").reshape(70, 90).astype("float32")
    b = t.contents(1, 1, "before").reshape(90, 50).astype("float32")
    with serving(trace) as s:
        pid_m, pid_n = 2, 1  # the last row block: rows 64..69 of 70, columns 32..49 of 50 (masked edges)
        r = api(s, f"/api/launches/1/programs/{pid_m}/{pid_n}/0/values?sites={dot['site']}")
        steps = r["sites"][0]["executions"]
        assert len(steps) == 3  # K = 90 in tiles of 32
        import numpy as np
        rows, cols = slice(32 * pid_m, 32 * pid_m + 32), slice(32 * pid_n, 32 * pid_n + 32)
        acc = np.zeros((32, 32), dtype="float32")
        for k, step in enumerate(steps):
            ka = slice(32 * k, 32 * k + 32)
            want_a = np.zeros((32, 32), dtype="float32")
            part = a[rows, ka]
            want_a[: part.shape[0], : part.shape[1]] = part  # masked lanes load 0 (other=0.0)
            want_b = np.zeros((32, 32), dtype="float32")
            part = b[ka, cols]
            want_b[: part.shape[0], : part.shape[1]] = part
            got = [np.array(v["values"], dtype="float32").reshape(v["shape"]) for v in step["operands"]]
            assert np.array_equal(got[0], want_a) and np.array_equal(got[1], want_b)
            assert np.allclose(got[2], acc, rtol=1e-5, atol=1e-5)
            acc = acc + want_a @ want_b
            result = np.array(step["results"][0]["values"], dtype="float32").reshape(32, 32)
            assert np.allclose(result, acc, rtol=1e-4, atol=1e-4)
        assert request(s, f"/api/launches/1/programs/9/9/0/values?sites={dot['site']}")[0] == 404
        assert request(s, "/api/launches/1/programs/0/0/0/values?sites=")[0] == 400
        # In the page: the dot's row shows its three steps.
        reads = drive(s, [{"click": f"#ops tr[data-dot='{dot['site']}']"},
                          {"wait_for": ["#dot-view", "data-steps", "3"]}, {"key": "."}, {"key": "."},
                          {"read": ["step", "#dot-view", "data-step"]}, {"screenshot": "view-dot"}], tmp_path)
        assert reads["step"] == "2"


def test_the_profile_panel_shows_the_traced_profile(tmp_path):
    trace = tmp_path / "p.tstrace"
    subprocess.run([TILESCOPE, "profile", "--trace", str(trace), "--", sys.executable,
                    os.path.join(ROOT, "examples", "matmul.py")], check=True, capture_output=True, timeout=300)
    t = tilescope.load_trace(trace)
    prof = t.launches[0]["reports"]["profile"]
    with serving(trace) as s:
        first = prof["lines"][0]
        reads = drive(s, [{"read": ["bound", "#profile", "data-bound"]},
                          {"read": ["rows", "#profile-lines tbody", "text"]},
                          {"click": "#profile-lines tbody tr[data-line='0']"},
                          {"read": ["py", "#py", "data-lines"]},
                          {"screenshot": "view-profile"}], tmp_path)
        assert reads["bound"] == prof["roofline"]["bound"]
        assert f"{os.path.basename(first['file'])}:{first['line']}" in reads["rows"]
        assert reads["py"] == str(first["line"])


CUBE = """
import torch, triton, triton.language as tl

@triton.jit
def plane_copy(x_ptr, y_ptr, PLANE: tl.constexpr):
    p = tl.program_id(0)
    offs = p * PLANE + tl.arange(0, PLANE)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))

x = torch.randn(4, 8, 16)
y = torch.empty_like(x)
plane_copy[(4,)](x, y, PLANE=128)
assert torch.equal(x, y)
"""


def test_an_nd_tensor_is_shown_as_slices(tmp_path):
    prog = tmp_path / "cube.py"
    prog.write_text(CUBE)
    trace = tmp_path / "cube.tstrace"
    subprocess.run([TILESCOPE, "trace", "-o", str(trace), "--", sys.executable, str(prog)], check=True,
                   capture_output=True, timeout=300)
    with serving(trace) as s:
        # Program 2 loads x[2, :, :]: the slice at dim 0 = 2 (rows dim 1, columns dim 2) is all touched.
        reads = drive(s, [{"key": "ArrowRight"}, {"key": "ArrowRight"},
                          {"read": ["grid", "#grid", "data-selected"]},
                          {"read": ["plane", ".heatmap", "data-marked"]},
                          {"fill": ["#slice input[data-dim='0']", "3"]},
                          {"read": ["other_plane", ".heatmap", "data-marked"]},
                          {"select": ["#slice-rows", "0"]},
                          {"read": ["rows_dim0", ".heatmap", "data-marked"]},
                          {"screenshot": "view-slices"}], tmp_path)
        assert reads["grid"] == "2,0,0"
        assert reads["plane"] == "0:128"  # 8 rows x 16 columns, every cell
        assert reads["other_plane"] == ""  # x[3, :, :] is program 3's
        # Rows now dim 0 (4), columns dim 2 (16), dim 1 fixed at 0: x[2, 0, :] is row 2.
        assert reads["rows_dim0"] == "32:16"


def test_what_a_new_user_broke(server, trace, tmp_path):
    """Found by a new user: programs outside the grid, unknown op sites, a second Host header, each finding
    counted once per program, damaged contents."""
    assert request(server, "/api/launches/1/programs/99/0/0")[0] == 404
    assert request(server, "/api/launches/1/programs/0/0/0/values?sites=99999")[0] == 404
    c = http.client.HTTPConnection("127.0.0.1", server["port"], timeout=10)
    c.putrequest("GET", "/api/launches", skip_host=True)
    c.putheader("Host", f"127.0.0.1:{server['port']}")
    c.putheader("Host", "evil.example")
    c.putheader("Authorization", f"Bearer {server['token']}")
    c.endheaders()
    assert c.getresponse().status == 403
    progs = api(server, "/api/launches/1/programs")["findings"]
    assert all(len(v) == len(set(v)) for v in progs.values()), progs
    t = tilescope.load_trace(trace)
    oob = [i for i, f in enumerate(t.launches[0]["findings"]) if f["kind"].startswith("out-of-bounds")]
    assert set(oob) <= set(progs["15,0,0"])
    # A trace whose stored contents were cut short: replaying it is a clear error, not zeros.
    import shutil
    import sqlite3
    bad = tmp_path / "bad.tstrace"
    shutil.copy(trace, bad)
    con = sqlite3.connect(bad)
    con.execute("UPDATE content_chunks SET data = substr(data, 1, 2) WHERE launch = 1 AND arg = 0")
    con.commit()
    con.close()
    r = subprocess.run([TILESCOPE, "replay", str(bad), "--launch", "1"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "damaged" in r.stderr, r.stderr


def test_bad_port_and_host_are_clear_errors(trace):
    for args, says in [(["--port", "abc"], "'abc' is not a port number (0 to 65535"),
                       (["--port", "70000"], "'70000' is not a port number"),
                       (["--host", "999.1.1.1"], "'999.1.1.1' is not an IP address or a host name"),
                       (["--host", "bad host!"], "'bad host!' is not an IP address or a host name")]:
        r = subprocess.run([TILESCOPE, "view", str(trace)] + args, capture_output=True, text=True, timeout=60)
        assert r.returncode != 0 and says in r.stderr, (args, r.returncode, r.stderr)


def test_every_program_of_a_race_is_on_the_map(server, trace, tmp_path):
    """Race findings name their first five programs per side; the map colours every program the race
    involves (the trace's finding_programs), here all 16: program r's store of lane 100 writes element
    100 (r + 1) of y, which program r + 1 writes too (numpy below, from the kernel's offsets)."""
    import numpy as np
    t = tilescope.load_trace(trace)
    race = next(f for f in t.launches[0]["findings"] if f["kind"] == "data-race")
    assert len(race["programs"]["first"]) == 5 and race["programs"]["count"] > 5  # what the finding names
    stores = [set(int(o) for o in r * 100 + np.arange(101) if o < 16 * 100) for r in range(16)]
    racing = {r for r in range(16) for q in range(16) if q != r and stores[r] & stores[q]}
    oob = {int(p[0]) for p, n in zip(t.accesses["pid"][t.accesses["launch"] == 1],
                                     t.accesses["oob"][t.accesses["launch"] == 1]) if n > 0}
    reads = drive(server, [{"read": ["flagged", "#grid", "data-flagged"]}], tmp_path)
    assert reads["flagged"] == runs_of(racing | oob) == "0:16"


PARTIAL = os.path.join(ROOT, "examples", "buggy_partial_output.py")


def test_elements_read_before_written_are_marked(tmp_path):
    """buggy_partial_output.py: pass 1 (grid 8 x 7) writes partial[r, 0..6] of a torch.empty (8, 8); pass 2's
    program r reads partial[r, 0..7], so it reads element 8 r + 7 before anything wrote it (numpy below).
    The finding names five of the eight programs; the page marks each program's element, in its own
    colour, and colours all eight programs on the map."""
    import numpy as np
    import sqlite3
    trace = tmp_path / "partial.tstrace"
    p = subprocess.run([TILESCOPE, "trace", "-o", str(trace), "--", sys.executable, PARTIAL], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 1 and "uninitialized-read" in p.stderr, p.stderr  # 1: findings
    written = set((np.arange(8)[:, None] * 8 + np.arange(7)).ravel().tolist())
    want = {r: sorted(set(range(8 * r, 8 * r + 8)) - written) for r in range(8)}
    assert want[6] == [55]
    t = tilescope.load_trace(trace)
    f = t.launches[1]["findings"][0]
    assert f["kind"] == "uninitialized-read" and f["programs"]["count"] == 8 and len(f["programs"]["first"]) == 5
    # The trace's own record of it agrees with numpy.
    con = sqlite3.connect(f"file:{trace}?mode=ro", uri=True)
    rows = con.execute("SELECT pid_x, runs FROM finding_programs WHERE launch = 2 AND finding = 0").fetchall()
    con.close()
    got = {x: [o for first, n in np.frombuffer(b, dtype="<i8").reshape(-1, 2) for o in range(first, first + n)]
           for x, b in rows}
    assert got == want
    with serving(trace) as s:
        steps = [{"read": ["launch", "#launches li.selected", "data-launch"]},
                 {"read": ["flagged", "#grid", "data-flagged"]},
                 {"read": ["p0", ".heatmap", "data-uninit"]},
                 {"read": ["legend", "#legend", "text"]}]
        for _ in range(6):
            steps.append({"key": "ArrowRight"})
        steps += [{"read": ["grid", "#grid", "data-selected"]}, {"read": ["p6", ".heatmap", "data-uninit"]},
                  {"read": ["marked", ".heatmap", "data-marked"]}, {"screenshot": "view-uninit"}]
        reads = drive(s, steps, tmp_path)
    assert reads["launch"] == "2"
    assert reads["flagged"] == "0:8"
    assert reads["p0"] == runs_of(want[0]) == "7:1"
    assert reads["grid"] == "6,0,0" and reads["p6"] == runs_of(want[6])
    assert reads["marked"] == runs_of(range(48, 56))  # the load touched the row; one element uninitialized
    assert "read before written" in reads["legend"]



WIDE = """
import torch, triton, triton.language as tl

@triton.jit
def column_sum(x_ptr, out_ptr, n_rows, n_cols, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    rows = tl.arange(0, 8)
    mask = rows[:, None] <= n_rows  # BUG: should be <; row n_rows is past the end of x
    x = tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + cols, tl.sum(x, axis=0))

x = torch.randn(4, 4096)
out = torch.empty(4096)
column_sum[(4096 // 64,)](x, out, 4, 4096, BLOCK_N=64)
"""

LOAD_BLUE, OOB_RED = "#3b82f6", "#e5484d"  # web/src/marks.ts: the colours the legend names


def test_a_wide_tensor_zooms_to_the_bad_access(tmp_path):
    """A 4 x 4096 argument fitted whole is 0.1 pixel a cell. The finding's op, program p's load of columns
    64 p .. 64 p + 63 of rows 0..4 (row 4 past the end of x: elements 16384 + those columns), is shown
    zoomed: the red out-of-bounds cells and the blue loaded cells, measured in the canvas's own pixels,
    are at least 8 CSS pixels wide (web/src/heatmap.ts READABLE_CELL); the wheel and `f` still zoom out, `z`
    back in."""
    prog = tmp_path / "wide.py"
    prog.write_text(WIDE)
    trace = tmp_path / "wide.tstrace"
    p = subprocess.run([TILESCOPE, "trace", "-o", str(trace), "--", sys.executable, str(prog)], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 1 and "out-of-bounds-load" in p.stderr, p.stderr
    with serving(trace) as s:
        reads = drive(s, [{"click": "#findings li[data-finding='0']"},
                          {"read": ["grid", "#grid", "data-selected"]},
                          {"read": ["marked", ".heatmap", "data-marked"]},
                          {"read": ["outside", ".heatmap", "data-outside"]},
                          {"read": ["scale", ".heatmap", "data-scale"]},
                          {"pixels": ["red", ".heatmap", OOB_RED]},
                          {"pixels": ["blue", ".heatmap", LOAD_BLUE]},
                          {"read": ["in_view", ".heatmap", "data-in-view"]},
                          {"read": ["zoom_info", "#zoom-info", "text"]},
                          {"screenshot": "view-wide-zoomed"},
                          {"wheel": [".heatmap", 100, 3]},
                          {"read": ["wheeled", ".heatmap", "data-scale"]},
                          {"key": "f"},
                          {"read": ["whole", ".heatmap", "data-scale"]},
                          {"pixels": ["red_whole", ".heatmap", OOB_RED]},
                          {"read": ["in_view_whole", ".heatmap", "data-in-view"]},
                          {"read": ["zoom_info_whole", "#zoom-info", "text"]},
                          {"key": "z"},
                          {"read": ["again", ".heatmap", "data-scale"]}], tmp_path)
    pid = int(reads["grid"].split(",")[0])
    cols = range(64 * pid, 64 * pid + 64)
    assert reads["outside"] == runs_of(16384 + c for c in cols)
    assert reads["marked"] == runs_of([r * 4096 + c for r in range(5) for c in cols])
    assert float(reads["scale"]) >= 8
    red, blue = reads["red"], reads["blue"]
    assert red["box"] and red["box"][2] - red["box"][0] >= 8 and red["box"][3] - red["box"][1] >= 8, red
    # Many loaded cells, each 6+ px of blue wide between the grid's lines.
    assert blue["count"] >= 10 * 8 * 8 and blue["run"] >= 6, blue
    assert float(reads["wheeled"]) < float(reads["scale"])
    # Whole, a cell is a tenth of a pixel: less red than one readable cell shows (what the zoom is for).
    assert float(reads["whole"]) < 1 and reads["red_whole"]["count"] < 8 * 8, reads["red_whole"]
    assert float(reads["again"]) == float(reads["scale"])
    # 320 marked cells (5 rows of 64); zoomed, the page says how many are on screen; whole, all of them.
    in_view = int(reads["in_view"])
    assert 0 < in_view < 320 and reads["zoom_info"] == f"{in_view} of 320 marked in view"
    assert reads["in_view_whole"] == "320" and reads["zoom_info_whole"] == ""


NEIGHBOURS = """
import torch, triton, triton.language as tl

@triton.jit
def neighbours(x_ptr, out_ptr, BLOCK: tl.constexpr):
    p = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for k in range(16):  # 16 loads a program: per-program detail that a small budget cannot keep whole
        acc += tl.load(x_ptr + k * BLOCK + tl.arange(0, BLOCK))
    offs = p + tl.arange(0, 2)  # BUG: program p stores out[p] and out[p + 1], which program p + 1 stores too
    tl.store(out_ptr + offs, tl.sum(acc, axis=0) + tl.zeros((2,), dtype=tl.float32))

x = torch.randn(16 * 32)
out = torch.empty(65)
neighbours[(64,)](x, out, BLOCK=32)
"""


def test_a_program_whose_detail_the_budget_dropped_says_so(tmp_path):
    """With a 40 KiB budget the trace keeps the race's programs (all 64: program p and p + 1 both store
    out[p + 1]) but the accesses of 1 program in `stride` only (the trace's own detail_stride, > 1). Program
    1 is red on the map and has no ops: the page says its detail was not kept, by which sample, and
    offers program 0, the nearest program of the race whose detail was kept (every stride's multiple is)."""
    prog = tmp_path / "neighbours.py"
    prog.write_text(NEIGHBOURS)
    trace = tmp_path / "small.tstrace"
    p = subprocess.run([TILESCOPE, "trace", "-o", str(trace), "--trace-budget", "40K", "--", sys.executable,
                        str(prog)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 1 and "data-race" in p.stderr, p.stderr
    t = tilescope.load_trace(trace)
    launch = t.launches[0]
    stride = launch["detail_stride"]
    assert stride > 1 and "finding_programs" not in launch["dropped"], launch["dropped"]
    kept = launch["dropped"]["detail"]["programs_kept"]
    assert kept == 64 // stride
    race = next(i for i, f in enumerate(launch["findings"]) if f["kind"] == "data-race")
    assert t.programs_of(1, race) == [(q, 0, 0) for q in range(64)]
    with serving(trace) as s:
        reads = drive(s, [{"click": "#launches li[data-launch='1']"},
                          {"read": ["start", "#grid", "data-selected"]},
                          {"read": ["start_notice", "#no-detail", "hidden"]},
                          {"key": "ArrowRight"},
                          {"read": ["grid", "#grid", "data-selected"]},
                          {"read": ["flagged", "#grid", "data-flagged"]},
                          {"read": ["notice_hidden", "#no-detail", "hidden"]},
                          {"read": ["notice", "#no-detail", "text"]},
                          {"read": ["go", "#no-detail-go", "data-pid"]},
                          {"read_all": ["rows", "#ops tr[data-access]", "data-access"]},
                          {"read": ["legend", "#grid-legend", "text"]},
                          {"read": ["tensor", "#tensor-title", "text"]},
                          {"screenshot": "view-no-detail"},
                          {"click": "#no-detail-go"},
                          {"read": ["after", "#grid", "data-selected"]},
                          {"read": ["after_hidden", "#no-detail", "hidden"]},
                          {"read_all": ["after_rows", "#ops tr[data-access]", "data-access"]}], tmp_path)
    assert reads["start"] == "0,0,0" and reads["start_notice"] == ""  # program 0 is kept: no notice
    assert reads["grid"] == "1,0,0" and reads["flagged"] == "0:64"
    assert reads["notice_hidden"] is None and reads["rows"] == []
    notice = reads["notice"]
    assert "program (1, 0, 0) because its detail was not recorded" in notice, notice
    assert f"1 program in {stride} only" in notice and f"{kept} of 64 programs" in notice, notice
    assert f"finding {race + 1} (data-race)" in notice, notice
    assert reads["go"] == "0,0,0"
    assert "finding, detail not kept" in reads["legend"]
    assert "not kept by the trace's budget" in reads["tensor"]
    assert reads["after"] == "0,0,0" and reads["after_hidden"] == "" and len(reads["after_rows"]) == 17


def test_at_1280x800_with_the_assistant_open_nothing_is_cut(server, trace, tmp_path):
    """The assistant's panel takes 360 px of 1280: the memory-ops table still fits its panel (no sideways
    scrolling: its last column, out of bounds, is on screen), the panel titles keep to one line so the map
    keeps its height, the code panels wrap, and the header fits."""
    def sizes(prefix):
        return [{"measure": [f"{prefix}_{name}", css]} for name, css in [
            ("ops", "#ops-panel .scroll"), ("map", "#grid-panel .grid-host"), ("header", "header"),
            ("tensor", "#tensor-panel"), ("py", "#py .cm-scroller"), ("ttir", "#ttir .cm-scroller"),
            ("oob_th", "#ops thead th:last-child")]] + [{"read": [f"{prefix}_scale", "#grid", "data-scale"]}]
    reads = drive(server, sizes("closed") + [{"click": "#assist-toggle"},
                                             {"wait_selector": ["#assistant:not([hidden])"]}] + sizes("open")
                  + [{"screenshot": "view-assistant-open"}], tmp_path)
    for prefix in ("closed", "open"):
        for name in ("ops", "header", "tensor", "py", "ttir"):
            m = reads[f"{prefix}_{name}"]
            assert m["scrollWidth"] <= m["clientWidth"], (prefix, name, m)
        ops, th = reads[f"{prefix}_ops"], reads[f"{prefix}_oob_th"]
        assert th["x"] + th["width"] <= ops["x"] + ops["clientWidth"] + 1, (prefix, th, ops)
    closed, opened = reads["closed_map"], reads["open_map"]
    assert opened["width"] >= 300 and opened["height"] >= closed["height"] - 2, (closed, opened)
    assert float(reads["open_scale"]) >= 20  # 16 programs, 20 px or more each


def test_ttir_lines_wrap_and_clicks_still_map_to_python(server, trace, tmp_path):
    """TTIR lines are long (types and locations): wrapped by default, they fit the panel; unwrapped (the
    toggle) they scroll sideways. Clicking a wrapped TTIR line still highlights its Python line."""
    t = tilescope.load_trace(trace)
    launch = t.launches[0]
    ttir_text = t.connection.execute("SELECT ttir FROM kernels WHERE id = ?", (launch["kernel"],)).fetchone()[0]
    assert max(len(line) for line in ttir_text.splitlines()) > 100
    load = next(s for s in t.sites[launch["kernel"]] if s["op"] == "tt.load")
    reads = drive(server, [{"read": ["wrap", "#ttir", "data-wrap"]},
                           {"measure": ["wrapped", "#ttir .cm-scroller"]},
                           {"click_code_line": ["ttir", load["ttir_line"]]},
                           {"read": ["py", "#py", "data-lines"]},
                           {"click": "#ttir-wrap"},
                           {"read": ["unwrap", "#ttir", "data-wrap"]},
                           {"measure": ["unwrapped", "#ttir .cm-scroller"]},
                           {"reload": 1},  # the choice is kept
                           {"read": ["reloaded", "#ttir", "data-wrap"]}], tmp_path)
    assert reads["wrap"] == "1" and reads["wrapped"]["scrollWidth"] <= reads["wrapped"]["clientWidth"]
    assert reads["py"] == str(load["line"])
    assert reads["unwrap"] == "" and reads["unwrapped"]["scrollWidth"] > reads["unwrapped"]["clientWidth"]
    assert reads["reloaded"] == ""


def test_finding_links_launch_times_and_values_on_hover(server, trace, tmp_path):
    """The findings list links each program a finding names, and a race's other access (that program, at
    that op); launches show their time; hovering an element of the op's view names its values before and
    after the launch (the trace's contents, read here with numpy)."""
    import numpy as np
    t = tilescope.load_trace(trace)
    launch = t.launches[0]
    fs = launch["findings"]
    race = next(i for i, f in enumerate(fs) if f["kind"] == "data-race")
    other = fs[race]["other"]
    pid = other["programs"]["first"][-1]
    x_before, x_after = t.contents(1, 0, "before"), t.contents(1, 0, "after")
    reads = drive(server, [
        {"read": ["launch_text", "#launches li[data-launch='1']", "text"]},
        {"click": f"#findings a.goto[data-finding='{race}'][data-side='1'][data-pid='{','.join(map(str, pid))}']"},
        {"read": ["grid", "#grid", "data-selected"]},
        {"read": ["site", "#ops tr.selected", "data-site"]},
        {"click": "#findings li[data-finding='0']"},  # the load of x, program 15
        # Element 1500 of x (row 15, column 0: loaded by program 15), hovered once: its values are fetched
        # on this first hover and shown when they arrive, without another mouse move.
        {"hover_cell": [".heatmap", 15, 0], "once": True},
        {"read": ["hover", "#hover", "text"]},
    ], tmp_path)
    ms = launch["seconds"] * 1e3
    assert (f"{ms:.1f} ms" if 1 <= ms < 1000 else "s") in reads["launch_text"], (reads["launch_text"], ms)
    assert reads["grid"] == ",".join(map(str, pid))
    site = next(s for s in t.sites[launch["kernel"]] if s["site"] == int(reads["site"]))
    assert site["ttir_line"] == other["ttir"]["line"] and site["op"] == other["op"]
    hover = reads["hover"]
    m = re.search(r"element 1500: .* · before (\S+) · after (\S+)$", hover)
    assert m, hover
    assert np.isclose(float(m.group(1)), x_before[1500], rtol=1e-5)
    assert np.isclose(float(m.group(2)), x_after[1500], rtol=1e-5)


UNEVEN = """
import torch, triton, triton.language as tl

@triton.jit
def uneven(x_ptr, out_ptr, BLOCK: tl.constexpr):
    p = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    n = tl.where(p == 5, 4000, 1)  # program 5 runs the loop 4000 times, the others once
    for k in range(0, n):
        acc += tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(out_ptr + p * BLOCK + tl.arange(0, BLOCK), acc)

x = torch.randn(1024)
out = torch.empty(8 * 1024)
uneven[(8,)](x, out, BLOCK=1024)
"""


def test_the_map_coloured_by_time(tmp_path):
    """Program 5 of `uneven` runs its loop 4000 times, the other seven once: in the trace's program times
    it is the longest, and the map coloured by time names it the hottest; the selected program's time is
    beside its number."""
    prog = tmp_path / "uneven.py"
    prog.write_text(UNEVEN)
    trace = tmp_path / "uneven.tstrace"
    subprocess.run([TILESCOPE, "trace", "-o", str(trace), "--", sys.executable, str(prog)], check=True,
                   capture_output=True, timeout=300)
    t = tilescope.load_trace(trace)
    ns = t.program_ns(1)
    assert ns is not None and len(ns) == 8 and (ns > 0).all(), ns
    assert int(ns.argmax()) == 5, ns
    with serving(trace) as s:
        assert api(s, "/api/launches/1/programs?time=1")["times_ns"] == ns.tolist()
        reads = drive(s, [{"select": ["#color-by", "time"]},
                          {"read": ["hottest", "#grid", "data-hottest"]},
                          {"read": ["legend", "#grid-legend", "text"]},
                          {"click_at": ["#grid", 8, 8]},  # the map's first cell
                          {"read": ["selected", "#grid", "data-selected"]},
                          {"read": ["pid", "#pid", "text"]},
                          {"screenshot": "view-time"}], tmp_path)
    assert reads["hottest"] == "5"
    assert "the longest program" in reads["legend"]
    x = int(reads["selected"].split(",")[0])
    assert re.fullmatch(rf"\({x}, 0, 0\) · [0-9.]+ (s|ms|µs)", reads["pid"]), reads["pid"]




def test_an_nki_launch_shows_its_engines_and_on_chip_memory(tmp_path):
    """An NKI kernel of 3 programs, each three instructions on two 128 x 64 float32 SBUF tiles (256 bytes per
    partition each): the NeuronCore panel draws the selected program's three instructions and the two tiles'
    512 bytes per partition at their peak; the code panel is the instruction listing; the tensor map marks
    the rows the program's first copy read."""
    prog = tmp_path / "scale.py"
    prog.write_text(SCALE_ROWS)
    trace = tmp_path / "nki.tstrace"
    p = subprocess.run([TILESCOPE, "trace", "-o", str(trace), "--", sys.executable, str(prog)], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    with serving(trace) as s:
        reads = drive(s, [
            {"read": ["panel_hidden", "#nki-panel", "hidden"]},
            {"read": ["program", "#nki", "data-program"]},
            {"read": ["bars", "#nki", "data-bars"]},
            {"read": ["sbuf", "#nki", "data-sbuf-peak"]},
            {"read": ["psum", "#nki", "data-psum-peak"]},
            {"read": ["title", "#ttir-title", "text"]},
            {"read": ["profile", "#profile-gpu", "text"]},
            {"read": ["flows", "#roofline", "data-flows"]},
            {"read": ["marked", ".heatmap", "data-marked"]},
            {"screenshot": "view-nki"},
            {"key": "ArrowRight"},
            {"read": ["program2", "#nki", "data-program"]},
            {"read": ["marked2", ".heatmap", "data-marked"]},
        ], tmp_path)
    assert reads["panel_hidden"] is None
    assert (reads["program"], reads["bars"], reads["sbuf"], reads["psum"]) == ("0", "3", "512", "0")
    assert reads["title"] == "NKI instructions" and reads["profile"] == "estimated on trn2"
    # 300 x 64 floats in by DMA, read once more by the Vector engine within SBUF, and out by DMA.
    assert reads["flows"] == "hbm_to_sbuf=76800,sbuf_to_hbm=76800,sbuf_to_sbuf=76800"
    assert reads["marked"] == runs_of(range(0, 128 * 64))
    assert reads["program2"] == "1" and reads["marked2"] == runs_of(range(128 * 64, 256 * 64))
