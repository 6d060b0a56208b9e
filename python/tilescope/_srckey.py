"""The source part of the TTIR disk cache's key (_cache.py): what a kernel's TTIR can depend on.

Triton's own key of a kernel's source (``JITFunction.cache_key``) parses the source and walks its AST
(``DependenciesFinder``) to find the @jit functions it calls and the global constants it reads: 0.5-3.5 ms
per kernel on this project's machine, paid by every process at its first launch of each kernel, where a
launch read from the cache costs well under a millisecond otherwise. ``fingerprint`` covers the same
ground without parsing (0.1-0.2 ms on Liger's kernels at a process's first call), and more of it:

- each function's source text, its file and ``def`` line (the TTIR's locations count from them), its
  ``noinline`` and its parameters' default values;
- every name its code object uses (globals, attribute names, free variables, also in nested code
  objects; string constants that are identifiers) that names something in the function's globals or its
  closure; and a local variable's name where a global of that name is one Triton's code generator reads
  (it reads the global when no assignment to the local ran; other globals sharing a local's name, such
  as a script's tensors, are left out); a source replaced after the definition: every identifier of its
  text instead. Each with that thing's fingerprint: a scalar, a number (numpy's scalars) or
  ``tl.constexpr`` by value, an Enum member by class and name, a @jit function by its own fingerprint,
  also behind a ``staticmethod`` or ``classmethod``
  (recursively: a helper in another file is in the key), an aggregate class (``tl.core._aggregate``) by
  its ``__init__`` and methods, a list, tuple, set or dict by its items, a module, class or other object
  by its name and the fingerprints of its attributes that those names name (``helpers.fn``,
  ``cfg.BLOCK``: reached however deep the attribute chain), any other callable by its qualified name
  (Triton refuses a kernel that calls one, so nothing a kernel can use is reached through it).

Triton's own modules and objects are fingerprinted by name (the Triton version is in the key), torch's
objects by their repr (no @jit helper is reached through them). Attributes are read as stored (the
instance's, its class's and their bases' ``__dict__``), never through code. Where that cannot see what
the source reaches, there is no fingerprint and the caller uses Triton's key: a module with a
``__getattr__`` (its own, PEP 562, or its class's, as lazy loaders do; torch's excepted: they give
torch's own submodules) that lacks a name the code uses, an object whose class has ``__getattr__``,
``__getattribute__`` or ``__slots__`` or that has no ``__dict__``, a property or other descriptor read on
an instance, a collection of more than 256 items. Everything Triton's key depends on is in the fingerprint (it also holds a
constant reached through an attribute, which Triton's key leaves out), so a fingerprint that matches
never names a stale TTIR; a change to anything the code names only costs a compilation. No value is
fingerprinted by its address: the fingerprint is the same in every process that has the same source and
values. Known gaps (names Triton's code generator reads that the code object does not list): a name used
only in a local variable's annotation (``v: ANN = ...``), and in an ``assert`` under ``python -O``.

``used_globals`` / ``restore_used_globals``: Triton checks at every launch that the global variables a
kernel read at compile time still hold those values (``JITFunction.used_global_vals``, filled by its
``cache_key``). A kernel read from the cache never computes that key; the entry keeps the list of those
globals (module and name) so that the same check holds for it.
"""
from __future__ import annotations

import copy
import enum
import hashlib
import inspect
import numbers
import re
import sys
import textwrap
import types

_IDENT = re.compile(r"\w+")
_ASCII_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)  # the same on ASCII text, faster
_SCALARS = (type(None), bool, int, float, complex, str, bytes)
_MAX_ITEMS = 256  # a longer list, tuple, set or dict that the source names: Triton's key instead


class _Dynamic(Exception):
    """A value whose effect on the TTIR cannot be seen without running code (module docstring): no
    fingerprint, Triton's key instead."""


def _is_triton(name: str) -> bool:
    return name == "triton" or name.startswith("triton.")


def _is_torch(name: str) -> bool:
    return name.partition(".")[0] == "torch"


