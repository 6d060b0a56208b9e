"""The visualizer's assistant (`tilescope view`: /api/assist/*, web/src/assistant.ts).

- Its API and security model over HTTP: the token on every route, Host / Origin, the key write-only
  (never in a response, the page or the server's output: grepped for), body and question limits, one
  answer at a time; an upstream that hangs, answers 500 or streams garbage comes from a scripted fake
  server (fault injection only: llm_fake.py, conftest.py's `fake_upstream`), and meanwhile the other routes answer; a stop, or a client that goes
  away, ends the upstream request.
- The panel in a real browser (Chromium via Playwright, web/tests/drive.mjs) against the real small
  model of `make llm-model` (conftest.py's `model_server`): streamed text arrives, the analysis's
  citations are links that select the trace's ops, lines and programs, a follow-up carries the new
  selection, the conversation survives a reload, Stop stops. The model is small and often wrong: the
  tests assert structure, never its advice.
"""
from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

import tilescope
from llm_fake import PARTIAL

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TILESCOPE = os.environ.get("TILESCOPE_BIN") or os.path.join(ROOT, "build", "tilescope")
EXAMPLE = os.path.join(ROOT, "examples", "buggy_index_shift.py")
SHOTS = os.path.join(ROOT, "out", "screenshots")
KEY = "sk-tilescope-test-9f3b2c7d1e"  # the configured key: must never come back
WEB_KEY = "sk-web-session-4a8e6d0b2f"  # a key set through the page


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    d = tmp_path_factory.mktemp("assist_web")
    p = subprocess.run([TILESCOPE, "trace", "-o", "run.tstrace", "--", sys.executable, EXAMPLE], cwd=d,
                       capture_output=True, text=True, timeout=300)
    assert (d / "run.tstrace").exists(), p.stderr
    return d / "run.tstrace"


# ---------------------------------------------------------------------------------------------
# `tilescope view` with the assistant


@contextlib.contextmanager
def serving(trace, tmp_path, *args, settings="max_retries = 0\ntimeout_s = 30\n", env=None):
    """`tilescope view TRACE ARGS`, with a user settings file and the key in the environment;
    {"port", "token", "url", "proc", "output"}: the server's stdout and stderr are collected (grepped for
    the key at the end)."""
    cfg = tmp_path / "config" / "tilescope"
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "llm.toml").write_text(settings)
    e = {k: v for k, v in os.environ.items() if not k.startswith(("TILESCOPE_LLM_", "OPENAI_"))}
    e.update({"XDG_CONFIG_HOME": str(tmp_path / "config"), "TILESCOPE_LLM_API_KEY": KEY}, **(env or {}))
    p = subprocess.Popen([TILESCOPE, "view", str(trace), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=e)
    s = {"proc": p, "output": []}
    try:
        for _ in range(5):
            line = p.stdout.readline()
            s["output"].append(line)
            m = re.search(r"(http://127\.0\.0\.1:(\d+)/\?token=([0-9a-f]{64}))", line)
            if m:
                s.update(url=m.group(1), port=int(m.group(2)), token=m.group(3))
                break
        assert "token" in s, p.stderr.read()
        yield s
    finally:
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=20)
        s["output"] += [out, err]
        assert p.returncode == 0, err
        assert KEY not in "".join(s["output"]) and WEB_KEY not in "".join(s["output"])


SEEN = []  # every response body of this module, grepped for the keys


def request(server, path, method="GET", body=None, headers=None, host=None, timeout=10):
    c = http.client.HTTPConnection("127.0.0.1", server["port"], timeout=timeout)
    h = {"Host": host or f"127.0.0.1:{server['port']}"}
    h.update(headers if headers is not None else {"Authorization": f"Bearer {server['token']}"})
    if isinstance(body, (dict, list)):
        body = json.dumps(body)
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    data = r.read()
    c.close()
    SEEN.append(data)
    return r.status, data


