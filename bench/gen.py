#!/usr/bin/env python3
"""The kernel generator's evaluation with the local test model, recorded in bench/GEN.md (`make bench-gen`).

Starts the test model's server (tests/llm/serve.py in .llmvenv: SmolLM2-135M-Instruct behind llama.cpp's
server, ../shared/reference/llm-test-server.md), runs `tilescope gen eval` over the whole suite (tasks/)
with the Python baseline, and writes bench/GEN.md: the settings, the machine, the summary per stage, and
every task's attempts. With --from EVAL_JSON it only writes GEN.md from an earlier run's eval.json.

    python3 bench/gen.py [--samples K] [--attempts N] [--max-ops N] [--tasks a,b] [--out DIR]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("TILESCOPE_BIN") or os.path.join(ROOT, "build", "tilescope")
LLM_PYTHON = os.environ.get("TILESCOPE_LLM_PYTHON") or os.path.join(ROOT, ".llmvenv", "bin", "python")
STAGES = ["none", "json", "schema", "semantics", "interface", "verified", "compiled", "correct", "clean"]


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{os.cpu_count()} cores ({cpu}), {platform.system()} {platform.release()}"


def suite_note(doc: dict) -> str:
    """"the 42 tasks of `tasks/`", or which of them a run took (--tasks)."""
    suite = sorted(f[:-3] for f in os.listdir(os.path.join(ROOT, "tasks")) if f.endswith(".py") and f[0] != "_")
    ran = sorted({r["task"] for r in doc["results"] if r["mode"] == "ast"})
    if len(ran) >= len(suite):
        return f"the {len(suite)} tasks of `tasks/`"
    every = " (every third task of the suite in alphabetical order)" if ran == suite[::3] else ""
    return f"{len(ran)} of the {len(suite)} tasks of `tasks/`{every}: {', '.join(ran)}"


def render(doc: dict, extra: dict) -> str:
    k = doc["samples"]
    lines = [
        "# The kernel generator with the local test model",
        "",
        f"Recorded {extra.get('date', '?')} by `make bench-gen` (bench/gen.py) at commit {extra.get('commit', '?')}, "
        f"on {extra.get('machine', '?')}{'; ' + extra['load'] if extra.get('load') else ''}.",
        "",
        f"- Model: `{os.path.basename(doc['model'])}` (SmolLM2-135M-Instruct, Q4_1) behind llama.cpp's server (the "
        "xllamacpp wheel; 8192-token context, 2 threads): ../shared/reference/llm-test-server.md.",
        f"- `tilescope gen eval -k {k} --attempts {doc['attempts']} --max-ops {doc['max_ops']} --max-tokens "
        f"{doc['max_tokens']} --context {doc.get('context', 0)} --temperature {extra.get('temperature', '?')} "
        f"--baseline`, decoding `{doc['decoding']}` "
        f"over {suite_note(doc)}; wall time {doc['wall_seconds'] / 3600:.1f} h.",
        "- `ast`: the model answers with the kernel AST under the request's JSON Schema (the task's interface fixed, "
        "the lists bounded); `python`: the same model asked for Triton Python with no schema (the baseline), judged "
        "the same way. Each column counts attempts that passed that stage (README, \"The kernel generator\"); "
        "pass@1 and pass@k are over tasks.",
        "",
        doc.get("table") or "",
    ]
    if not doc.get("complete", True):
        done = {(r["mode"], r["task"]) for r in doc["results"]}
        lines += ["", f"**This run was stopped before its end**: {len(done)} (mode, task) pairs were measured; the "
                  "table counts only those."]
    ast_attempts = [a for r in doc["results"] if r["mode"] == "ast" for a in r["attempts"]]
    complete = [a for a in ast_attempts if a["finish_reason"] == "stop" and not a["llm_error"]]
    valid = [a for a in complete if STAGES.index(a["evaluation"]["reached"]) >= STAGES.index("schema")]
    lines += [
        "",
        f"Schema-valid JSON: {len(valid)} of {len(ast_attempts)} AST attempts ({len(complete)} ended with "
        "finish_reason \"stop\"; the others were cut at max_tokens or failed).",
        "",
        "## Every task",
        "",
        "The stage each attempt reached (`none`: not JSON; `json`: JSON, not the format; `schema`: the format, "
        "wrong names or types; `semantics`: a valid kernel, not the task's interface; ... `clean`: correct and "
        "no finding), and the first line of the feedback that went back to the model.",
        "",
        "| task | mode | attempts: stage reached | first feedback |",
        "|---|---|---|---|",
    ]
    for r in doc["results"]:
        stages = ", ".join(
            (a["evaluation"]["reached"] if not a["llm_error"] else "no answer")
            + (" (cut)" if a["finish_reason"] == "length" else "") for a in r["attempts"])
        fb = next((f for a in r["attempts"] for f in a.get("feedback", [])), "")
        fb = fb.replace("|", "\\|").replace("\n", " ")
        if len(fb) > 160:
            fb = fb[:157] + "..."
        lines.append(f"| {r['task']} | {r['mode']} | {stages} | {fb} |")
    if doc.get("notes"):
        lines += ["", "Notes of the run:", ""] + [f"- {n}" for n in sorted(set(doc["notes"]))]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", "-k", type=int, default=1)
    ap.add_argument("--attempts", type=int, default=2)
    # A 135M model repeats ops until the schema's bound; 16 ops and 2 regions of 8 at about 65 tokens an op as it
    # spaces them end within 3200 tokens, which leave the 4500 of the first prompt room in its 8192 (README).
    ap.add_argument("--max-ops", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=3200)
    ap.add_argument("--context", type=int, default=8192)
    ap.add_argument("--temperature", type=float, default=0.7)
    ap.add_argument("--tasks", default="")
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "gen-eval"))
    ap.add_argument("--from", dest="from_json", default="", help="write GEN.md from this eval.json")
    ap.add_argument("--markdown", default=os.path.join(ROOT, "bench", "GEN.md"))
    ap.add_argument("--load", default="", help="a note on what else ran on the machine meanwhile")
    args = ap.parse_args()
    extra = {"date": datetime.date.today().isoformat(), "machine": machine(), "temperature": args.temperature,
             "load": args.load,
             "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                      cwd=ROOT).stdout.strip()}
    if args.from_json:
        with open(args.from_json) as f:
            doc = json.load(f)
    else:
        server = subprocess.Popen([LLM_PYTHON, os.path.join(ROOT, "tests", "llm", "serve.py")],
                                  stdout=subprocess.PIPE, text=True)
        try:
            line = server.stdout.readline().split()
            if line[:1] != ["READY"]:
                print(f"the test model's server did not start: {line}", file=sys.stderr)
                return 1
            cmd = [BIN, "gen", "eval", "--base-url", line[1], "-k", str(args.samples), "--attempts",
                   str(args.attempts), "--max-ops", str(args.max_ops), "--max-tokens", str(args.max_tokens),
                   "--temperature", str(args.temperature), "--context", str(args.context), "--baseline", "-o",
                   args.out]
            if args.tasks:
                cmd += ["--tasks", args.tasks]
            t0 = time.time()
            rc = subprocess.call(cmd, env=dict(os.environ, TILESCOPE_PYTHON=sys.executable))
            if rc != 0:
                return rc
            print(f"eval took {time.time() - t0:.0f} s", file=sys.stderr)
        finally:
            server.terminate()
            server.wait(timeout=30)
        with open(os.path.join(args.out, "eval.json")) as f:
            doc = json.load(f)
    with open(args.markdown, "w") as f:
        f.write(render(doc, extra))
    print(f"wrote {args.markdown}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
