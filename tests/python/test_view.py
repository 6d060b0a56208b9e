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


def test_idle_and_half_sent_connections_do_not_delay_a_request(server):
    """20 clients that connect and send nothing, and 20 that send half a request, then wait: a valid request
    is still answered at once (httplib's fixed pool of threads kept it waiting about 10 s). The bound is
    about liveness, not speed: the server holds such connections for seconds."""
    import socket
    import time
    idle = [socket.create_connection(("127.0.0.1", server["port"])) for _ in range(20)]
    half = [socket.create_connection(("127.0.0.1", server["port"])) for _ in range(20)]
    try:
        for s in half:
            s.sendall(b"GET /api/session HTTP/1.1\r\nHost: 127.0.0.1")
        time.sleep(0.3)  # every one of them accepted and waiting
        t = time.monotonic()
        assert request(server, "/api/launches/1/programs/3/0/0")[0] == 200
        assert time.monotonic() - t < 2
    finally:
        for s in idle + half:
            s.close()


def test_a_request_httplib_rejects_ends_its_connection(server):
    """A header over httplib's limit is a 400; the rest of that request is still on the connection, so the
    server says `Connection: close` and closes it (it kept it open, read on from those bytes, and ignored
    the request's own `Connection: close`). Likewise a body declared over the limit (413, answered without
    reading it) and a refused request (401)."""
    import socket
    import time
    port, token = server["port"], server["token"].encode()
    host = b"Host: 127.0.0.1:%d\r\n" % port
    for head, status in [(host + b"X-Big: " + b"a" * 20000 + b"\r\nConnection: close\r\n", 400),
                         (host + b"Authorization: Bearer " + token + b"\r\nContent-Length: 99999999\r\n", 413),
                         (host + b"Content-Length: 10\r\n", 401)]:
        s = socket.create_connection(("127.0.0.1", port))
        s.settimeout(10)
        try:
            s.sendall(b"POST /api/assist/chat HTTP/1.1\r\n" + head + b"\r\nGET /api/session HTTP/1.1\r\n" + host
                      + b"\r\n")
            t, data = time.monotonic(), b""
            while chunk := s.recv(65536):
                data += chunk
            assert time.monotonic() - t < 2, (status, data[:200])  # closed by the server, not by a timeout
        finally:
            s.close()
        responses = data.count(b"HTTP/1.1 ")
        head_out = data.split(b"\r\n\r\n")[0].decode().lower().split("\r\n")
        assert responses == 1 and head_out[0].startswith(f"http/1.1 {status}"), data[:300]
        assert "connection: close" in head_out and not any(h.startswith("keep-alive") for h in head_out), head_out


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


RACE_CYAN = "#06b6d4"  # web/src/marks.ts RACE_COLOR


def test_a_race_marks_the_elements_both_programs_touched(server, trace, tmp_path):
    """buggy_softmax_off_by_one.py: program r stores y[100 r .. 100 r + 100] (101 lanes, stride 100; numpy
    below), so it races with program r - 1 at element 100 r and with r + 1 at 100 r + 100. Selecting the
    race finding, or one of its programs, marks those elements of the program's store on the tensor map
    (data-race; cyan pixels), among the 101 it stored; hovering one says so."""
    import numpy as np
    t = tilescope.load_trace(trace)
    race = next(i for i, f in enumerate(t.launches[0]["findings"]) if f["kind"] == "data-race")
    stores = [set(int(o) for o in r * 100 + np.arange(101) if o < 16 * 100) for r in range(16)]
    raced = [sorted(stores[r] & set().union(*(stores[q] for q in range(16) if q != r))) for r in range(16)]
    assert raced[0] == [100] and raced[15] == [1500] and raced[3] == [300, 400]
    steps = [{"click": f"#findings li[data-finding='{race}']"}, {"read": ["pid", "#grid", "data-selected"]},
             {"read": ["marked", ".heatmap", "data-marked"]}, {"read": ["race", ".heatmap", "data-race"]},
             {"pixels": ["cyan", ".heatmap", RACE_CYAN]}, {"read": ["legend", "#legend", "text"]},
             {"hover_cell": [".heatmap", 1, 0], "once": True}, {"read": ["hover", "#hover", "text"]},
             {"screenshot": "view-race"}]
    for r in (1, 2, 3):  # the race's other access: those programs' stores
        steps += [{"click": f"#findings a.goto[data-finding='{race}'][data-side='1'][data-pid='{r},0,0']"},
                  {"read": [f"pid{r}", "#grid", "data-selected"]}, {"read": [f"marked{r}", ".heatmap", "data-marked"]},
                  {"read": [f"race{r}", ".heatmap", "data-race"]}]
    reads = drive(server, steps, tmp_path)
    assert reads["pid"] == "0,0,0" and reads["marked"] == runs_of(stores[0])
    assert reads["race"] == runs_of(raced[0]) == "100:1"
    assert reads["cyan"]["count"] > 0 and "raced" in reads["legend"]
    assert reads["hover"].startswith("element 100: ") and "racing access" in reads["hover"], reads["hover"]
    for r in (1, 2, 3):
        assert reads[f"pid{r}"] == f"{r},0,0" and reads[f"marked{r}"] == runs_of(stores[r])
        assert reads[f"race{r}"] == runs_of(raced[r]), (r, reads[f"race{r}"])


