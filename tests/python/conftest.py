"""Fixtures shared by the LLM tests (test_llm.py, test_assist.py, test_view_assist.py).

- `model_server`: a real small model behind a real OpenAI-compatible server (llama.cpp's, from the
  xllamacpp wheel, with SmolLM2-135M-Instruct; tests/llm/serve.py in the venv `make llm-model` makes,
  whose python TILESCOPE_LLM_PYTHON names): its base URL. One per pytest process (each pytest-xdist
  worker starts its own on a free port when one of its test files asks for it), stopped at the end.
- `fake_upstream`: the scripted fake of llm_fake.py, for injecting faults only.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading

import pytest

from llm_fake import Fake

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLM_PYTHON = os.environ.get("TILESCOPE_LLM_PYTHON") or os.path.join(ROOT, ".llmvenv", "bin", "python")


@pytest.fixture(scope="session")
def model_server():
    assert os.path.exists(LLM_PYTHON), f"{LLM_PYTHON} is missing: run `make llm-model`"
    p = subprocess.Popen([LLM_PYTHON, os.path.join(ROOT, "tests", "llm", "serve.py")], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    try:
        line = p.stdout.readline().split()
        assert line[:1] == ["READY"], f"the test model server did not start: {line}"
        yield line[1]
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=30)


@pytest.fixture(scope="session")
def fake_upstream():
    f = Fake()
    t = threading.Thread(target=f.serve_forever, daemon=True)
    t.start()
    yield f
    f.shutdown()
    f.server_close()