def events(raw: bytes):
    """The Server-Sent Events of a body: [(event, data)] (comments skipped)."""
    out = []
    for block in raw.decode().split("\n\n"):
        ev, data = "message", ""
        for line in block.split("\n"):
            if line.startswith("event:"):
                ev = line[6:].strip()
            elif line.startswith("data:"):
                data += line[5:].strip()
        if data:
            out.append((ev, json.loads(data)))
    return out


def chat(server, body, timeout=60):
    status, raw = request(server, "/api/assist/chat", "POST", body, timeout=timeout)
    assert status == 200, raw
    return events(raw)


@pytest.fixture(scope="module")
def fake(fake_upstream):
    """The scripted fake upstream of conftest.py (llm_fake.py), for faults only."""
    return fake_upstream


@pytest.fixture(scope="module")
def faulty(trace, fake, tmp_path_factory):
    """A view whose configured base URL is the fake's well-behaved stream."""
    with serving(trace, tmp_path_factory.mktemp("faulty"), "--base-url", fake.url + "/ok/v1", "--model", "fake") as s:
        yield s
    assert all(KEY.encode() not in b and WEB_KEY.encode() not in b for b in SEEN)


ROUTES = [("POST", "/api/assist/chat"), ("POST", "/api/assist/stop"), ("GET", "/api/assist/conversation"),
          ("DELETE", "/api/assist/conversation"), ("GET", "/api/assist/settings"), ("PUT", "/api/assist/settings")]


def test_every_assistant_route_needs_the_token_host_and_origin(faulty):
    tok = {"Authorization": f"Bearer {faulty['token']}"}
    for method, path in ROUTES:
        assert request(faulty, path, method, b"{}", headers={})[0] == 401, path
        assert request(faulty, path, method, b"{}", headers={"Authorization": "Bearer " + "0" * 64})[0] == 401
        assert request(faulty, path, method, b"{}", host=f"evil.example:{faulty['port']}")[0] == 403, path
        assert request(faulty, path, method, b"{}", headers={**tok, "Origin": "http://evil.example"})[0] == 403
        assert request(faulty, path, method, b"{}", headers={**tok, "Sec-Fetch-Site": "cross-site"})[0] == 403
    # The same-origin page's own requests pass.
    same = {**tok, "Origin": f"http://127.0.0.1:{faulty['port']}"}
    assert request(faulty, "/api/assist/settings", headers=same)[0] == 200


def test_a_streamed_answer_and_its_citations(faulty, trace):
    t = tilescope.load_trace(trace)
    ev = chat(faulty, {"launch": 1, "program": [3, 0, 0], "question": "why?"})
    assert [e for e, _ in ev] == ["start", "delta", "done"]
    start, delta, done = (d for _, d in ev)
    assert start["selection"]["launch"] == 1 and start["selection"]["program"] == [3, 0, 0]
    assert delta["text"] == "Look at op 3 and line 22."
    # Cited: the ids of the answer that the context has (what `tilescope explain --context` builds).
    ctx = subprocess.run([TILESCOPE, "explain", str(trace), "--context", "--budget", "4000", "--program", "3"],
                         capture_output=True, text=True, timeout=60).stdout
    ids = set(re.findall(r'"id": "((?:op|finding) \d+)"', ctx))
    assert ids and done["cited"] == [c for c in ["op 3"] if c in ids]
    sites = {s["site"] for s in t.sites[t.launches[0]["kernel"]]}
    conv = json.loads(request(faulty, "/api/assist/conversation")[1])
    assert [x["role"] for x in conv["turns"]][-2:] == ["user", "assistant"]
    assert conv["turns"][-1]["content"] == delta["text"] and conv["turns"][-1]["state"] == "done"
    assert conv["running"] is False
    # The analysis (no question) carries the trace's findings as evidence, with their ops and lines.
    start = chat(faulty, {"launch": 1})[0][1]
    f = t.launches[0]["findings"][0]
    assert start["evidence"][0]["kind"] == f["kind"] and start["evidence"][0]["line"] == f["line"]
    assert start["evidence"][0]["op"] in sites and start["evidence"][0]["program"] == f["programs"]["first"][0]