SCATTER = os.path.join(ROOT, "examples", "buggy_scatter_add_race.py")
# The example as it is (launch 1), then its kernel on indices made so that the races cover some of each
# program's bins only (launch 2): program 0 stores bins 0..127, program 1 bins 64..190 and bin 150 twice.
SCATTER_RUNS = """
import runpy, sys, torch
runpy.run_path(sys.argv[1], run_name="__main__")
kernel = runpy.run_path(sys.argv[1])["scatter_add_kernel"]
idx = torch.cat([torch.arange(0, 128), torch.arange(64, 191), torch.tensor([150])]).to(torch.int32)
kernel[(2,)](idx, torch.rand(256) + 0.5, torch.zeros(192), 256, BLOCK=128)
"""


def test_the_bins_a_scatter_add_raced_on_are_marked(tmp_path):
    """buggy_scatter_add_race.py under `tilescope sanitize --trace`: program p stores out[idx[128 p ..]]
    (idx from the trace's record of each launch's input). Its store races with the other programs' stores
    (WAW) on the bins they share, and with its own lanes (intra-program-race: different values) on the bins
    it has twice; the map marks exactly those among the bins it stored. In the example (launch 1) 1000
    indices fall into 64 bins and every bin a program stores is shared; in launch 2, bins 0..63 and
    129..190 are one program's alone."""
    import numpy as np
    trace = tmp_path / "scatter.tstrace"
    p = subprocess.run([TILESCOPE, "sanitize", "--trace", str(trace), "--", sys.executable, "-c", SCATTER_RUNS,
                        SCATTER], capture_output=True, text=True, timeout=300)
    assert p.returncode == 1 and "data-race" in p.stderr and "intra-program-race" in p.stderr, p.stderr
    t = tilescope.load_trace(trace)
    expected, steps = {}, []
    for launch in (1, 2):
        idx = t.contents(launch, 0, "before").astype(np.int64)
        lanes = [idx[128 * q:128 * (q + 1)] for q in range(len(idx) // 128 + (len(idx) % 128 > 0))]
        bins = [set(int(b) for b in l) for l in lanes]
        twice = [{int(b) for b, n in zip(*np.unique(l, return_counts=True)) if n > 1} for l in lanes]
        raced = [(bins[q] & set().union(*(bins[o] for o in range(len(bins)) if o != q))) | twice[q]
                 for q in range(len(bins))]
        fs = t.launches[launch - 1]["findings"]
        waw = next(i for i, f in enumerate(fs) if f["kind"] == "data-race" and f["race"] == "WAW")
        programs = sorted({q[0] for q in fs[waw]["programs"]["first"] + fs[waw]["other"]["programs"]["first"]})
        steps.append({"click": f"#launches li[data-launch='{launch}']"})
        for q in programs:
            side = 0 if [q, 0, 0] in fs[waw]["programs"]["first"] else 1
            steps += [{"click": f"#findings a.goto[data-finding='{waw}'][data-side='{side}'][data-pid='{q},0,0']"},
                      {"read": [f"marked{launch}/{q}", ".heatmap", "data-marked"]},
                      {"read": [f"race{launch}/{q}", ".heatmap", "data-race"]}]
            expected[f"{launch}/{q}"] = (runs_of(bins[q]), runs_of(raced[q]))
        if launch == 2:
            assert raced == [set(range(64, 128)), set(range(64, 128)) | {150}] and len(bins[1]) == 127
    with serving(trace) as s:
        reads = drive(s, steps, tmp_path)
    assert len(expected) >= 4
    for key, (marked, raced) in expected.items():
        assert reads[f"marked{key}"] == marked and reads[f"race{key}"] == raced, (key, reads[f"race{key}"], raced)


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
column_sum[(4096 // 64,)](x, out, 4, 4096, BLOCK_N=64)  # 64 columns a program
column_sum[(1,)](x, out, 4, 4096, BLOCK_N=4096)  # one program, every column
"""

LOAD_BLUE, OOB_RED = "#3b82f6", "#e5484d"  # web/src/marks.ts: the colours the legend names


def test_a_wide_tensor_zooms_to_the_bad_access(tmp_path):
    """A 4 x 4096 argument fitted whole is 0.1 pixel a cell. Launch 1: the finding's op, program p's load of
    columns 64 p .. 64 p + 63 of rows 0..4 (row 4 past the end of x: elements 16384 + those columns), is
    shown zoomed to those 64 columns across the panel, every marked cell in view (web/src/heatmap.ts: the
    marks' span fits at MIN_SPAN_CELL, 2 px, or more), its out-of-bounds cells in red past the tensor's
    edge; `f` shows the tensor whole (the rings still show where the lanes fell), `z`
    zooms back. Launch 2: one program loads all 4096 columns, which do not fit at 2 px: the page zooms
    to 8 px or more around the out-of-bounds lanes and says how many marked cells are in view. Cell sizes,
    counts of red and blue pixels, measured in the canvas's own pixels."""
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
                          {"measure": ["canvas", ".heatmap"]},
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
                          {"read": ["again", ".heatmap", "data-scale"]},
                          {"click": "#launches li[data-launch='2']"},
                          {"read": ["marked2", ".heatmap", "data-marked"]},
                          {"read": ["scale2", ".heatmap", "data-scale"]},
                          {"pixels": ["red2", ".heatmap", OOB_RED]},
                          {"read": ["in_view2", ".heatmap", "data-in-view"]},
                          {"read": ["zoom_info2", "#zoom-info", "text"]},
                          {"screenshot": "view-wide-focused"}], tmp_path)
    pid = int(reads["grid"].split(",")[0])
    cols = range(64 * pid, 64 * pid + 64)
    assert reads["outside"] == runs_of(16384 + c for c in cols)
    assert reads["marked"] == runs_of([r * 4096 + c for r in range(5) for c in cols])
    scale, width = float(reads["scale"]), reads["canvas"]["width"]
    assert 2 <= scale and 64 * scale <= width <= 64 * scale + 20, (scale, width)  # the 64 columns span it
    assert reads["in_view"] == "320" and reads["zoom_info"] == ""  # 5 rows of 64, all on screen
    red, blue = reads["red"], reads["blue"]
    assert red["box"] and red["box"][2] - red["box"][0] >= 64 * scale - 1 and red["box"][3] - red["box"][1] >= 0.6 * scale, red
    assert blue["count"] >= 0.5 * 4 * 64 * scale * scale, blue  # rows 0..3 of the op's columns
    assert float(reads["wheeled"]) < scale
    # Whole, a cell is a tenth of a pixel; the rings still mark where the out-of-bounds lanes are.
    assert float(reads["whole"]) < 1 and reads["red_whole"]["box"], reads["red_whole"]
    assert reads["in_view_whole"] == "320" and reads["zoom_info_whole"] == ""
    assert float(reads["again"]) == scale
    # Launch 2: 5 rows of 4096 marked, zoomed to readable cells around the out-of-bounds row.
    assert reads["marked2"] == runs_of(range(5 * 4096))
    assert float(reads["scale2"]) >= 8
    assert reads["red2"]["box"][2] - reads["red2"]["box"][0] >= 8 and reads["red2"]["box"][3] - reads["red2"]["box"][1] >= 8
    in_view = int(reads["in_view2"])
    assert 0 < in_view < 5 * 4096 and reads["zoom_info2"] == f"{in_view} of {5 * 4096} marked in view"


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
    scrolling: its last column, out of bounds, is on screen) and wraps its names only after "_" or "."
    (never mid-word: x_ptr wrapped as x_pt / r), the panel titles keep to one line so the map keeps its
    height, the code panels wrap, and the header fits. The op the page opens on (100 elements of one row
    of x and 1 past its end: a row of 100 is 3.4 px a cell in the 340 px panel) is drawn whole inside the
    tensor panel, every marked cell on screen (it was zoomed to 14 px, the row cut at the panel's edge)."""
    def sizes(prefix):
        return [{"measure": [f"{prefix}_{name}", css]} for name, css in [
            ("ops", "#ops-panel .scroll"), ("map", "#grid-panel .grid-host"), ("header", "header"),
            ("tensor", "#tensor-panel"), ("py", "#py .cm-scroller"), ("ttir", "#ttir .cm-scroller"),
            ("oob_th", "#ops thead th:last-child"), ("heat", ".heatmap")]] + [
            {"read": [f"{prefix}_scale", "#grid", "data-scale"]},
            {"read": [f"{prefix}_marked", ".heatmap", "data-marked"]},
            {"read": [f"{prefix}_in_view", ".heatmap", "data-in-view"]},
            {"read": [f"{prefix}_heat_scale", ".heatmap", "data-scale"]},
            {"read": [f"{prefix}_heat_origin", ".heatmap", "data-origin"]},
            {"line_breaks": [f"{prefix}_breaks", "#ops td.text, #ops th"]}]
    reads = drive(server, sizes("closed") + [{"click": "#assist-toggle"},
                                             {"wait_selector": ["#assistant:not([hidden])"]}] + sizes("open")
                  + [{"screenshot": "view-assistant-open"}], tmp_path)
    for prefix in ("closed", "open"):
        for name in ("ops", "header", "tensor", "py", "ttir"):
            m = reads[f"{prefix}_{name}"]
            assert m["scrollWidth"] <= m["clientWidth"], (prefix, name, m)
        ops, th = reads[f"{prefix}_ops"], reads[f"{prefix}_oob_th"]
        assert th["x"] + th["width"] <= ops["x"] + ops["clientWidth"] + 1, (prefix, th, ops)
        # Names break only after _ . / or a space (x_ / ptr), never inside a word.
        for text in reads[f"{prefix}_breaks"]:
            parts = text.split("|")
            assert all(a and a[-1] in "_./ " for a in parts[:-1]), (prefix, text)
        assert "x_ptr" in reads[f"{prefix}_breaks"] or "x_|ptr" in reads[f"{prefix}_breaks"]
        # The map: in the tensor panel, every marked cell drawn in it, the whole width of x on the canvas.
        heat, tensor = reads[f"{prefix}_heat"], reads[f"{prefix}_tensor"]
        assert tensor["x"] <= heat["x"] and heat["x"] + heat["width"] <= tensor["x"] + tensor["width"], (heat, tensor)
        marked = sum(int(r.split(":")[1]) for r in reads[f"{prefix}_marked"].split(","))
        assert marked == 101 and reads[f"{prefix}_in_view"] == str(marked), (prefix, reads[f"{prefix}_in_view"])
        x0 = float(reads[f"{prefix}_heat_origin"].split(",")[0])
        assert 0 <= x0 and x0 + 100 * float(reads[f"{prefix}_heat_scale"]) <= heat["width"], reads[f"{prefix}_heat_origin"]
    closed, opened = reads["closed_map"], reads["open_map"]
    assert opened["width"] >= 300 and opened["height"] >= closed["height"] - 2, (closed, opened)
    assert float(reads["open_scale"]) >= 20  # 16 programs, 20 px or more each


def boxes_past(boxes, width):
    """The boxes (drive.mjs "boxes") that run past the window's `width` or out of their column."""
    return [b for b in boxes if b["left"] < -0.5 or b["right"] > width + 0.5 or (
        b["outer_right"] is not None and (b["left"] < b["outer_left"] - 0.5 or b["right"] > b["outer_right"] + 0.5))]


def test_at_1024_px_every_panel_fits_the_window(server, tmp_path):
    """At 1024 x 768 the three columns take less room, and with the assistant open (664 px left for them) the
    Python and TTIR panels go under the others: no visible element of the header or the main panels runs
    past the window's right edge or out of its column (the right column was cut off)."""
    every = {"boxes": ["boxes", "header *, main *", "header, main > *"]}
    script = [every, {"screenshot": "view-1024"}, {"click": "#assist-toggle"},
              {"wait_selector": ["#assistant:not([hidden])"]}, dict(boxes=["boxes_open"] + every["boxes"][1:]),
              {"measure": ["py", "#py-panel"]}, {"measure": ["tensor", "#tensor-panel"]},
              {"screenshot": "view-1024-assistant-open"}]
    os.makedirs(SHOTS, exist_ok=True)
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"url": server["url"], "screenshots": SHOTS, "width": 1024, "height": 768,
                                "steps": script}))
    p = subprocess.run(["node", os.path.join(ROOT, "web", "tests", "drive.mjs"), str(path)], capture_output=True,
                       text=True, timeout=120, cwd=os.path.join(ROOT, "web"))
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["console_errors"] == []
    reads = out["reads"]
    for name, width in (("boxes", 1024), ("boxes_open", 1024 - 360)):
        assert len(reads[name]) > 100  # the page's elements, not an empty page
        assert boxes_past(reads[name], width) == [], name
    assert reads["py"]["y"] >= reads["tensor"]["y"] + reads["tensor"]["height"] - 1  # under it, with the assistant


