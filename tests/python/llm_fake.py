"""A scripted fake OpenAI-compatible upstream, for faults only (the real model, `model_server` in
conftest.py, is for everything else): the first path segment of the base URL picks the behaviour.

    ok        a proper tiny stream ("Look at op 3 and line 22.")
    hang      never answers; notices when the client closes the connection (`disconnected`)
    slow      one piece of an answer (PARTIAL), then nothing until the client goes away
    error500  a 500 that echoes the Authorization header it was sent, as some servers do
    garbage   a 200 stream of events that are not JSON
    endless   200, then bytes without a line end, for ever
    script/N  the replies of script N (Fake.script), one per POST, in order; and a refusal (HTTP 400, as a
              server without that feature answers) of any request that uses a decoding the script refuses

Every POST is recorded: `requests` holds (path, Authorization header), `bodies` the request bodies as
JSON (what the model would have been told: its messages).
"""
from __future__ import annotations

import http.server
import json
import socket
import threading
import time

PARTIAL = "The load of op 3 reads one element past"  # what `slow` sends before it stalls


class Fake(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), FakeHandler)
        self.requests = []  # (path, Authorization header)
        self.bodies = []  # each POST's body, parsed
        self.disconnected = threading.Event()
        self.got_request = threading.Event()
        self.scripts = {}  # id -> {"replies": [...], "refuse": set of decodings}

    def script(self, replies, refuse=()) -> str:
        """A base URL whose POSTs get `replies` in order: each the content of a streamed answer that ends
        with finish_reason "stop", or (content, finish_reason), or None: no answer until the client goes
        away (as `hang`). `refuse`: decodings answered with HTTP 400
        (not consumed from `replies`): "json_schema" and "json_object" (response_format's type), "grammar"
        (llama.cpp's json_schema / grammar body fields)."""
        n = len(self.scripts)
        self.scripts[n] = {"replies": list(replies), "refuse": set(refuse)}
        return f"{self.url}/script/{n}/v1"

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}"


def chunk(content=None, finish_reason=None):
    delta = {"content": content} if content is not None else {}
    return "data: " + json.dumps({"model": "fake", "choices": [{"delta": delta, "finish_reason": finish_reason}]}) \
        + "\n\n"


class FakeHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.reply(200, json.dumps({"data": [{"id": "fake"}]}).encode())

    def reply(self, status, body, ctype="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def scripted(self, n, body):
        sc = self.server.scripts[n]
        rf = body.get("response_format") or {}
        used = {rf.get("type")} | ({"grammar"} if ("json_schema" in body or "grammar" in body) else set())
        refused = used & sc["refuse"]
        if refused:
            msg = f"unsupported parameter: {sorted(refused)[0]} is not supported by this server"
            self.reply(400, json.dumps({"error": {"message": msg, "type": "invalid_request_error"}}).encode())
            return
        if not sc["replies"]:
            self.reply(500, json.dumps({"error": {"message": "the script has no more replies"}}).encode())
            return
        r = sc["replies"].pop(0)
        if r is None:
            self.wait_for_the_client_to_go()
            return
        content, finish = (r, "stop") if isinstance(r, str) else r
        usage = {"prompt_tokens": 100, "completion_tokens": max(1, len(content) // 4)}
        body = chunk(content) + "data: " + json.dumps({"model": "fake", "choices": [{"delta": {}, "finish_reason":
                                                                                        finish}], "usage": usage}) \
            + "\n\ndata: [DONE]\n\n"
        self.reply(200, body.encode(), "text/event-stream")

    def wait_for_the_client_to_go(self, seconds=60):
        self.connection.settimeout(0.2)
        deadline = time.time() + seconds
        while time.time() < deadline:
            try:
                if self.connection.recv(1) == b"":
                    break
            except socket.timeout:
                continue
            except OSError:
                break
        self.server.disconnected.set()
        self.close_connection = True

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        mode = self.path.split("/")[1]
        self.server.requests.append((self.path, self.headers.get("Authorization")))
        try:
            self.server.bodies.append(json.loads(raw))
        except ValueError:
            self.server.bodies.append(None)
        self.server.got_request.set()
        if mode == "script":
            self.scripted(int(self.path.split("/")[2]), self.server.bodies[-1] or {})
        elif mode == "hang":
            self.wait_for_the_client_to_go()
        elif mode == "slow":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.write(chunk(PARTIAL).encode())
            self.wfile.flush()
            self.wait_for_the_client_to_go()
        elif mode == "error500":
            self.reply(500, json.dumps({"error": {"message": f"boom; you sent {self.headers.get('Authorization')}"}})
                       .encode())
        elif mode == "garbage":
            body = b"data: {not json at all\n\ndata: \x00\xff\xfe\n\n"
            self.reply(200, body, "text/event-stream")
        elif mode == "endless":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            try:
                for _ in range(4096):
                    self.wfile.write(b"x" * 4096)
            except OSError:
                pass
            self.server.disconnected.set()
            self.close_connection = True
        else:  # ok
            body = chunk("Look at op 3 and line 22.") + chunk(finish_reason="stop") + "data: [DONE]\n\n"
            self.reply(200, body.encode(), "text/event-stream")