def test_the_key_is_write_only(faulty, fake):
    s = json.loads(request(faulty, "/api/assist/settings")[1])
    assert s["api_key"]["set"] is True and s["api_key"]["source"] == "environment TILESCOPE_LLM_API_KEY"
    fake.requests.clear()
    chat(faulty, {"launch": 1, "question": "q"})
    assert fake.requests[-1][1] == f"Bearer {KEY}"  # the configured key goes to the configured server
    # A base URL set by the page without a key: the configured key is not sent there.
    status, data = request(faulty, "/api/assist/settings", "PUT", {"base_url": fake.url + "/ok/v1"})
    assert status == 200, data
    s = json.loads(data)
    assert s["key_withheld"] is True and s["api_key"]["sent"] is False and s["web"]["base_url"].startswith(fake.url)
    chat(faulty, {"launch": 1, "question": "q"})
    assert fake.requests[-1][1] is None
    # A key set by the page is used, and never shown.
    status, data = request(faulty, "/api/assist/settings", "PUT", {"api_key": WEB_KEY})
    assert status == 200 and json.loads(data)["web"]["api_key"] is True
    chat(faulty, {"launch": 1, "question": "q"})
    assert fake.requests[-1][1] == f"Bearer {WEB_KEY}"
    # A server that echoes the key in its error: the message has it redacted.
    request(faulty, "/api/assist/settings", "PUT", {"base_url": fake.url + "/error500/v1"})
    ev = chat(faulty, {"launch": 1, "question": "q"})
    assert ev[-1][0] == "error" and ev[-1][1]["kind"] == "server" and "[redacted]" in ev[-1][1]["message"]
    # Settings the page may not set; values it may not use.
    for body in ({"debug_log": "/tmp/x.jsonl"}, {"headers": {"X": "y"}}, {"base_url": "file:///etc/passwd"},
                 {"base_url": 3}, {"model": "m" * 5000}):
        status, data = request(faulty, "/api/assist/settings", "PUT", body)
        assert status == 400, (body, data)
    # Back to the command's settings.
    status, data = request(faulty, "/api/assist/settings", "PUT", {"base_url": None, "model": "", "api_key": None})
    s = json.loads(data)
    assert s["web"] == {"base_url": None, "model": None, "api_key": False} and s["key_withheld"] is False
    for body in SEEN:
        assert KEY.encode() not in body and WEB_KEY.encode() not in body


def test_bad_and_oversized_requests(faulty):
    for body, status, code in [
        ("x" * (70 << 10), 413, "body_too_large"), ({"question": "q" * 8001}, 413, "question_too_long"),
        ({"question": "字" * 8001}, 413, "question_too_long"),
        ({"question": "字" * 3000, "launch": 99}, 404, "not_found"),  # 9000 bytes, 3000 characters: taken
        ("not json", 400, "bad_json"), ([1, 2], 400, "bad_json"), ({"nonsense": 1}, 400, "bad_parameter"),
        ({"program": [1, 2]}, 400, "bad_parameter"), ({"program": [-1, 0, 0]}, 400, "bad_parameter"),
        ({"launch": "one"}, 400, "bad_parameter"), ({"launch": 99}, 404, "not_found"),
        ({"launch": 1, "op": 999}, 404, "not_found"), ({"max_tokens": 0}, 400, "bad_parameter")]:
        s, data = request(faulty, "/api/assist/chat", "POST", body)
        assert s == status and json.loads(data)["error"]["code"] == code, (body, data)
    assert request(faulty, "/api/assist/chat", "POST", "x" * (2 << 20))[0] == 413  # the server's own limit
    assert request(faulty, "/api/assist/chat", "GET")[0] == 405
    assert json.loads(request(faulty, "/api/assist/conversation")[1])["running"] is False  # nothing held


