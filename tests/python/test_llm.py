"""The LLM client and settings through `tilescope llm`, against a real model behind a real server.

The server is llama.cpp's (xllamacpp) with SmolLM2-135M-Instruct, started by the shared fixture
`model_server` (conftest.py: tests/llm/serve.py in the venv `make llm-model` makes). The model's
answers are often wrong: these tests assert the protocol (streaming, usage, finish reasons, errors,
cancellation) and the settings' rules (sources, the key never shown or logged), not the content. Faults
a real server cannot be made to produce (429s, malformed streams, truncation) are tested against a
scripted fake in tests/cpp/llm/client_test.cpp, and Ctrl-C mid-answer against conftest.py's
`fake_upstream`.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TILESCOPE = os.environ.get("TILESCOPE_BIN") or os.path.join(ROOT, "build", "tilescope")


def env_for(tmp_path, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TILESCOPE_LLM_", "OPENAI_"))}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")  # no user file unless a test writes one
    env.update(extra)
    return env


def tilescope(args, tmp_path, timeout=300, **env):
    return subprocess.run([TILESCOPE, "llm", *args], capture_output=True, text=True, timeout=timeout,
                          env=env_for(tmp_path, **env), cwd=tmp_path)


def test_check_streams_an_answer_from_the_real_model(model_server, tmp_path):
    r = tilescope(["check", "--json", "--max-tokens", "8"], tmp_path, TILESCOPE_LLM_BASE_URL=model_server)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["ok"] and out["streamed"]
    assert isinstance(out["content"], str) and out["content"].strip()
    assert out["finish_reason"] in ("stop", "length")
    assert 1 <= out["usage"]["completion_tokens"] <= 8
    assert 0 < out["first_token_seconds"] <= out["seconds"]
    assert out["model"].endswith(".gguf")  # the model the server lists first: no model was configured


def test_check_without_streaming(model_server, tmp_path):
    r = tilescope(["check", "--json", "--no-stream", "--max-tokens", "4", "--base-url", model_server], tmp_path)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["ok"] and not out["streamed"] and out["first_token_seconds"] is None
    assert out["usage"]["completion_tokens"] <= 4


def test_a_prompt_longer_than_the_context_is_a_clear_error(model_server, tmp_path):
    long = "kernel " * 15000  # about 15,000 tokens: past the server's 8192-token context
    r = tilescope(["check", "--json", "--base-url", model_server, "--message", long], tmp_path)
    assert r.returncode == 2
    out = json.loads(r.stdout)
    assert out["error"]["kind"] == "context_too_long", out
    assert "context" in out["error"]["message"]


def test_the_key_is_never_shown_nor_logged(model_server, tmp_path):
    key = "sk-tilescope-test-0123456789"
    log = tmp_path / "llm.jsonl"
    r = tilescope(["check", "--json", "--max-tokens", "4", "--debug-log", str(log)], tmp_path,
                  TILESCOPE_LLM_BASE_URL=model_server, TILESCOPE_LLM_API_KEY=key)
    assert r.returncode == 0, r.stderr
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert any(e.get("status") == 200 and "messages" in json.dumps(e.get("request")) for e in entries)
    c = tilescope(["config", "--json"], tmp_path, TILESCOPE_LLM_BASE_URL=model_server, TILESCOPE_LLM_API_KEY=key)
    for text in (r.stdout, r.stderr, log.read_text(), c.stdout, c.stderr):
        assert key not in text
    settings = json.loads(c.stdout)["settings"]
    assert settings["api_key"] == {"value": "set", "source": "environment TILESCOPE_LLM_API_KEY"}
    assert settings["base_url"] == {"value": model_server, "source": "environment TILESCOPE_LLM_BASE_URL"}


def test_config_shows_each_layer(tmp_path):
    (tmp_path / "config" / "tilescope").mkdir(parents=True)
    (tmp_path / "config" / "tilescope" / "llm.toml").write_text('model = "user-model"\ntimeout_s = 30\n')
    (tmp_path / ".tilescope").mkdir()
    (tmp_path / ".tilescope" / "llm.toml").write_text("max_retries = 1\n")
    r = tilescope(["config", "--timeout", "9"], tmp_path, OPENAI_BASE_URL="http://127.0.0.1:9/v1")
    assert r.returncode == 0, r.stderr
    lines = {line.split()[0]: line for line in r.stdout.splitlines() if line.strip()}
    assert "user-model" in lines["model"] and "user file" in lines["model"]
    assert "(command line)" in lines["timeout_s"] and "9.0" in lines["timeout_s"]
    assert "project file" in lines["max_retries"]
    assert "environment OPENAI_BASE_URL" in lines["base_url"]
    bad = tilescope(["config"], tmp_path, TILESCOPE_LLM_DEBUG_LOG="")  # still fine: empty means unset
    assert bad.returncode == 0
    (tmp_path / ".tilescope" / "llm.toml").write_text('api_key = "sk-in-the-repo"\n')
    r = tilescope(["config"], tmp_path)
    assert r.returncode == 2 and "may not set 'api_key'" in r.stderr and "sk-in-the-repo" not in r.stderr


def test_ctrl_c_stops_a_streaming_answer(model_server, tmp_path):
    p = subprocess.Popen([TILESCOPE, "llm", "check", "--base-url", model_server, "--max-tokens", "2000", "--message",
                          "Write a very long story about tiles and lanes."], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env_for(tmp_path), cwd=tmp_path)
    first = p.stdout.read(1)  # the first streamed byte
    assert first, p.stderr.read()
    p.send_signal(signal.SIGINT)
    rc = p.wait(timeout=30)
    assert rc == 130, p.stderr.read()
