"""`python -m tilescope ...` and the `tilescope` console command: run the bundled C++ executable."""
from __future__ import annotations

import os
import shutil
import sys


def binary() -> str:
    """Path of the `tilescope` executable: TILESCOPE_BIN, the one installed in this package, or PATH."""
    env = os.environ.get("TILESCOPE_BIN")
    if env:
        return env
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "tilescope")
    if os.path.exists(here):
        return here
    found = shutil.which("tilescope-native")
    if found:
        return found
    raise SystemExit("tilescope: the tilescope executable is not installed with this package")


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    exe = binary()
    env = os.environ.copy()
    # The child processes of `sanitize` run the same Python, with this package importable.
    env.setdefault("TILESCOPE_PYTHON", sys.executable)
    os.execve(exe, [exe] + args, env)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
