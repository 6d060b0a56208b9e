"""tilescope: run Triton kernels on the CPU and sanitize every memory access.

    @tilescope.trace("sanitizer")
    @triton.jit
    def kernel(...): ...

Launches of a traced kernel run on tilescope's engine (no GPU needed) and the program continues with
the real outputs; findings are printed at exit (or see ``tilescope.findings()``). For unmodified
programs: ``tilescope sanitize -- python script.py`` or ``tilescope sanitize -- pytest ...``.
"""
from __future__ import annotations

from ._state import clear as clear_findings
from ._state import findings, print_report, report_text

__all__ = ["trace", "profile", "findings", "clear_findings", "report_text", "print_report", "CompileError", "LaunchError",
           "TilescopeError", "install", "load_trace", "TraceError", "gen", "GenError", "GenResult"]

_CLIENTS = ("sanitizer",)


def __getattr__(name):
    if name in ("CompileError", "LaunchError"):
        from . import _capture

        return getattr(_capture, name)
    if name in ("gen", "GenError", "GenResult"):
        from . import _gen

        return getattr(_gen, name)
    if name in ("load_trace", "TraceError"):
        from . import _trace

        return getattr(_trace, name)
    if name == "TilescopeError":
        from . import _native

        return _native.TilescopeError
    raise AttributeError(name)


def install() -> None:
    """Patch Triton so that traced kernels (or, with TILESCOPE_SANITIZE, all) run on tilescope."""
    from . import _capture

    _capture.install()


class profile:
    """Context manager: every Triton launch inside the block runs on tilescope's engine under the profiler
    (README "Profile"), and its per-launch report (a dict, README "Profile JSON") is appended to
    ``launches``::

        with tilescope.profile(gpu="H200") as p:
            kernel[grid](...)
        print(p.text())          # the summary `tilescope profile` prints
        p.launches[0]["memory"]["load"]["sectors"]

    ``gpu``: the roofline's GPU (H100, H200, A100, B200, MI300X, L4); ``num_warps``: warps per program for
    the sector model (default: each launch's own ``num_warps``, else 4). The kernels' outputs are computed
    as usual. Blocks nest (the innermost collects)."""

    def __init__(self, gpu: str = "H100", num_warps: int | None = None):
        self.options = {"gpu": str(gpu)}
        if num_warps is not None:
            self.options["num_warps"] = int(num_warps)
        self.launches: list[dict] = []

    def __enter__(self):
        from . import _capture, _state

        _capture.install()
        _state.profilers.append(self)
        return self

    def __exit__(self, *exc):
        from . import _state

        _state.profilers.remove(self)
        return False

    def text(self, top: int = 5) -> str:
        """The summary of this block's launches (hottest `top` lines per kernel)."""
        import json

        from . import _native

        return _native.profile_text(json.dumps(self.launches), top)

    def json(self) -> dict:
        """The document `tilescope profile --json` writes: {"version": 1, "launches": [...]}."""
        return {"version": 1, "launches": list(self.launches)}


def trace(client="sanitizer", **options):
    """Decorator: launches of the kernel run on tilescope's CPU engine under ``client``.

    Spelled as triton-viz's decorator (``@triton_viz.trace("sanitizer")``, also ``client=``). Put it
    above ``@triton.jit`` (or above ``@triton.autotune`` / ``@triton.heuristics``); it returns the
    kernel object itself, marked, so everything else about it stays as Triton made it.

    Options: ``races=False`` turns the race detector off for this kernel (it is on by default, as in
    ``tilescope sanitize``; ``--no-races`` there turns it off for every kernel); ``uninit=False`` turns off
    the reporting of reads of uninitialized memory (torch.empty, numpy.empty) for this kernel's launches
    (README, "Uninitialized memory")."""
    unknown = set(options) - {"races", "uninit"}
    if unknown:
        raise TypeError(
            f"tilescope.trace: unknown option(s) {', '.join(sorted(unknown))} (supported: races, uninit)")
    if callable(client) and not isinstance(client, str):  # used bare: @tilescope.trace
        return trace()(client)
    name = getattr(client, "name", client)
    if name not in _CLIENTS:
        raise ValueError(f"tilescope.trace: unknown client {client!r} (supported: {', '.join(_CLIENTS)})")

    def wrap(kernel):
        from . import _capture

        _capture.install()
        base = _capture._base_jit(kernel)
        if base is None:
            raise TypeError(f"tilescope.trace: {kernel!r} is not a @triton.jit kernel")
        base._tilescope_trace = True
        if "races" in options:
            base._tilescope_races = bool(options["races"])
        base._tilescope_uninit = bool(options.get("uninit", True))
        from . import _state

        _state._ensure_exit_hook()
        return kernel

    return wrap