def stream_in_background(server, body):
    """POST /api/assist/chat on a thread; returns (thread, result dict with "raw")."""
    res = {}

    def go():
        res["status"], res["raw"] = request(server, "/api/assist/chat", "POST", body, timeout=60)

    th = threading.Thread(target=go)
    th.start()
    return th, res


def test_a_hanging_upstream_leaves_the_server_answering_and_stop_cancels_it(faulty, fake):
    request(faulty, "/api/assist/settings", "PUT", {"base_url": fake.url + "/hang/v1"})
    fake.got_request.clear()
    fake.disconnected.clear()
    th, res = stream_in_background(faulty, {"launch": 1, "question": "hang"})
    assert fake.got_request.wait(20)
    t0 = time.time()
    for path in ("/api/session", "/api/launches", "/api/launches/1", "/api/assist/settings"):
        assert request(faulty, path)[0] == 200
    assert time.time() - t0 < 5
    assert json.loads(request(faulty, "/api/assist/conversation")[1])["running"] is True
    s, data = request(faulty, "/api/assist/chat", "POST", {"launch": 1, "question": "again"})
    assert s == 409 and json.loads(data)["error"]["code"] == "busy"
    assert json.loads(request(faulty, "/api/assist/stop", "POST")[1])["stopped"] is True
    th.join(20)
    assert not th.is_alive() and res["status"] == 200
    ev = events(res["raw"])
    assert ev[0][0] == "start" and ev[-1][0] == "done" and ev[-1][1]["stopped"] is True
    assert fake.disconnected.wait(5), "the upstream request was not cancelled"
    conv = json.loads(request(faulty, "/api/assist/conversation")[1])
    assert conv["running"] is False and conv["turns"][-1]["state"] == "stopped"


def test_a_client_that_goes_away_cancels_the_upstream(faulty, fake):
    request(faulty, "/api/assist/settings", "PUT", {"base_url": fake.url + "/hang/v1"})
    fake.got_request.clear()
    fake.disconnected.clear()
    c = socket.create_connection(("127.0.0.1", faulty["port"]))
    body = json.dumps({"launch": 1, "question": "hang"}).encode()
    c.sendall(f"POST /api/assist/chat HTTP/1.1\r\nHost: 127.0.0.1:{faulty['port']}\r\nAuthorization: Bearer "
              f"{faulty['token']}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
              + body)
    assert fake.got_request.wait(20)
    c.close()  # the page went away
    assert fake.disconnected.wait(10), "the upstream request outlived its client"
    deadline = time.time() + 10
    while json.loads(request(faulty, "/api/assist/conversation")[1])["running"] and time.time() < deadline:
        time.sleep(0.1)
    assert json.loads(request(faulty, "/api/assist/conversation")[1])["running"] is False


@pytest.mark.parametrize("mode, kind", [("garbage", "malformed"), ("endless", "malformed")])
def test_garbage_from_upstream_is_an_error_event(faulty, fake, mode, kind):
    request(faulty, "/api/assist/settings", "PUT", {"base_url": f"{fake.url}/{mode}/v1"})
    ev = chat(faulty, {"launch": 1, "question": "q"})
    assert ev[0][0] == "start" and ev[-1][0] == "error" and ev[-1][1]["kind"] == kind, ev[-1]
    assert request(faulty, "/api/session")[0] == 200
    conv = json.loads(request(faulty, "/api/assist/conversation")[1])
    assert conv["turns"][-1]["state"] == "error" and conv["running"] is False


def test_the_conversation_is_kept_until_cleared(faulty, fake):
    request(faulty, "/api/assist/settings", "PUT", {"base_url": fake.url + "/ok/v1"})
    n = len(json.loads(request(faulty, "/api/assist/conversation")[1])["turns"])
    chat(faulty, {"launch": 1, "question": "one more"})
    turns = json.loads(request(faulty, "/api/assist/conversation")[1])["turns"]
    assert len(turns) == n + 2 and turns[-2]["content"] == "one more" and "sent" not in turns[-2]
    assert json.loads(request(faulty, "/api/assist/conversation", "DELETE")[1])["turns"] == []
    assert json.loads(request(faulty, "/api/assist/conversation")[1])["turns"] == []