def _qualname(obj) -> str:
    """Module and qualified name of a class or function, else of the object's class (an attribute read on
    any other object could run its __getattr__)."""
    if not isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
        obj = type(obj)
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', '?')}"


class _Walk:
    """One fingerprint computation: memoised per (object, identifier set); cycles end at a placeholder."""

    def __init__(self):
        from triton import knobs
        from triton.language.core import constexpr
        from triton.runtime.jit import JITCallable, get_jit_fn_file_line

        self.jit, self.constexpr, self.file_line = JITCallable, constexpr, get_jit_fn_file_line
        self.any_global = bool(knobs.compilation.allow_non_constexpr_globals)
        self.memo: dict = {}
        self.keep: list = []  # objects whose id() is in memo, alive until the walk ends

    def function(self, fn) -> str:
        """Fingerprint of a @jit function (a JITCallable)."""
        key = ("fn", id(fn))
        if key in self.memo:
            return self.memo[key]
        self.memo[key] = f"recursion:{_qualname(fn.fn)}"
        self.keep.append(fn)
        src = fn.src
        ids, local = _names(fn, src)
        self.keep.append(ids)
        # The function's globals, then its closure (the cells of its free variables): where Triton looks.
        scopes = [fn.fn.__globals__, {}]
        for name, cell in zip(fn.fn.__code__.co_freevars, fn.fn.__closure__ or ()):
            try:
                scopes[1][name] = cell.cell_contents
            except ValueError:  # an empty cell
                pass
        # The file and the `def` line: the TTIR's locations of this function's ops are counted from them.
        parts = [src, *self.file_line(fn), repr(getattr(fn, "noinline", None))]
        # Default values of its parameters, fixed when it was defined (a helper called without them).
        parts.append(self.value(fn.fn.__defaults__ or (), ids))
        parts.append(self.value(fn.fn.__kwdefaults__ or {}, ids))
        for i, scope in enumerate(scopes):
            for name in sorted(n for n in (scope if len(scope) < len(ids) else ids) if n in ids and n in scope):
                parts.append(f"{i}:{name}={self.value(scope[name], ids)}")
            # A local that shares a global's name: the global where Triton would read it.
            for name in sorted(n for n in local if n in scope and self.triton_global(scope[n])):
                parts.append(f"{i}:local {name}={self.value(scope[name], ids)}")
        fp = hashlib.sha256("\x00".join(map(str, parts)).encode()).hexdigest()
        self.memo[key] = fp
        return fp

    def triton_global(self, v) -> bool:
        """Whether Triton's code generator reads global `v` (its global_lookup accepts it): a constexpr, a
        module, a @jit function, Triton's own objects, dtypes, aggregates and namedtuples; any value when
        non-constexpr globals are allowed (TRITON_ALLOW_NON_CONSTEXPR_GLOBALS)."""
        cls = v if isinstance(v, type) else type(v)
        return (self.any_global or isinstance(v, (self.constexpr, self.jit, types.ModuleType))
                or _is_triton(getattr(cls, "__module__", "") or "")
                or bool(inspect.getattr_static(v, "__triton_aggregate__", False))
                or bool(inspect.getattr_static(v, "__triton_builtin__", False))
                or (isinstance(v, tuple) and hasattr(type(v), "_fields")))

    def value(self, v, ids: frozenset) -> str:
        """Fingerprint of a value a source names, its attributes looked up by the identifiers `ids`.
        Raises _Dynamic where the value's effect on the TTIR cannot be seen without running code."""
        if isinstance(v, _SCALARS):
            return f"{type(v).__name__}:{v!r}"
        if isinstance(v, self.jit):
            return f"jit:{self.function(v)}"
        if isinstance(v, self.constexpr):
            return f"constexpr:{self.value(v.value, ids)}"
        if isinstance(v, enum.Enum):
            return f"enum:{_qualname(type(v))}.{v.name}={self.value(v.value, ids)}"
        if isinstance(v, numbers.Number):  # numpy's scalars and other numbers: by value
            return f"{_qualname(type(v))}:{v!r}"
        if isinstance(v, (staticmethod, classmethod)):  # as a class's attribute: the function it wraps
            return f"{type(v).__name__}:{self.value(v.__func__, ids)}"
        key = (id(v), id(ids))
        if key in self.memo:
            return self.memo[key]
        self.memo[key] = "recursion"
        self.keep.append(v)
        fp = self._value(v, ids)
        self.memo[key] = fp
        return fp

    def _value(self, v, ids: frozenset) -> str:
        if isinstance(v, (tuple, list, frozenset, set, dict)):
            if len(v) > _MAX_ITEMS:
                raise _Dynamic(f"a {type(v).__name__} of {len(v)} items")
            if isinstance(v, dict):
                return "dict:{" + ",".join(f"{self.value(k, ids)}:{self.value(x, ids)}" for k, x in v.items()) + "}"
            items = [self.value(x, ids) for x in v]
            return f"{type(v).__name__}:[{','.join(sorted(items) if isinstance(v, (set, frozenset)) else items)}]"
        if isinstance(v, types.ModuleType):
            head = f"module:{v.__name__}"
            if _is_triton(v.__name__):
                return head  # Triton's own: the Triton version is in the key
        elif callable(v) and not isinstance(v, type):
            # A function or other callable that is not @jit: Triton refuses a kernel that calls one, so
            # nothing a kernel can use is reached through it.
            return f"callable:{_qualname(v)}"
        else:
            cls = v if isinstance(v, type) else type(v)
            head = f"{'class' if isinstance(v, type) else 'object'}:{_qualname(v)}"
            module = getattr(cls, "__module__", "") or ""
            if _is_triton(module):
                # Triton's own classes and objects (dtypes, ...): by name, or by value where it has one.
                name = inspect.getattr_static(v, "name", None)
                return head + (f"={name}" if isinstance(name, str) else "")
            if _is_torch(module):
                # torch's own (dtypes, op namespaces): no @jit helper is reached through them; by value.
                text = repr(v)
                return head + ("" if "0x" in text else f"={text}")
            if isinstance(v, type) and inspect.getattr_static(v, "__triton_aggregate__", False):
                # A @tl.core._aggregate class: its __init__ and methods, as Triton's own key has them.
                return head + "{" + ",".join(self.value(a, ids) for a in inspect.getattr_static(v, "hash_attrs", ())) + "}"
        attrs = [f"{a}={self.value(x, ids)}" for a, x in _attributes(v, ids)]
        return head + "{" + ",".join(attrs) + "}"


