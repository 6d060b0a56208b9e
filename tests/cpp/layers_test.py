"""The layers the build enforces, checked over the includes (run by ctest as `Layers`).

Each area is a library (CMakeLists.txt) that only has its own src/ folder on its private include path,
so a private header of another area cannot be included. This check covers what the compiler cannot:
public headers of a higher layer (include/tilescope/<area>/) used from a lower one, and private headers
reached by a relative path. Layers, lowest first: ir <- exec (src/exec and its kernels, src/ops) <-
analysis <- report, launch <- trace <- cli, bindings; launch <- nki <- bindings; ir <- server, llm, gen; trace, llm <- assist <- cli; gen <- cli, bindings; gen, llm, launch, report <- generate <- cli (src/README.md).
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]

# area -> the public areas it may include
ALLOWED = {
    "ir": {"ir"},
    "exec": {"ir", "exec"},
    "analysis": {"ir", "exec", "analysis"},
    "report": {"ir", "exec", "analysis", "report"},
    "launch": {"ir", "exec", "analysis", "launch"},
    "nki": {"ir", "exec", "analysis", "launch", "nki"},
    "trace": {"ir", "exec", "analysis", "report", "launch", "trace"},
    "server": {"ir", "server"},
    "llm": {"ir", "llm"},
    "assist": {"ir", "exec", "analysis", "report", "launch", "trace", "llm", "assist"},
    "gen": {"ir", "gen"},
    "generate": {"ir", "exec", "analysis", "report", "launch", "llm", "gen", "generate"},
    "cli": {"ir", "exec", "analysis", "report", "launch", "trace", "server", "llm", "assist", "gen", "generate"},
    "bindings": {"ir", "exec", "analysis", "report", "launch", "trace", "nki", "gen"},
}


def area_of(path: pathlib.Path) -> str:
    rel = path.relative_to(ROOT).parts
    if rel[0] == "python":
        return "bindings"
    name = rel[1] if rel[0] == "src" else rel[2]  # src/<area>/... or include/tilescope/<area>/...
    return "exec" if name == "ops" else name


def main() -> int:
    problems = []
    files = [p for d in ("src", "include", "python/bindings") for p in (ROOT / d).rglob("*")
             if p.suffix in (".cpp", ".h", ".def", ".inc")]
    for path in files:
        area = area_of(path)
        if area not in ALLOWED:
            problems.append(f"{path.relative_to(ROOT)}: area '{area}' is not in the layer table")
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m:
                continue
            inc = m.group(1)
            where = f"{path.relative_to(ROOT)}:{n}"
            if inc.startswith(("src/", "../")) or "/../" in inc:
                problems.append(f"{where}: '{inc}' reaches into another area's private headers")
            pub = re.match(r"tilescope/([a-z]+)/", inc)
            if pub and pub.group(1) not in ALLOWED[area]:
                problems.append(f"{where}: the {area} layer includes '{inc}' from the higher {pub.group(1)} layer")
            if path.is_relative_to(ROOT / "include") and not pub:
                problems.append(f"{where}: public header includes the private '{inc}'")
    for p in problems:
        print(p)
    print(f"{len(files)} files checked, {len(problems)} layer violations")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
