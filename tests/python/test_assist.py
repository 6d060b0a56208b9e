"""The LLM assistant on the command line (`tilescope explain`, `ask`, `sanitize --explain`, `llm prompt`):
its context from the trace (budget, valid JSON, the selected op always there, values against numpy),
and answers streamed from a real model (llama.cpp's server with SmolLM2-135M, `make llm-model`).

The model is small and its answers are often wrong: the tests assert the protocol and the grounding
machinery, not the model's wisdom.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pytest

import tilescope
from llm_fake import PARTIAL

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TILESCOPE = os.environ.get("TILESCOPE_BIN") or os.path.join(ROOT, "build", "tilescope")
EXAMPLE = os.path.join(ROOT, "examples", "buggy_softmax_off_by_one.py")


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    d = tmp_path_factory.mktemp("assist")
    subprocess.run([TILESCOPE, "trace", "-o", "run.tstrace", "--", sys.executable, EXAMPLE], cwd=d,
                   capture_output=True, timeout=300)
    assert (d / "run.tstrace").exists()
    return d / "run.tstrace"


def run(args, timeout=600, **env):
    e = {k: v for k, v in os.environ.items() if not k.startswith(("TILESCOPE_LLM_", "OPENAI_"))}
    e.update(env)
    return subprocess.run([TILESCOPE, *args], capture_output=True, text=True, timeout=timeout, env=e)


def context(trace, *extra):
    r = run(["explain", str(trace), "--context", *extra])
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_the_context_starts_with_the_findings_and_their_lines(trace):
    c = context(trace)
    assert list(c)[:2] == ["findings", "selected"]
    src = open(EXAMPLE).read().splitlines()
    t = tilescope.load_trace(trace)
    kinds = [f["kind"] for f in t.launches[0]["findings"]]
    assert [f["kind"] for f in c["findings"]] == kinds
    for f in c["findings"]:
        line = int(f["site"]["python"].rsplit(":", 1)[1])
        assert f["site"]["source"] == src[line - 1].strip()
        assert f["site"]["op"] in f["site"]["ttir"]  # the op's own TTIR line
    # The selection defaults to the first finding's op and first program.
    first = t.launches[0]["findings"][0]
    assert c["selected"]["program"] == first["programs"]["first"][0]
    assert c["selected"]["op"]["python"].endswith(f":{first['line']}")
    # The kernel's source, from its decorator to its last op.
    assert c["kernel_source"]["lines"][0].split(None, 1)[1] == "@triton.jit"


def test_values_of_the_selected_program_match_numpy(trace):
    c = context(trace)
    load = next(v for v in c["values"] if v["op"] == "tt.load")
    assert load["program"] == [15, 0, 0]
    x = tilescope.load_trace(trace).contents(1, 0, "before").reshape(16, 100)
    got = load["executions"][0]["results"][0]
    row = x[15].astype("float64")
    assert got["min"] == pytest.approx(row.min()) and got["max"] == pytest.approx(row.max())
    assert got["first"][:8] == pytest.approx(row[:8].tolist())
    # Over the lanes the mask let through (cols <= 100: 101 of 128), the out-of-bounds lane 100 included.
    assert got["active_lanes"] == "101 of 128"
    store = next(v for v in c["values"] if v["op"] == "tt.store")["executions"][0]["stored"]
    assert store["active_lanes"] == "101 of 128"
    assert store["mean"] == pytest.approx(1 / 101)  # a softmax over the 101 lanes it wrote


def test_without_findings_the_values_are_the_programs_loads_and_stores(tmp_path):
    # buggy_softmax_no_max: wrong values, no finding. With nothing selected the context still carries what
    # program 0 loaded and stored: its stored row is NaN exactly where float32 exp overflows (numpy).
    example = os.path.join(ROOT, "examples", "buggy_softmax_no_max.py")
    subprocess.run([TILESCOPE, "trace", "-o", "sm.tstrace", "--", sys.executable, example], cwd=tmp_path,
                   capture_output=True, timeout=300)
    c = context(tmp_path / "sm.tstrace")
    assert c["findings"] == [] and c["selected"]["program"] == [0, 0, 0]
    ops = [v["op"] for v in c["values"]]
    assert ops.count("tt.load") == 1 and ops.count("tt.store") == 1, ops
    row = tilescope.load_trace(tmp_path / "sm.tstrace").contents(1, 0, "before").reshape(8, 100)[0]
    with np.errstate(over="ignore"):
        overflow = int(np.isinf(np.exp(row.astype(np.float32))).sum())
    assert overflow > 0
    stored = next(v for v in c["values"] if v["op"] == "tt.store")["executions"][0]["stored"]
    assert stored["active_lanes"] == "100 of 128" and stored["nan"] == overflow
    loaded = next(v for v in c["values"] if v["op"] == "tt.load")["executions"][0]["results"][0]
    assert loaded["max"] == pytest.approx(float(row.max()))


@pytest.mark.parametrize("budget", [500, 800, 1200, 3000, 20000])
def test_the_budget_is_respected_and_the_selection_always_kept(trace, budget):
    c = context(trace, "--budget", str(budget), "--program", "3", "--op", "24")
    text = json.dumps(c, separators=(",", ":"), ensure_ascii=False)
    assert c["selected"]["op"]["id"] == "op 24" and c["selected"]["program"] == [3, 0, 0]
    if budget >= 1200:  # above what the selection alone takes (it is kept past any budget)
        assert c["tokens"] <= budget
        assert len(text) / 3 <= budget * 1.02, (len(text) / 3, budget)  # the estimate: 3 characters a token
    if budget < 3000:
        assert c["omitted"], "a small budget must drop something"
    if budget == 20000:
        assert c["omitted"] == [] and "values" in c and "accesses" in c


def test_bad_selections_are_clear_errors(trace):
    r = run(["explain", str(trace), "--context", "--op", "999"])
    assert r.returncode == 2 and "no op site 999" in r.stderr
    r = run(["explain", str(trace), "--context", "--program", "x,1"])
    assert r.returncode == 2 and "--program" in r.stderr
    r = run(["explain", str(trace) + ".missing", "--context"])
    assert r.returncode == 2 and "no such trace file" in r.stderr


def test_the_prompts_are_files_in_the_package():
    r = run(["llm", "prompt", "system"])
    assert r.returncode == 0 and r.stdout == open(os.path.join(ROOT, "prompts", "system.md")).read()
    r = run(["llm", "prompt", "nonsense"])
    assert r.returncode == 2 and "analyze" in r.stderr and "system" in r.stderr


def test_explain_streams_an_answer_from_the_real_model(trace, model_server):
    r = run(["explain", str(trace), "--json", "--max-tokens", "32"], TILESCOPE_LLM_BASE_URL=model_server)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["ok"] and out["answer"].strip()
    assert out["finish_reason"] in ("stop", "length")
    assert out["usage"]["completion_tokens"] <= 32
    assert out["usage"]["prompt_tokens"] > 500  # the context went with it
    assert isinstance(out["cited"], list) and all(c.startswith(("op ", "finding ")) for c in out["cited"])
    p = run(["ask", str(trace), "Which program reads past the end of x?", "--max-tokens", "24"],
            TILESCOPE_LLM_BASE_URL=model_server)
    assert p.returncode == 0 and p.stdout.strip(), p.stderr


def test_sanitize_explain_after_the_report(model_server, tmp_path):
    # A short answer, set in the user's settings file (the max_tokens setting).
    (tmp_path / "config" / "tilescope").mkdir(parents=True)
    (tmp_path / "config" / "tilescope" / "llm.toml").write_text("max_tokens = 24\n")
    r = subprocess.run([TILESCOPE, "sanitize", "--explain", "--", sys.executable, EXAMPLE], capture_output=True,
                       text=True, timeout=600, env=dict(os.environ, TILESCOPE_LLM_BASE_URL=model_server, TMPDIR=str(tmp_path),
                                                        XDG_CONFIG_HOME=str(tmp_path / "config")))
    assert r.returncode == 1, r.stderr  # the run's status: findings
    assert "out-of-bounds-load" in r.stderr and "asking the LLM" in r.stderr
    assert r.stdout.strip()  # the streamed explanation
    assert not list(tmp_path.glob("*.tstrace"))


def test_sanitize_explain_without_findings_says_what_to_do(tmp_path):
    # No finding: no LLM is asked (none is configured here), and the note says how to ask about wrong values.
    example = os.path.join(ROOT, "examples", "buggy_softmax_no_max.py")
    r = run(["sanitize", "--explain", "--", sys.executable, example], TMPDIR=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "no findings to explain" in r.stderr and "tilescope explain run.tstrace" in r.stderr, r.stderr
    assert "asking the LLM" not in r.stderr and not list(tmp_path.glob("*.tstrace"))


def test_ctrl_c_stops_an_explanation(trace, model_server):
    p = subprocess.Popen([TILESCOPE, "explain", str(trace), "--max-tokens", "2000"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=dict(os.environ, TILESCOPE_LLM_BASE_URL=model_server))
    assert p.stdout.read(1), p.stderr.read()
    p.send_signal(signal.SIGINT)
    assert p.wait(timeout=30) == 130


def interrupt_when_asked(args, fake, wait_s=2.0, **env):
    """Run `tilescope ARGS` against the fake upstream, SIGINT it once the fake got the request (and
    `wait_s` later: the time for what the fake sent first to arrive); (returncode, stdout, stderr)."""
    fake.got_request.clear()
    fake.disconnected.clear()
    e = {k: v for k, v in os.environ.items() if not k.startswith(("TILESCOPE_LLM_", "OPENAI_"))}
    e.update(env)
    p = subprocess.Popen([TILESCOPE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e)
    try:
        assert fake.got_request.wait(60), "the request never reached the fake upstream"
        time.sleep(wait_s)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    return p.returncode, out, err


def test_ctrl_c_with_json_prints_the_interrupted_answer(trace, fake_upstream):
    # A real SIGINT mid-answer: the upstream (the fake's `slow`: one piece, then silence) has sent part of
    # an answer; the JSON says it was interrupted, with that part, and the upstream request is closed.
    rc, out, err = interrupt_when_asked(["explain", str(trace), "--json", "--model", "fake",
                                         "--base-url", fake_upstream.url + "/slow/v1"], fake_upstream)
    assert rc == 130, err
    j = json.loads(out)
    assert j["ok"] is False and j["interrupted"] is True
    assert j["answer"] == PARTIAL and j["finish_reason"] is None
    assert j["model"] is None and j["requested_model"] == "fake" and j["model_mismatch"] is False
    assert j["error"]["kind"] == "cancelled" and "interrupted" in j["error"]["message"]
    assert j["context"]["tokens"] > 0
    ids = set(re.findall(r'"id": "((?:op|finding) \d+)"', json.dumps(context(trace))))
    assert j["cited"] == [c for c in ["op 3"] if c in ids]  # PARTIAL names op 3
    assert "interrupted (SIGINT)" in err
    assert fake_upstream.disconnected.wait(10), "the upstream request outlived the interrupted command"
    # Interrupted before any of the answer came (`hang`): the same object, with an empty answer. `ask` too.
    rc, out, err = interrupt_when_asked(["ask", str(trace), "why?", "--json", "--model", "fake",
                                         "--base-url", fake_upstream.url + "/hang/v1"], fake_upstream, wait_s=0.5)
    assert rc == 130, err
    j = json.loads(out)
    assert j["interrupted"] is True and j["ok"] is False and j["answer"] == "" and j["cited"] == []
    # `llm check --json` the same way.
    rc, out, err = interrupt_when_asked(["llm", "check", "--json", "--model", "fake",
                                         "--base-url", fake_upstream.url + "/slow/v1"], fake_upstream)
    assert rc == 130, err
    j = json.loads(out)
    assert j["interrupted"] is True and j["ok"] is False and j["content"] == PARTIAL
    assert j["requested_model"] == "fake"


def test_ctrl_c_without_json_keeps_the_streamed_text(trace, fake_upstream):
    rc, out, err = interrupt_when_asked(["explain", str(trace), "--model", "fake",
                                         "--base-url", fake_upstream.url + "/slow/v1"], fake_upstream)
    assert rc == 130 and out.startswith(PARTIAL) and "interrupted (SIGINT)" in err
    with pytest.raises(ValueError):
        json.loads(out)


def test_a_server_that_ignores_the_model_name_is_noticed(trace, model_server):
    # llama.cpp's server answers as the model it loaded (its file), whatever the request names.
    listed = json.load(urllib.request.urlopen(model_server + "/models", timeout=30))["data"][0]["id"]
    r = run(["explain", str(trace), "--json", "--max-tokens", "4", "--model", "kernel-expert-70b"],
            TILESCOPE_LLM_BASE_URL=model_server)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["requested_model"] == "kernel-expert-70b" and out["model"] == listed
    assert out["model_mismatch"] is True
    warnings = [line for line in r.stderr.splitlines() if line.startswith("tilescope: warning:")]
    assert warnings == [f"tilescope: warning: asked for model 'kernel-expert-70b', but the server answered as "
                        f"'{listed}' (a server that serves one model whatever the request names, as llama.cpp's "
                        f"does, ignores the model setting)"], r.stderr
    # Asked for the model it lists (no model set: the first listed): no warning.
    r = run(["ask", str(trace), "ok?", "--json", "--max-tokens", "4"], TILESCOPE_LLM_BASE_URL=model_server)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["requested_model"] == listed == out["model"] and out["model_mismatch"] is False
    assert "warning" not in r.stderr
    # Text output: the same warning on stderr, after the answer.
    r = run(["llm", "check", "--max-tokens", "4", "--model", "kernel-expert-70b", "--base-url", model_server])
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines()[-1].startswith("tilescope: warning: asked for model 'kernel-expert-70b'")


def test_max_tokens_is_a_setting_layer(trace, fake_upstream, tmp_path):
    # --max-tokens is the max_tokens setting's command-line layer: over the user file's, shown by
    # `llm config`, and what the request to the model asks for (the fake records it).
    (tmp_path / "tilescope").mkdir()
    (tmp_path / "tilescope" / "llm.toml").write_text("max_tokens = 300\n")
    r = run(["llm", "config", "--json", "--max-tokens", "77"], XDG_CONFIG_HOME=str(tmp_path))
    assert json.loads(r.stdout)["settings"]["max_tokens"] == {"value": 77, "source": "command line"}
    r = run(["llm", "config", "--json"], XDG_CONFIG_HOME=str(tmp_path))
    assert json.loads(r.stdout)["settings"]["max_tokens"]["value"] == 300
    for args, want in ((["--max-tokens", "77"], 77), ([], 300)):
        r = run(["explain", str(trace), "--json", "--model", "fake", "--base-url", fake_upstream.url + "/ok/v1",
                 *args], XDG_CONFIG_HOME=str(tmp_path))
        assert r.returncode == 0, r.stderr
        assert fake_upstream.bodies[-1]["max_tokens"] == want
        assert json.loads(r.stdout)["model_mismatch"] is False  # the fake answers as "fake"
    r = run(["explain", str(trace), "--max-tokens", "0", "--base-url", fake_upstream.url + "/ok/v1"])
    assert r.returncode != 0 and "--max-tokens" in r.stderr