def without_length(server, method, path, timeout=10):
    """`METHOD PATH` with no body and no Content-Length (as `curl -X POST URL` sends it), on its own
    connection: (status, JSON body, seconds)."""
    t0 = time.time()
    c = socket.create_connection(("127.0.0.1", server["port"]), timeout=timeout)
    c.sendall(f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{server['port']}\r\nAuthorization: Bearer "
              f"{server['token']}\r\nConnection: close\r\n\r\n".encode())
    data = b""
    while True:
        piece = c.recv(65536)
        if not piece:
            break
        data += piece
    c.close()
    SEEN.append(data)
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body), time.time() - t0


def test_stop_with_an_empty_body_stops_the_answer(faulty, fake):
    # No body at all means "stop the current answer", answered at once (the server's read timeout is 5 s).
    status, body, seconds = without_length(faulty, "POST", "/api/assist/stop")
    assert (status, body) == (200, {"stopped": False}) and seconds < 2.5
    request(faulty, "/api/assist/settings", "PUT", {"base_url": fake.url + "/hang/v1"})
    fake.got_request.clear()
    fake.disconnected.clear()
    th, res = stream_in_background(faulty, {"launch": 1, "question": "hang"})
    assert fake.got_request.wait(20)
    status, body, seconds = without_length(faulty, "POST", "/api/assist/stop")
    assert (status, body) == (200, {"stopped": True}) and seconds < 2.5
    th.join(20)
    ev = events(res["raw"])
    assert not th.is_alive() and ev[-1][0] == "done" and ev[-1][1]["stopped"] is True
    assert fake.disconnected.wait(5), "the upstream request was not cancelled"
    # The other routes that change state take no body the same way; a chat without one is the analysis.
    status, body, _ = without_length(faulty, "DELETE", "/api/assist/conversation")
    assert status == 200 and body["turns"] == []
    status, body, _ = without_length(faulty, "PUT", "/api/assist/settings")
    assert status == 200 and "base_url" in body
    # Still behind the token.
    c = socket.create_connection(("127.0.0.1", faulty["port"]), timeout=10)
    c.sendall(f"POST /api/assist/stop HTTP/1.1\r\nHost: 127.0.0.1:{faulty['port']}\r\nConnection: close\r\n\r\n"
              .encode())
    assert c.recv(65536).split()[1] == b"401"
    c.close()


