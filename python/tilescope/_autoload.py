"""Imported at interpreter start-up (the tilescope .pth file) when TILESCOPE_SANITIZE is set:
every Triton launch of this process runs on tilescope's engine, and the findings are written where
the `tilescope sanitize` parent reads them."""
from __future__ import annotations

import sys


def _activate():
    try:
        from . import _capture, _state
    except Exception as e:  # never break the user's interpreter
        sys.stderr.write(f"tilescope: cannot activate: {e}\n")
        return
    try:
        import triton  # noqa: F401
    except ImportError:
        return  # a process without Triton (a wrapper script, pip): nothing to capture
    try:
        _capture.install()
    except Exception as e:
        sys.stderr.write(f"tilescope: cannot patch Triton: {e}\n")
        return
    _state._ensure_exit_hook()


_activate()
