"""A plain text rendering of findings JSON, used when the native module has no report writer."""
from __future__ import annotations

import linecache


def to_text(findings: list[dict], color: bool = False) -> str:
    if not findings:
        return "tilescope: no findings\n"
    red, bold, dim, reset = ("\x1b[31m", "\x1b[1m", "\x1b[2m", "\x1b[0m") if color else ("", "", "", "")
    out = []
    for f in findings:
        loc = f.get("location") or {}
        where = f"{loc.get('file', '?')}:{loc.get('line', 0)}:{loc.get('col', 0)}"
        out.append(f"{red}{bold}{f.get('kind')}{reset} in kernel '{f.get('kernel')}' at {where}")
        src = linecache.getline(loc.get("file", ""), loc.get("line", 0)) if loc.get("file") else ""
        if src.strip():
            out.append(f"    {src.rstrip()}")
            out.append("    " + " " * max(0, loc.get("col", 1) - 1) + "^")
        b = f.get("buffer")
        if b:
            out.append(f"  buffer {b['name']} ({b['dtype']}, shape {b['shape']}, strides {b['strides']}, "
                       f"{b['bytes']} bytes)")
        if f.get("offsets"):
            o = f["offsets"]
            out.append(f"  element offsets {o['min']}..{o['max']} (buffer holds {o['size']})")
        out.append(f"  {dim}programs {f['programs']['count']}, lanes {f['lanes']['count']}{reset}")
        for s in f.get("stack", []):
            out.append(f"    {dim}{s}{reset}")
    out.append(f"tilescope: {len(findings)} finding(s)")
    return "\n".join(out) + "\n"