def wait_for_content(server, text, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        turns = json.loads(request(server, "/api/assist/conversation")[1])["turns"]
        if turns and turns[-1]["content"] == text:
            return
        time.sleep(0.1)
    raise AssertionError(f"the streaming turn never showed {text!r}")


def test_a_stopped_answer_goes_back_to_the_model_marked_as_cut_off(faulty, fake):
    request(faulty, "/api/assist/conversation", "DELETE")
    # 1. An answer stopped after its first piece (the fake's `slow`).
    request(faulty, "/api/assist/settings", "PUT", {"base_url": fake.url + "/slow/v1"})
    fake.got_request.clear()
    th, res = stream_in_background(faulty, {"launch": 1, "question": "what is wrong?"})
    assert fake.got_request.wait(20)
    wait_for_content(faulty, PARTIAL)
    assert json.loads(request(faulty, "/api/assist/stop", "POST")[1])["stopped"] is True
    th.join(20)
    assert events(res["raw"])[-1][1]["stopped"] is True
    # 2. An answer stopped before anything came (`hang`).
    request(faulty, "/api/assist/settings", "PUT", {"base_url": fake.url + "/hang/v1"})
    fake.got_request.clear()
    th, res = stream_in_background(faulty, {"launch": 1, "question": "never answered"})
    assert fake.got_request.wait(20)
    assert json.loads(request(faulty, "/api/assist/stop", "POST")[1])["stopped"] is True
    th.join(20)
    # 3. A follow-up: what the model is told of the earlier turns (the fake records the request).
    request(faulty, "/api/assist/settings", "PUT", {"base_url": fake.url + "/ok/v1"})
    chat(faulty, {"launch": 1, "question": "and now?"})
    msgs = fake.bodies[-1]["messages"]
    assert msgs[0]["role"] == "system"
    history = [(m["role"], m["content"]) for m in msgs[1:-1]]
    assert [r for r, _ in history] == ["user", "assistant"], msgs
    assert history[0][1].startswith("what is wrong?")
    assert history[1][1] == PARTIAL + "\n\n[This answer was stopped by the user before it was complete.]"
    assert not any("never answered" in m["content"] for m in msgs)  # no answer: the question is left out
    assert msgs[-1]["role"] == "user" and msgs[-1]["content"].startswith("and now?")
    # The conversation the page shows keeps the text as it came, marked stopped.
    turns = json.loads(request(faulty, "/api/assist/conversation")[1])["turns"]
    assert [t.get("state") for t in turns[1::2]] == ["stopped", "stopped", "done"]
    assert turns[1]["content"] == PARTIAL


def test_view_takes_max_tokens_as_the_setting_layer(trace, fake, tmp_path):
    # --max-tokens is the max_tokens setting's command-line layer (over the user file's 500): the
    # settings say so, the request to the model asks for it, and a page may ask for less, never more.
    with serving(trace, tmp_path, "--base-url", fake.url + "/ok/v1", "--model", "fake", "--max-tokens", "33",
                 settings="max_retries = 0\nmax_tokens = 500\n") as s:
        assert json.loads(request(s, "/api/assist/settings")[1])["max_tokens"] == 33
        chat(s, {"launch": 1, "question": "q"})
        assert fake.bodies[-1]["max_tokens"] == 33
        chat(s, {"launch": 1, "question": "q", "max_tokens": 20})
        assert fake.bodies[-1]["max_tokens"] == 20
        status, data = request(s, "/api/assist/chat", "POST", {"launch": 1, "max_tokens": 34})
        assert status == 400 and "from 1 to 33" in json.loads(data)["error"]["message"]
    with serving(trace, tmp_path, "--base-url", fake.url + "/ok/v1", "--model", "fake",
                 settings="max_retries = 0\nmax_tokens = 500\n") as s:
        assert json.loads(request(s, "/api/assist/settings")[1])["max_tokens"] == 500


def test_the_answers_model_is_in_the_done_event(trace, model_server, tmp_path):
    # The real llama.cpp server answers as the model it loaded whatever the request names: the answer's
    # metadata (the done event, the turn) says so, next to the model asked for.
    listed = json.load(urllib.request.urlopen(model_server + "/models", timeout=30))["data"][0]["id"]
    with serving(trace, tmp_path, "--base-url", model_server, "--budget", "1000", "--max-tokens", "4",
                 settings="max_retries = 0\ntimeout_s = 120\n") as s:
        done = chat(s, {"launch": 1, "question": "ok?"}, timeout=180)[-1]
        assert done[0] == "done", done
        assert done[1]["model"] == listed == done[1]["requested_model"] and done[1]["model_mismatch"] is False
        assert done[1]["model_warning"] == ""
        request(s, "/api/assist/settings", "PUT", {"model": "kernel-expert-70b"})
        done = chat(s, {"launch": 1, "question": "ok?"}, timeout=180)[-1]
        assert done[0] == "done", done
        assert done[1]["model"] == listed and done[1]["requested_model"] == "kernel-expert-70b"
        assert done[1]["model_mismatch"] is True and "asked for model 'kernel-expert-70b'" in done[1]["model_warning"]
        turn = json.loads(request(s, "/api/assist/conversation")[1])["turns"][-1]
        assert turn["model_mismatch"] is True and turn["requested_model"] == "kernel-expert-70b"


def test_broken_settings_leave_the_visualizer_serving(trace, tmp_path):
    with serving(trace, tmp_path, settings="timeout_s = 'soon'\n") as s:
        assert request(s, "/api/session")[0] == 200
        st = json.loads(request(s, "/api/assist/settings")[1])
        assert "timeout_s" in st["error"]
        status, data = request(s, "/api/assist/chat", "POST", {"launch": 1})
        assert status == 503 and json.loads(data)["error"]["code"] == "llm_not_configured"


# ---------------------------------------------------------------------------------------------
# The panel in a real browser, against the real model


def drive(server, steps, tmp_path, timeout=300):
    os.makedirs(SHOTS, exist_ok=True)
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"url": server["url"], "screenshots": SHOTS, "steps": steps}))
    p = subprocess.run(["node", os.path.join(ROOT, "web", "tests", "drive.mjs"), str(script)],
                       capture_output=True, text=True, timeout=timeout, cwd=os.path.join(ROOT, "web"))
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["console_errors"] == []
    SEEN.append(p.stdout.encode())
    return out["reads"]