def _own_source(fn, src: str) -> bool:
    """Whether `src`, the source Triton compiles, is the one the function was defined with (as
    JITCallable derives it: the definition's text dedented, from its `def` line), so that its code object
    is that source's; false after the source was replaced (`_unsafe_update_src`)."""
    raw = "".join(fn.raw_src)
    if raw.endswith(src):  # a kernel at the module's top level with no whitespace-only line: most of them
        return True
    text = textwrap.dedent(raw)
    m = re.search(r"^def\s+\w+\s*\(", text, re.MULTILINE)
    return m is not None and text[m.start():] == src


def _names(fn, src: str) -> tuple[frozenset, frozenset]:
    """The names the source can refer to globals or attributes by, and the names of its local variables
    (not its parameters). Where the source Triton compiles is the function's own, the names its code object
    uses (globals, attributes, free variables; nested code objects; string constants that are identifiers)
    and its local variables' names: a local is read from the globals where the code reads it before it is
    assigned (Triton looks a name up in the globals when no assignment ran). Otherwise every identifier of
    the text, and no locals."""
    if _own_source(fn, src):
        names: set = set()
        local: set = set()
        stack = [fn.fn.__code__]
        while stack:
            code = stack.pop()
            names.update(code.co_names, code.co_freevars)
            params = code.co_argcount + code.co_kwonlyargcount
            local.update(code.co_varnames[params:], code.co_cellvars)
            for c in code.co_consts:
                if isinstance(c, types.CodeType):
                    stack.append(c)
                elif isinstance(c, str) and c.isidentifier():
                    names.add(c)
        return frozenset(names), frozenset(local - names)
    return frozenset((_ASCII_IDENT if src.isascii() else _IDENT).findall(src)), frozenset()


