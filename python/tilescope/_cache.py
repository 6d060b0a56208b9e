"""The TTIR disk cache: Triton's TTIR of each kernel specialization, kept across processes.

Where: ``TILESCOPE_CACHE_DIR``, else ``$XDG_CACHE_HOME/tilescope/ttir`` (an absolute XDG_CACHE_HOME,
as the XDG base directory spec says), else ``~/.cache/tilescope/ttir`` when the home directory exists;
an empty ``TILESCOPE_CACHE_DIR`` turns the cache off, and so does a home directory that does not exist
(HOME=/nonexistent, as service accounts have: tilescope never creates a home directory), with one
warning per process. Size: ``TILESCOPE_CACHE_MAX_SIZE`` bytes (a K, M or G suffix multiplies by 1024,
1024**2, 1024**3; default 256M); when the entries grow past it, the least recently used ones are
removed until they take at most 80% of it. ``tilescope cache clear`` (src/cli/cache.cpp) empties it.

One file per entry, ``<sha256 of the key>.ttir``: a first line of JSON, ``{"tilescope_ttir_cache": 1,
"key": KEY, "sha256": SHA256 of the TTIR's UTF-8 bytes, "bytes": their length, "used_globals": [[MODULE,
NAME], ...] (the global variables Triton checks at each launch of the kernel; optional)}``, then the TTIR.
A read checks all of it; an entry that fails (truncated by a full disk or a killed writer, edited,
another key's content) is never used: a warning names the file, and the caller compiles the kernel
again and replaces the entry. An entry of the earlier format (the TTIR alone) is replaced the same
way, without a warning. An entry is written to ``.<entry name>.<pid>.<random>.tmp`` in the
same directory and renamed over the entry, so that no reader ever sees a partial one. A read sets
the entry's access time (the recency that eviction uses; its modification time stays the time it
was written).

Nothing here raises: a cache that cannot be read or written costs a compilation, never a launch.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time

FORMAT = 1
DEFAULT_MAX_SIZE = 256 * 1024**2
_ENTRY = re.compile(r"^[0-9a-f]{64}\.ttir$")
_TEMP = re.compile(r"^\.[0-9a-f]{64}\.ttir\..+\.tmp$")
_STALE_TEMP_S = 3600  # a temporary file this old belongs to a writer that was killed

_warned_write = False
_warned_home = False
_written_since_scan = None  # bytes this process wrote since its last eviction scan; None: no scan yet


def _warn(msg: str) -> None:
    sys.stderr.write(f"tilescope: warning: {msg}\n")
    sys.stderr.flush()


def directory() -> str | None:
    """The cache directory (see the module docstring), or None when the cache is off."""
    global _warned_home
    root = os.environ.get("TILESCOPE_CACHE_DIR")
    if root is not None:
        return root or None
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, "tilescope", "ttir")
    home = os.path.expanduser("~")
    if home != "~" and os.path.isdir(home):
        return os.path.join(home, ".cache", "tilescope", "ttir")
    if not _warned_home:
        _warned_home = True
        _warn(f"the home directory {home!r} does not exist, so the TTIR cache is off (set TILESCOPE_CACHE_DIR "
              f"or XDG_CACHE_HOME to keep it elsewhere)")
    return None


def max_size() -> int:
    """TILESCOPE_CACHE_MAX_SIZE in bytes (DEFAULT_MAX_SIZE when unset or unreadable, with a warning)."""
    text = os.environ.get("TILESCOPE_CACHE_MAX_SIZE", "").strip()
    if not text:
        return DEFAULT_MAX_SIZE
    m = re.fullmatch(r"(\d+)\s*([KMG]?)(i?B)?", text, re.IGNORECASE)
    if not m:
        _warn(f"TILESCOPE_CACHE_MAX_SIZE={text!r} is not a size (such as 500M); using {DEFAULT_MAX_SIZE >> 20}M")
        return DEFAULT_MAX_SIZE
    return int(m.group(1)) * 1024 ** " KMG".index(m.group(2).upper() or " ")


class Entry:
    """The cache file of one key (see the module docstring for its format)."""

    def __init__(self, root: str, key: str):
        self.root = root
        self.key = key
        self.path = os.path.join(root, hashlib.sha256(key.encode()).hexdigest() + ".ttir")
        self.used_globals: list = []  # [module, name] pairs of a loaded entry (see store)

    @classmethod
    def of(cls, key: str) -> Entry | None:
        """The entry of `key`, or None when the cache is off."""
        root = directory()
        return cls(root, key) if root else None

    def load(self) -> str | None:
        """The TTIR of a sound entry; None when there is none, or when it is damaged (then with a
        warning naming the file: the caller compiles again and `store`s the good TTIR over it)."""
        try:
            with open(self.path, "rb") as f:
                mtime_ns = os.fstat(f.fileno()).st_mtime_ns
                data = f.read()
        except FileNotFoundError:
            return None
        except OSError as e:
            _warn(f"cannot read the TTIR cache entry {self.path} ({e.strerror or e}); compiling the kernel again")
            return None
        if data.startswith((b"#loc", b"module")):
            return None  # TTIR alone, as tilescope wrote entries before they were checked: replaced silently
        problem = self._check(data)
        if problem:
            _warn(f"the TTIR cache entry {self.path} is damaged ({problem}); compiling the kernel again and "
                  f"replacing it")
            return None
        try:  # the access time is the recency that eviction uses
            os.utime(self.path, ns=(time.time_ns(), mtime_ns))
        except OSError:
            pass
        return data.split(b"\n", 1)[1].decode()

    def _check(self, data: bytes) -> str | None:
        """What is wrong with the content `data` of this entry, or None."""
        head, sep, body = data.partition(b"\n")
        try:
            meta = json.loads(head.decode())
        except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
            return "no valid header line"
        if not sep or not isinstance(meta, dict) or meta.get("tilescope_ttir_cache") != FORMAT:
            return "no valid header line"
        if meta.get("key") != self.key:
            return "it was made for another kernel or specialization"
        if meta.get("bytes") != len(body):
            return f"{len(body)} bytes of TTIR where {meta.get('bytes')} were written"
        if meta.get("sha256") != hashlib.sha256(body).hexdigest():
            return "checksum mismatch"
        used = meta.get("used_globals", [])
        if not (isinstance(used, list) and all(isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)
                                               for p in used)):
            return "no valid header line"
        try:
            body.decode()
        except UnicodeDecodeError:
            return "not UTF-8"
        self.used_globals = used
        return None

    def store(self, ttir: str, used_globals: list | None = None) -> None:
        """Write the entry atomically (a temporary file renamed over it); then keep the cache within
        its size. A failure is reported once per process and otherwise ignored. used_globals: the
        [module, name] pairs of the global variables Triton checks at each launch of the kernel
        (_srckey.used_globals), given back by `load` as `self.used_globals`."""
        global _warned_write
        body = ttir.encode()
        head = json.dumps({"tilescope_ttir_cache": FORMAT, "key": self.key,
                           "sha256": hashlib.sha256(body).hexdigest(), "bytes": len(body),
                           "used_globals": used_globals or []})
        data = head.encode() + b"\n" + body
        tmp = os.path.join(self.root, f".{os.path.basename(self.path)}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
        try:
            os.makedirs(self.root, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            os.replace(tmp, self.path)
        except OSError as e:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            if not _warned_write:
                _warned_write = True
                _warn(f"cannot write the TTIR cache in {self.root} ({e.strerror or e}); kernels are compiled "
                      f"again in every process (TILESCOPE_CACHE_DIR= turns the cache off)")
            return
        _after_write(self.root, len(data))


def _after_write(root: str, written: int) -> None:
    # A scan costs a stat per entry: done at a process's first write, then after every 1/16 of the
    # limit written, so that the cache stays within the limit plus what the processes wrote since.
    global _written_since_scan
    limit = max_size()
    if _written_since_scan is not None:
        _written_since_scan += written
        if _written_since_scan < limit // 16:
            return
    _written_since_scan = 0
    evict(root, limit)


def evict(root: str, limit: int) -> None:
    """Remove the least recently used entries of `root` until they take at most 80% of `limit`
    bytes, when they take more than `limit`; and temporary files of writers killed an hour ago."""
    now = time.time()
    entries = []
    try:
        with os.scandir(root) as it:
            for e in it:
                try:
                    if _ENTRY.match(e.name):
                        st = e.stat(follow_symlinks=False)
                        entries.append((st.st_atime, st.st_size, e.path))
                    elif _TEMP.match(e.name) and now - e.stat(follow_symlinks=False).st_mtime > _STALE_TEMP_S:
                        os.unlink(e.path)
                except OSError:
                    continue  # removed meanwhile by another process
    except OSError:
        return
    total = sum(size for _, size, _ in entries)
    if total <= limit:
        return
    entries.sort()
    for _, size, path in entries:
        if total <= limit * 0.8:
            break
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        except OSError:
            continue
        total -= size