def test_every_id_on_the_page_is_unique(server, trace, tmp_path):
    """Ids name one element each, whatever the page shows: both launches, each finding, the program links
    of the race, each mode of the tensor view, the assistant and its settings (a test, a tool or a label
    that finds an element by id would otherwise get the first of several)."""
    t = tilescope.load_trace(trace)
    steps = [{"ids": "start"}]
    for launch in t.launches:
        steps.append({"click": f"#launches li[data-launch='{launch['id']}']"})
        for i, f in enumerate(launch["findings"]):
            steps += [{"click": f"#findings li[data-finding='{i}']"}, {"ids": f"l{launch['id']}f{i}"}]
            for side, ps in ((0, f["programs"]["first"]), (1, (f["other"] or {}).get("programs", {}).get("first", []))):
                for q in ps[:2]:
                    steps.append({"click": f"#findings a.goto[data-finding='{i}'][data-side='{side}'][data-pid='{','.join(map(str, q))}']"})
            steps.append({"ids": f"l{launch['id']}f{i}links"})
    for mode in ("all", "before", "after", "op"):
        steps += [{"click": f"#modes button[data-mode='{mode}']"}, {"ids": f"mode_{mode}"}]
    steps += [{"click": "#assist-toggle"}, {"wait_selector": ["#assistant:not([hidden])"]},
              {"click": "#assist-settings-toggle"}, {"ids": "assistant"}, {"read": ["n", "body", "data-ready"]}]
    reads = drive(server, steps, tmp_path)
    names = [s["ids"] for s in steps if "ids" in s]
    assert len(names) > 10 and reads["n"] == "1"
    assert {n: reads[n] for n in names if reads[n]} == {}


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
            # The assistant takes 360 px: the NeuronCore view is drawn again at its panel's new width.
            {"click": "#assist-toggle"}, {"wait_selector": ["#assistant:not([hidden])"]},
            {"boxes": ["nki_open", "#nki", "#nki-panel"]},
        ], tmp_path)
    assert len(reads["nki_open"]) == 1 and boxes_past(reads["nki_open"], 1280 - 360) == [], reads["nki_open"]
    assert reads["panel_hidden"] is None
    assert (reads["program"], reads["bars"], reads["sbuf"], reads["psum"]) == ("0", "3", "512", "0")
    assert reads["title"] == "NKI instructions" and reads["profile"] == "estimated on trn2"
    # 300 x 64 floats in by DMA, read once more by the Vector engine within SBUF, and out by DMA.
    assert reads["flows"] == "hbm_to_sbuf=76800,sbuf_to_hbm=76800,sbuf_to_sbuf=76800"
    assert reads["marked"] == runs_of(range(0, 128 * 64))
    assert reads["program2"] == "1" and reads["marked2"] == runs_of(range(128 * 64, 256 * 64))