def _attributes(v, ids: frozenset):
    """(name, value) of `v`'s attributes named in `ids`, sorted, as Python would find them for a plain
    attribute read, without calling anything (no property, no __getattr__): the instance's own
    __dict__, then its class's and their bases' (object's left out); a module's own __dict__."""
    if isinstance(v, types.ModuleType):
        dicts = [v.__dict__]
        # A module's own __getattr__ (PEP 562: lazy submodules), or its class's (a module whose class was
        # replaced, as lazy loaders do), may give a name that is not in it yet. torch's give torch's own
        # submodules, which hold no kernel's @jit helpers.
        dynamic = "__getattr__" in v.__dict__ or type(v) is not types.ModuleType
        if dynamic and not _is_torch(v.__name__) and not ids <= v.__dict__.keys():
            raise _Dynamic(v.__name__)
    else:
        cls = v if isinstance(v, type) else type(v)
        dicts = [c.__dict__ for c in cls.__mro__ if c is not object]
        if not isinstance(v, type) and any("__getattr__" in d or "__getattribute__" in d or "__slots__" in d
                                           for d in dicts):
            raise _Dynamic(_qualname(v))  # its attributes are made by code, or are not in a __dict__
        if not isinstance(v, type):
            try:
                own = object.__getattribute__(v, "__dict__")
            except (AttributeError, TypeError):
                own = None
            if not isinstance(own, dict):
                raise _Dynamic(f"{_qualname(v)} (no __dict__)")  # its state is not where it can be read
            dicts.insert(0, own)
    found = {}
    for d in dicts:
        for a in (d if len(d) < len(ids) else ids):
            if a in ids and a in d and a not in found:
                found[a] = d[a]
    if not isinstance(v, (types.ModuleType, type)):
        for a, x in found.items():  # on an instance, a class attribute that is a property runs code
            if hasattr(type(x), "__get__") and not isinstance(x, (types.FunctionType, staticmethod, classmethod)):
                raise _Dynamic(f"{_qualname(v)}.{a}")
    return sorted(found.items())


def fingerprint(jitfn) -> str | None:
    """The fingerprint of a @jit function's source and of everything it names (module docstring), or
    None where it cannot be made (a value only code could show, or any other failure): the caller then
    uses Triton's key. Raises nothing."""
    try:
        return _Walk().function(jitfn)
    except Exception:  # noqa: BLE001 - an odd global must never stop a launch
        return None


def used_globals(jitfn) -> list[list[str]]:
    """The globals Triton's compile-time check watches for `jitfn` (its ``used_global_vals``, filled
    by ``cache_key``), as [module name, variable name] pairs; those of no loaded module are left out."""
    by_dict = {id(m.__dict__): m.__name__ for m in list(sys.modules.values()) if isinstance(m, types.ModuleType)}
    return sorted([by_dict[id(d)], name] for (name, _), (_, d) in jitfn.used_global_vals.items() if id(d) in by_dict)


def restore_used_globals(jitfn, pairs) -> None:
    """Set `jitfn`'s ``used_global_vals`` from an entry's [module, name] pairs, with the values they hold
    now (a matching fingerprint says they are the values the entry was compiled with), so that
    Triton's check (a global changed since the kernel was compiled) holds for a kernel read from the cache."""
    if jitfn.used_global_vals:
        return
    vals = {}
    for module, name in pairs:
        m = sys.modules.get(module)
        if m is not None and name in m.__dict__:
            try:
                vals[(name, id(m.__dict__))] = (copy.deepcopy(m.__dict__[name]), m.__dict__)
            except Exception:  # noqa: BLE001 - a value that cannot be copied is not watched (nor by Triton)
                pass
    jitfn.used_global_vals = vals