ANSWER = ".turn[data-role=assistant]"


def test_the_panel_against_the_real_model(trace, model_server, tmp_path):
    t = tilescope.load_trace(trace)
    launch = t.launches[0]
    sites = {s["site"]: s for s in t.sites[launch["kernel"]]}
    lines = {s["line"] for s in sites.values()}
    f = launch["findings"][0]
    op = next(s["site"] for s in sites.values() if s["ttir_line"] == f["ttir"]["line"])
    pid = f["programs"]["first"][0]
    # Short answers (the max_tokens setting) keep the test quick; a context of 1500 tokens too.
    with serving(trace, tmp_path, "--base-url", model_server, "--budget", "1500",
                 settings="max_retries = 0\ntimeout_s = 120\nmax_tokens = 40\n") as s:
        last = f".turn[data-turn='{{}}']"
        reads = drive(s, [
            {"click": "#assist-toggle"},
            {"click": "#assist-analyze"},
            {"wait_selector": [f"{ANSWER}[data-deltas]", 120000]},  # the first streamed piece
            {"read_all": ["early", f"{ANSWER} .text", "text"]},
            {"read_all": ["early_state", ANSWER, "data-state"]},
            {"wait_for": ["#assistant", "data-running", "0", 120000]},
            {"read_all": ["final", f"{ANSWER} .text", "text"]},
            {"read_all": ["deltas", ANSWER, "data-deltas"]},
            {"read_all": ["model_links", f"{ANSWER} .text a.cite", "data-cite"]},
            {"read_all": ["model_link_text", f"{ANSWER} .text a.cite", "text"]},
            {"read_all": ["evidence", f"{ANSWER} .evidence a.cite", "data-cite"]},
            {"screenshot": "assistant-analyze"},
            # Citations select: the op of the finding, its line, its program.
            {"key": "ArrowRight"} if pid[0] == 0 else {"key": "ArrowLeft"},  # away from the finding's program
            {"click": f"{ANSWER} .evidence a.cite[data-cite='program {','.join(map(str, pid))}']"},
            {"read": ["grid", "#grid", "data-selected"]},
            {"click": f"{ANSWER} .evidence a.cite[data-cite='op {op}']"},
            {"read": ["op_row", "#ops tr.selected", "data-site"]},
            {"click": f"{ANSWER} .evidence a.cite[data-cite='line {f['line']}']"},
            {"read": ["py_lines", "#py", "data-lines"]},
            # A follow-up about another program: it carries the new selection.
            {"key": "ArrowRight"} if pid[0] == 0 else {"key": "ArrowLeft"},
            {"read": ["grid2", "#grid", "data-selected"]},
            {"fill": ["#assist-question", "What does this program load?"]},
            {"click": "#assist-send"},
            {"wait_selector": [last.format(3), 10000]},
            {"wait_for": ["#assistant", "data-running", "0", 120000]},
            {"read_all": ["roles", "#assist-turns .turn", "data-role"]},
            {"read_all": ["states", "#assist-turns .turn", "data-state"]},
            {"read_all": ["where", ".turn[data-role=user] .muted", "text"]},
            # Kept for the session: a reload shows the conversation again.
            {"reload": 1},
            {"click": "#assist-toggle"},
            {"wait_selector": [last.format(3), 10000]},
            {"read_all": ["roles_after_reload", "#assist-turns .turn", "data-role"]},
            # Stop: a new answer stopped at its first piece.
            {"click": "#assist-analyze"},
            {"wait_selector": [f"{last.format(5)}[data-deltas]", 120000]},
            {"click": "#assist-stop"},
            {"wait_for": ["#assistant", "data-running", "0", 20000]},
            {"read_all": ["states_after_stop", "#assist-turns .turn", "data-state"]},
            {"screenshot": "assistant-stopped"},
        ], tmp_path)
        conv = json.loads(request(s, "/api/assist/conversation")[1])
    # Streamed: the first piece was on the page while the answer was still coming.
    assert reads["early_state"] == ["streaming"] and len(reads["early"][0]) < len(reads["final"][0])
    assert int(reads["deltas"][0]) > 1 and reads["final"][0].strip()
    # The model's citations that name the trace's ops, findings, lines or programs are links, to real ones.
    text = reads["final"][0]
    for cite in reads["model_links"]:
        kind, value = cite.split(" ")
        assert (kind == "op" and int(value) in sites) or (kind == "line" and int(value) in lines) or \
            (kind == "finding" and 1 <= int(value) <= len(launch["findings"])) or kind == "program", cite
    named_ops = [int(n) for n in re.findall(r"\bop\s+(\d+)\b", text, re.I) if int(n) in sites]
    assert len([c for c in reads["model_links"] if c.startswith("op ")]) == len(named_ops)
    # The analysis cites the trace's findings whatever the model says, and each link selects.
    assert reads["evidence"][:4] == ["finding 1", f"op {op}", f"line {f['line']}", f"program {','.join(map(str, pid))}"]
    assert reads["grid"] == ",".join(map(str, pid))
    assert reads["op_row"] == str(op)
    assert reads["py_lines"] == str(f["line"])
    # The follow-up: four turns, both answered, the second question about the program selected then.
    assert reads["roles"] == ["user", "assistant", "user", "assistant"]
    assert reads["states"][1] in ("done",) and reads["states"][3] == "done"
    p2 = reads["grid2"].split(",")
    assert reads["grid2"] != reads["grid"] and f"program ({', '.join(p2)})" in reads["where"][1]
    assert reads["roles_after_reload"] == reads["roles"]
    assert reads["states_after_stop"][-1] == "stopped"
    assert conv["running"] is False and [x["state"] for x in conv["turns"][1::2]] == ["done", "done", "stopped"]
    assert conv["turns"][3]["selection"]["program"] == [int(x) for x in p2]


def test_the_panel_says_when_another_model_answered(trace, fake, tmp_path):
    # The fake answers as "fake" whatever the request names: the panel says so under the answer, and
    # again after a reload (the turn keeps it).
    with serving(trace, tmp_path, "--base-url", fake.url + "/ok/v1", "--model", "kernel-expert-70b") as s:
        reads = drive(s, [
            {"click": "#assist-toggle"},
            {"click": "#assist-analyze"},
            {"wait_selector": [f"{ANSWER}[data-state=done]", 60000]},
            {"read_all": ["mismatch", f"{ANSWER} .model-mismatch", "text"]},
            {"reload": 1},
            {"click": "#assist-toggle"},
            {"wait_selector": [f"{ANSWER}[data-state=done]", 10000]},
            {"read_all": ["after_reload", f"{ANSWER} .model-mismatch", "text"]},
        ], tmp_path)
    assert reads["mismatch"] == ["answered by model fake, not kernel-expert-70b as asked"]
    assert reads["after_reload"] == reads["mismatch"]
