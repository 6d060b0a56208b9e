"""Imported at interpreter start-up (the tilescope .pth file) when TILESCOPE_SANITIZE is set:
every Triton launch of this process runs on tilescope's engine, and the findings are written where
the `tilescope sanitize` parent reads them. `import nki` (and nki.language, nki.isa) gives tilescope's
NKI modules (tilescope.nki), also when AWS's `nki` package is installed: the kernels run on the engine.

Triton is patched when it is first imported, not here: `.pth` files run while `site` is still
building `sys.path`, so Triton may not be importable yet (a virtual environment made with
``--system-site-packages`` processes its own site-packages, where this file is, before the system's,
where Triton may be), and a process that never imports Triton should not pay for importing it. A
finder at the front of ``sys.meta_path`` sees the first ``import triton`` (or ``import triton.x``),
lets the real finder find it, and patches Triton once its package has been executed.
"""
from __future__ import annotations

import importlib.abc
import sys


def _install() -> None:
    try:
        from . import _capture, _state

        _capture.install()
        _state._ensure_exit_hook()
    except Exception as e:  # never break the user's program
        sys.stderr.write(f"tilescope: cannot patch Triton: {e}\n")


class _Loader(importlib.abc.Loader):
    """Triton's own loader, patching Triton once the package has been executed."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        # The real loader from here on (importlib.resources, reloads); then the patches, which import
        # Triton's submodules.
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        _Finder.remove()
        _install()

    def __getattr__(self, name):  # get_resource_reader, get_filename, is_package, ...
        return getattr(self._loader, name)


class _Finder(importlib.abc.MetaPathFinder):
    """Waits for the first import of the `triton` package (see the module docstring)."""

    def find_spec(self, fullname, path, target=None):
        if fullname != "triton":
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader)
                return spec
        return None

    @staticmethod
    def remove() -> None:
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _Finder)]


class _NkiFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """`nki`, `nki.language` and `nki.isa` are tilescope.nki's modules (README, "NKI kernels")."""

    _NAMES = {"nki": "tilescope.nki", "nki.language": "tilescope.nki.language", "nki.isa": "tilescope.nki.isa",
              "nki.typing": "tilescope.nki.typing"}

    def find_spec(self, fullname, path, target=None):
        if fullname not in self._NAMES:
            return None
        import importlib.util

        return importlib.util.spec_from_loader(fullname, self, is_package=fullname == "nki")

    def create_module(self, spec):
        import importlib

        module = importlib.import_module(self._NAMES[spec.name])
        try:  # the process reports to `tilescope sanitize` also when its kernel stops with an NkiError
            from . import _state

            _state._ensure_exit_hook()
        except Exception:
            pass
        return module

    def exec_module(self, module):
        pass  # already executed as tilescope.nki...


def _activate() -> None:
    if not any(isinstance(f, _NkiFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _NkiFinder())
    if "triton" in sys.modules:  # imported before this ran (python -c, a sitecustomize)
        _install()
    elif not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


_activate()
