"""Reading a tilescope trace file (``tilescope sanitize --trace FILE``) with the standard library's
sqlite3 module, read-only. The schema is documented in docs/trace-format.md; this reader checks the
format name and version and refuses anything else with a message naming the file."""
from __future__ import annotations

import json
import operator
import os
import sqlite3
import urllib.parse
from dataclasses import dataclass, field

FORMAT_VERSION = 4

# numpy dtype of each TTIR element type's storage (src/ir/elem.cpp: bf16 / fp8 as unsigned bit patterns)
_NUMPY = {"i1": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "f16": "float16",
          "bf16": "uint16", "f32": "float32", "f64": "float64", "f8E4M3FN": "uint8", "f8E5M2": "uint8",
          "f8E4M3FNUZ": "uint8", "f8E5M2FNUZ": "uint8", "ptr": "uint64"}


class TraceError(Exception):
    """The file is not a readable tilescope trace (the message names it and says why)."""


@dataclass
class Trace:
    """A trace file's contents. Arrays are numpy arrays; every table of docs/trace-format.md is
    reachable through :attr:`connection` (read-only) as well."""

    path: str
    meta: dict
    launches: list = field(default_factory=list)  # dicts, by launch id (see docs/trace-format.md)
    sites: dict = field(default_factory=dict)  # kernel id -> list of site dicts, by site index
    findings: list = field(default_factory=list)  # every launch's findings (report JSON), with "launch"
    accesses: dict = field(default_factory=dict)  # column -> numpy array; "runs", "oob_runs": lists of (k, 2) arrays
    # Every program of every race and uninitialized-read finding (the table finding_programs): column ->
    # numpy array (launch, finding, side, pid (n x 3), seq); "runs": a list of (k, 2) arrays. Empty for a
    # trace written before the table existed, and for a launch whose dropped["finding_programs"] is set.
    finding_programs: dict = field(default_factory=dict)
    loops: dict = field(default_factory=dict)  # column -> numpy array
    site_stats: dict = field(default_factory=dict)  # column -> numpy array
    sources: dict = field(default_factory=dict)  # path -> text (the latest recorded content)
    connection: sqlite3.Connection | None = None

    def site(self, launch: int, site: int) -> dict:
        """Site `site` of launch `launch`'s kernel."""
        return self.sites[self.launches[launch - 1]["kernel"]][site]

    def offsets(self, row: int, oob: bool = False):
        """The element offsets accessed by access row `row` (its runs expanded), in lane order; with
        `oob`, those of its out-of-bounds lanes."""
        import numpy as np

        runs = self.accesses["oob_runs" if oob else "runs"][row]
        if len(runs) == 0:
            return np.zeros(0, dtype=np.int64)
        return np.concatenate([np.arange(s, s + n, dtype=np.int64) for s, n in runs])

    def programs_of(self, launch: int, finding: int, side: int | None = None) -> list:
        """The programs, as sorted (x, y, z) tuples, that finding `finding` (an index into launch `launch`'s
        findings) involves, from finding_programs: every program, where the finding's JSON names only its
        first five. `side` 0 or 1 keeps one side of a race (0: the finding's op, 1: its other access). Only
        races and uninitialized reads record them: an empty list for other kinds, and when the budget
        dropped the table (the launch's dropped["finding_programs"])."""
        fp = self.finding_programs
        keep = (fp["launch"] == launch) & (fp["finding"] == finding)
        if side is not None:
            keep &= fp["side"] == side
        return sorted({tuple(int(v) for v in p) for p in fp["pid"][keep]})

    def program_ns(self, launch: int):
        """Every program's wall time on tilescope in nanoseconds, as a numpy int64 array by linear id
        x + gx * (y + gy * z) (the table program_times); None when the trace has none for the launch (the
        budget dropped it, the grid had more than 2^22 programs, or an older tilescope wrote the trace)."""
        import numpy as np

        if not self.connection.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'program_times'").fetchone():
            return None
        row = self.connection.execute("SELECT ns FROM program_times WHERE launch = ?", (launch,)).fetchone()
        return None if row is None else np.frombuffer(row[0], dtype="<i8").astype(np.int64)

    def element_counts(self, launch: int, arg: int):
        """(loads, stores) per element of argument `arg` of launch `launch`, over all programs."""
        import numpy as np

        row = self.connection.execute("SELECT loads, stores FROM element_counts WHERE launch = ? AND arg = ?",
                                      (launch, arg)).fetchone()
        if row is None:
            raise KeyError(f"{self.path}: launch {launch} has no element counts for argument {arg}")

        def expand(blob):
            pairs = np.frombuffer(blob, dtype="<i8").reshape(-1, 2)
            return np.repeat(pairs[:, 0], pairs[:, 1])

        return expand(row[0]), expand(row[1])

    def contents(self, launch: int, arg: int, phase: str = "before"):
        """Argument `arg`'s bytes before or after launch `launch`, as a 1-D numpy array of its dtype (empty
        for an empty tensor); None when the budget dropped them. ValueError for a phase other than
        "before" / "after"; KeyError for a launch the trace lacks or an argument that is not a buffer."""
        import numpy as np

        if phase not in ("before", "after"):
            raise ValueError(f"the phase is 'before' or 'after', not {phase!r}")
        launch, arg = _index(launch), _index(arg)  # numpy integers too
        if launch is None or not 1 <= launch <= len(self.launches):
            raise KeyError(f"{self.path}: no launch {launch} (the trace has {len(self.launches)})")
        args = self.launches[launch - 1]["record"]["args"]
        if arg is None or not 0 <= arg < len(args) or args[arg].get("kind") != "buffer":
            raise KeyError(f"{self.path}: launch {launch} has no buffer argument {arg}")

        # An 'after' row marked unchanged: the launch stored nothing into it; the 'before' bytes.
        row = self.connection.execute(
            "SELECT CASE WHEN c.unchanged THEN b.phase ELSE c.phase END, "
            "CASE WHEN c.unchanged THEN b.chunks ELSE c.chunks END, c.bytes, "
            "CASE WHEN c.unchanged THEN b.period ELSE c.period END FROM contents c LEFT JOIN contents b "
            "ON c.unchanged AND b.launch = c.launch AND b.arg = c.arg AND b.phase = 'before' "
            "WHERE c.launch = ? AND c.arg = ? AND c.phase = ?", (launch, arg, phase)).fetchone()
        if row is None or not row[1]:
            return None
        chunks = self.connection.execute(
            "SELECT chunk, data FROM content_chunks WHERE launch = ? AND arg = ? AND phase = ? ORDER BY chunk",
            (launch, arg, row[0])).fetchall()
        if [c[0] for c in chunks] != list(range(row[1])):
            raise TraceError(f"{self.path}: launch {launch}: the stored contents of argument {arg} miss a "
                             "chunk: the trace is damaged")
        a = self.launches[launch - 1]["record"]["args"][arg]
        dt = np.dtype(_NUMPY.get(a.get("dtype"), "uint8"))
        data, period = b"".join(c[1] for c in chunks), row[3]
        if period:  # one period of a repeating pattern, stored once
            data = data * (row[2] // period)
        return np.frombuffer(data[: len(data) // dt.itemsize * dt.itemsize], dtype=dt)


def _index(x):
    """`x` as a Python int when it is an integer (numpy's too), else None."""
    try:
        return operator.index(x)
    except TypeError:
        return None


def _open(path: str) -> sqlite3.Connection:
    if not os.path.exists(path):
        raise TraceError(f"{path}: no such trace file")
    if os.path.isdir(path):
        raise TraceError(f"{path}: is a directory, not a trace file")
    uri = "file:" + urllib.parse.quote(os.path.abspath(path)) + "?mode=ro"
    try:
        con = sqlite3.connect(uri, uri=True)
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as e:
        if "not a database" in str(e):
            raise TraceError(f"{path}: not a tilescope trace (not an SQLite database)") from None
        raise TraceError(f"{path}: the trace is truncated or corrupted (SQLite: {e})") from None
    if "meta" not in tables:
        raise TraceError(f"{path}: not a tilescope trace (an SQLite database without tilescope's meta table)")
    try:
        meta = dict(con.execute("SELECT key, value FROM meta"))
    except sqlite3.DatabaseError as e:  # the meta table's pages are damaged
        raise TraceError(f"{path}: the trace is truncated or corrupted (SQLite: {e})") from None
    if meta.get("format") != "tilescope-trace":
        raise TraceError(f"{path}: not a tilescope trace (an SQLite database without tilescope's meta table)")
    v = str(meta.get("version", ""))
    if not v.isdigit():  # the same rule as the C++ reader: digits only
        raise TraceError(f"{path}: unknown trace format version {v!r} "
                         f"(this tilescope reads version {FORMAT_VERSION})")
    version = int(v)
    if version > FORMAT_VERSION:
        raise TraceError(f"{path}: trace format version {version} is newer than this tilescope reads "
                         f"({FORMAT_VERSION}); use a newer tilescope")
    if version != FORMAT_VERSION:
        raise TraceError(f"{path}: unknown trace format version {version} "
                         f"(this tilescope reads version {FORMAT_VERSION})")
    try:
        check = con.execute("PRAGMA quick_check").fetchone()[0]
    except sqlite3.DatabaseError as e:
        raise TraceError(f"{path}: the trace is truncated or corrupted (SQLite: {e})") from None
    if check != "ok":
        raise TraceError(f"{path}: the trace is truncated or corrupted (SQLite's integrity check: {check})")
    return con


def load_trace(path) -> Trace:
    """Read the trace file at `path` (read-only). Raises TraceError naming the file when it is missing,
    not an SQLite database, not a tilescope trace, of another format version, truncated or corrupted."""
    import numpy as np

    path = os.fspath(path)
    con = _open(path)
    try:
        t = Trace(path=path, meta=dict(con.execute("SELECT key, value FROM meta")), connection=con)
        cols = ("id", "kernel", "name", "process", "started", "ended", "seconds", "grid_x", "grid_y", "grid_z",
                "programs", "record", "analyses", "findings", "reports", "statistics", "error", "detail_stride",
                "dropped", "bytes")
        language = "(SELECT language FROM kernels WHERE kernels.id = launches.kernel)"
        for row in con.execute(f"SELECT {', '.join(cols)}, {language} FROM launches ORDER BY id"):
            d = dict(zip(cols + ("language",), row))
            for k in ("record", "analyses", "findings", "reports", "statistics", "dropped"):
                d[k] = json.loads(d[k])
            d["grid"] = (d.pop("grid_x"), d.pop("grid_y"), d.pop("grid_z"))
            t.launches.append(d)
            for f in d["findings"]:
                t.findings.append(dict(f, launch=d["id"]))
        scols = ("kernel", "site", "op", "ttir_line", "ttir_col", "file", "line", "col", "var", "inlined_from",
                 "dot")
        for row in con.execute(f"SELECT {', '.join(scols)} FROM sites ORDER BY kernel, site"):
            d = dict(zip(scols, row))
            d["inlined_from"] = json.loads(d["inlined_from"])
            d["dot"] = json.loads(d["dot"]) if d["dot"] else None
            t.sites.setdefault(d["kernel"], []).append(d)
        acols = ("launch", "site", "pid_x", "pid_y", "pid_z", "seq", "arg", "kind", "lanes", "active", "oob")
        rows = con.execute(f"SELECT {', '.join(acols)}, runs, oob_runs FROM accesses ORDER BY rowid").fetchall()
        t.accesses = _columns(np, acols, [r[:-2] for r in rows])
        t.accesses["pid"] = np.stack([t.accesses.pop("pid_x"), t.accesses.pop("pid_y"), t.accesses.pop("pid_z")],
                                     axis=1) if rows else np.zeros((0, 3), dtype=np.int64)
        t.accesses["runs"] = [np.frombuffer(r[-2], dtype="<i8").reshape(-1, 2) for r in rows]
        t.accesses["oob_runs"] = [np.frombuffer(r[-1], dtype="<i8").reshape(-1, 2) for r in rows]
        fcols = ("launch", "finding", "side", "pid_x", "pid_y", "pid_z", "seq")
        has_fp = con.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'finding_programs'").fetchone()
        rows = con.execute(f"SELECT {', '.join(fcols)}, runs FROM finding_programs ORDER BY launch, finding, side, "
                           "pid_z, pid_y, pid_x, seq").fetchall() if has_fp else []
        t.finding_programs = _columns(np, fcols, [r[:-1] for r in rows])
        xyz = [t.finding_programs.pop(c) for c in ("pid_x", "pid_y", "pid_z")]
        t.finding_programs["pid"] = np.stack(xyz, axis=1) if rows else np.zeros((0, 3), dtype=np.int64)
        t.finding_programs["runs"] = [np.frombuffer(r[-1], dtype="<i8").reshape(-1, 2) for r in rows]
        lcols = ("launch", "site", "pid_x", "pid_y", "pid_z", "executions", "trips")
        t.loops = _columns(np, lcols, con.execute(f"SELECT {', '.join(lcols)} FROM loops ORDER BY rowid").fetchall())
        scols2 = ("launch", "site", "executions", "lanes", "active", "oob", "bytes", "stored")
        t.site_stats = _columns(np, scols2, con.execute(
            f"SELECT {', '.join(scols2)} FROM site_stats ORDER BY launch, site").fetchall())
        for p, content in con.execute("SELECT path, content FROM sources ORDER BY id"):
            t.sources[p] = bytes(content).decode("utf-8", "replace")
    except sqlite3.DatabaseError as e:
        con.close()
        raise TraceError(f"{path}: the trace is truncated or corrupted (SQLite: {e})") from None
    return t


def _columns(np, names, rows) -> dict:
    out = {}
    for i, n in enumerate(names):
        vals = [r[i] for r in rows]
        out[n] = np.array(vals, dtype=object if n == "kind" else np.int64) if vals else np.zeros(
            0, dtype=object if n == "kind" else np.int64)
    if "kind" in out:
        out["kind"] = out["kind"].astype(str)
    return out
