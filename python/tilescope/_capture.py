"""Launch capture: run every launch of a @triton.jit kernel on tilescope's CPU engine.

``JITFunction.run`` is replaced (once, on the class). A launch that tilescope handles (every launch
under ``tilescope sanitize``, or a kernel wrapped with ``@tilescope.trace``) is

1. bound by Triton's own binder for the fixed target (constexprs, integer specialization with
   ``== 1`` becoming constexpr, i32/i64/u64 by value, 16-divisibility attributes; reference §4.1),
2. compiled to TTIR by Triton's own front end (``make_ir`` + ``make_ttir``, reference §4.2) with
   ``debug=True`` so ``tl.device_assert`` is kept, cached per specialization,
3. run on the engine with the runtime arguments bound by the TTIR signature (arguments that
   became constexprs are gone from it), tensors zero-copy (CUDA tensors copied in and back).

Other launches go to Triton unchanged.
"""
from __future__ import annotations

import functools
import gc
import operator
import os
import sys
import sysconfig
import threading

from . import _alloc, _state, _uninit
from ._alloc import _dtype_name, _is_numpy
from ._compiled import Compiled  # noqa: F401  (launches return it)

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))


class CompileError(RuntimeError):
    """A kernel that tilescope cannot compile or run (the message says where and why).

    ``diagnostic``: the structured form when the engine gave one (a dict: severity, message, op,
    notes, ttir {file, line, col}, python {file, line, col, var}), else None."""

    diagnostic = None


class LaunchError(RuntimeError):
    """A launch that cannot be bound (bad arguments, grid); the message says which.

    ``diagnostic``: as for CompileError."""

    diagnostic = None


def _with_diagnostic(err, native_error):
    """``err`` carrying the structured diagnostic of the engine's error ``native_error``."""
    import json

    text = getattr(native_error, "diagnostic", None)
    err.diagnostic = json.loads(text) if text else None
    return err


# --------------------------------------------------------------------------------------------
# Arguments


class NumpyArg:
    """A numpy array seen by Triton's binder as a tensor (data_ptr + dtype), zero-copy."""

    __slots__ = ("array", "dtype")

    def __init__(self, array):
        self.array = array
        self.dtype = array.dtype

    def data_ptr(self):
        return self.array.ctypes.data


def _wrap(x):
    if _is_numpy(x):
        return NumpyArg(x)
    return x




class _Staged:
    """A CUDA (non-CPU) tensor's storage copied to the CPU for the launch, copied back after it."""

    def __init__(self, t):
        self.tensor = t
        self.storage = t.untyped_storage()
        self.host = self.storage.cpu()

    def copy_back(self):
        self.storage.copy_(self.host)


class _ReadOnlyCopy:
    """A writable copy of a read-only numpy array, alive for the launch; nothing is copied back."""

    def __init__(self, array):
        self.array = array

    def copy_back(self):
        pass


def _describe_buffer(value, name: str, staged: list):
    """A ``_native.Buffer`` (pointer, extent in bytes, dtype, shape, strides) for a tensor-like value.

    The buffer is every byte the view can reach: from its first element to its last one along
    the strides (a strided or transposed view registers that extent; reports show the view's
    shape and strides)."""
    if isinstance(value, NumpyArg):
        a = value.array
        if not a.flags.writeable:
            # Read-only memory (np.frombuffer of bytes, a read-only memmap): the kernel sees a copy, so
            # a store cannot fault or change immutable data; the array itself is never written.
            a = a.copy()
            staged.append(_ReadOnlyCopy(a))
        item = a.itemsize
        shape = list(a.shape)
        if any(s % item for s in a.strides):
            raise LaunchError(f"argument '{name}': numpy strides {a.strides} are not multiples of the item size")
        strides = [s // item for s in a.strides]
        ptr = a.ctypes.data
        dtype = _dtype_name(a.dtype)
    else:
        t = value
        item = t.element_size()
        shape = list(t.shape)
        strides = list(t.stride())
        dev = getattr(t, "device", None)
        if dev is not None and dev.type != "cpu":
            s = _Staged(t)
            staged.append(s)
            ptr = _alloc.raw_data_ptr(s.host) + t.storage_offset() * item
        else:
            ptr = _alloc.raw_data_ptr(t)
        dtype = _dtype_name(t.dtype)
    # The extent in elements: 1 + the farthest element's offset (0 for an empty view).
    extent, empty = 1, False
    for n, st in zip(shape, strides):
        if n == 0:
            empty = True
        elif n > 1:
            if st < 0:
                raise LaunchError(f"argument '{name}': negative strides {strides} are not supported; pass a copy "
                                  f"(np.ascontiguousarray)")
            extent += (n - 1) * st
    return _native_module().Buffer(name, dtype, int(ptr), 0 if empty else extent * item, shape, strides)


@functools.cache
def _native_module():
    """tilescope._native, imported at the first launch (not with the package); later calls skip the
    import machinery (a few microseconds a launch)."""
    from . import _native

    return _native


def _flatten(values, types, name, out):
    """Pairs (name, value, type string) of the runtime (non-constexpr) leaves, in TTIR order."""
    if isinstance(types, tuple):
        for i, (v, t) in enumerate(zip(values, types)):
            _flatten(v, t, f"{name}.{i}", out)
        return
    if types == "constexpr":
        return
    out.append((name, values, types))


# --------------------------------------------------------------------------------------------
# Compilation

_compile_lock = threading.RLock()


class _KernelState:
    """Per-JITFunction tilescope state: its binder for the fixed target and compiled kernels."""

    def __init__(self, jitfn):
        from triton.compiler.compiler import make_backend
        from triton.runtime.jit import create_function_from_signature

        from . import _driver

        self.target = _driver.target()
        self.backend = make_backend(self.target)
        self.binder = create_function_from_signature(jitfn.signature, jitfn.params, self.backend)
        self.kernels = {}  # cache key -> Compiled
        self.key_cache = {}


def _state_of(jitfn) -> _KernelState:
    st = jitfn.__dict__.get("_tilescope_state")
    if st is None:
        st = _KernelState(jitfn)
        jitfn._tilescope_state = st
    return st


_CONTEXT = None  # one MLIR context per process (under _compile_lock), as loading dialects costs ms


class _ParsedOnce(threading.local):
    """While tilescope runs Triton's code generator (in this thread, under _compile_lock), a @jit
    function's source is parsed once per process instead of at every specialization and every call
    site of a helper: `JITCallable.parse()` (Triton's, an `ast.parse` of the source each time: about
    7 parses of 0.1-2.5 ms per specialization of Liger's cross-entropy, whose `make_ir` takes 20-25 ms)
    returns the tree it gave before for the same source text.

    Sound because Triton's code generator only reads the tree (it copies what it changes: an augmented
    assignment's target), and a test checks that TTIRs made with the kept trees equal fresh ones. Keyed
    by the source text itself, so `_unsafe_update_src` (Triton's one way to change it) parses again.
    Other threads, and Triton's own compiles, parse as before; so does a function whose class overrides
    `parse` (it may edit the tree it gets: a subclass adding a prologue), or when a later patch of
    `JITCallable.parse` replaced this one. Not covered: code of the program's own that calls `parse()`
    while the kernel compiles (in a `triton.constexpr_function`) and edits the tree in place."""

    on = False


_parsed_once = _ParsedOnce()


def _install_parse_cache():
    from triton.runtime.jit import JITCallable

    original = JITCallable.parse
    if getattr(original, "_tilescope_original", None) is not None:
        return

    def parse(self):
        if not _parsed_once.on or type(self).parse is not parse:
            return original(self)
        src = self._src
        kept = self.__dict__.get("_tilescope_ast")
        if kept is not None and kept[0] == src:
            return kept[1]
        tree = original(self)
        self.__dict__["_tilescope_ast"] = (src, tree)
        return tree

    parse._tilescope_original = original
    JITCallable.parse = parse


def _cache_key(jitfn, st, signature, constexprs, attrs, options) -> str:
    """The TTIR disk cache's key of this specialization (the cache itself: _cache.py).

    Keyed like Triton's own cache, by the kernel's source and everything it names (a fingerprint that
    needs no parse, _srckey.py; Triton's `JITFunction.cache_key` where that fails), where it is defined
    (file and line: the TTIR's locations name them), the specialization (signature, constexprs,
    attributes), the compile options, the target and the Triton version (the TTIR is Triton's output alone)."""
    import triton

    from . import _srckey

    from triton.runtime.jit import JITCallable

    def source(fn):
        return _srckey.fingerprint(fn) or fn.cache_key

    # A @jit function passed as a constexpr argument is part of the kernel: by its source, as the kernel.
    constexprs = {k: f"jit:{source(v)}" if isinstance(v, JITCallable) else v for k, v in constexprs.items()}
    opts = options.hash() if hasattr(options, "hash") else repr(options)
    # TTIR carries source locations: the same source in another file or at another line is another entry.
    where = (os.path.abspath(jitfn.fn.__code__.co_filename), jitfn.fn.__code__.co_firstlineno)
    return repr((source(jitfn), where, sorted(signature.items(), key=str), sorted(constexprs.items(), key=str),
                 sorted(attrs.items(), key=str), opts, repr(st.target), triton.__version__))


def _make_ttir(jitfn, st, signature, constexprs, attrs, options) -> str:
    global _CONTEXT
    from triton._C.libtriton import ir
    from triton.backends.compiler import Language
    from triton.compiler.compiler import ASTSource

    from . import _cache, _srckey

    try:
        entry = _cache.Entry.of(_cache_key(jitfn, st, signature, constexprs, attrs, options))
    except Exception:  # noqa: BLE001 - a cache problem must never stop a launch
        entry = None
    if entry is not None:
        text = entry.load()
        if text is not None:
            # Triton's check that the globals the kernel read are unchanged at each launch (run()).
            _srckey.restore_used_globals(jitfn, entry.used_globals)
            return text
    src = ASTSource(jitfn, signature, constexprs, attrs)
    if _CONTEXT is None:
        _CONTEXT = ir.context()
        ir.load_dialects(_CONTEXT)
        st.backend.load_dialects(_CONTEXT)
    codegen = st.backend.get_codegen_implementation(options)
    # Triton's code generator allocates Python objects by the hundred thousand (AST visits, tensors,
    # MLIR handles); with the cyclic GC on, they trigger dozens of young collections and, in a process
    # that imported torch (~350k tracked objects), now and then a full one (130-180 ms here, more than a
    # whole specialization's compile). Paused for the compile; what it leaves is collected after. (The
    # switch is the process's: a gc.disable() of another thread during the compile is undone at its end.)
    gc_was_on = gc.isenabled()
    try:
        gc.disable()
        _parsed_once.on = True
        mod = src.make_ir(st.target, options, codegen, st.backend.get_module_map(), _CONTEXT)
        stages = {}  # Triton's own stage table: make_ttir's arguments differ between backends
        st.backend.add_stages(stages, options, Language.TRITON)
        mod = stages["ttir"](mod, {})
        text = str(mod)
    finally:
        _parsed_once.on = False
        if gc_was_on:
            gc.enable()
    if entry is not None:
        restored = dict(jitfn.used_global_vals)  # from an earlier specialization read from the cache
        try:
            jitfn.cache_key  # noqa: B018 - fills used_global_vals, which the entry keeps
        except Exception:  # noqa: BLE001 - the TTIR is made; without the key it is only not cached
            return text
        # Triton keeps the values a global had when the kernel was first compiled in this process.
        jitfn.used_global_vals = {**jitfn.used_global_vals, **restored}
        entry.store(text, _srckey.used_globals(jitfn))
    return text


def _compile(jitfn, st, kwargs, bound_args, specialization, options, user_options):
    from . import _native

    options, signature, constexprs, attrs = jitfn._pack_args(st.backend, kwargs, bound_args, specialization, options)
    name = jitfn.fn.__name__
    ttir = _make_ttir(jitfn, st, signature, constexprs, attrs, options)
    dump = os.environ.get("TILESCOPE_DUMP_TTIR")
    if dump:
        path = os.path.join(dump, f"{name}-{abs(hash(ttir)) & 0xffffffff:08x}.ttir")
        try:
            os.makedirs(dump, exist_ok=True)
            _state._write_atomically(path, ttir.encode())
        except OSError as e:  # tilescope's own output: never the program's exception
            _state._warn(f"TILESCOPE_DUMP_TTIR: cannot write {path} ({e.strerror or e})")
    try:
        native = _native.compile(ttir, f"{name}.ttir")
    except _native.TilescopeError as e:
        raise _with_diagnostic(CompileError(f"tilescope cannot run kernel '{name}' ({_where(jitfn)}): {e}"), e) from None
    from . import _compiled

    stages = _compiled.stages_for(jitfn, st.target, st.backend, signature, constexprs, attrs, options, user_options)
    launch = {**{k: v for k, v in kwargs.items() if k not in jitfn.arg_names}, **user_options}
    return Compiled(name, ttir, native, signature, constexprs, _specialization_json(jitfn, constexprs, attrs), stages,
                    (jitfn, launch))


def _specialization_json(jitfn, constexprs, attrs) -> str:
    """How Triton's binder specialized this launch, for the launch record: the constexprs (Python reprs),
    the arguments given the 16-divisibility attribute, and the integers specialized to the constant 1
    (constexprs whose parameter was not declared one). Paths into tuple arguments name their elements
    as `arg[i]`."""
    import json

    params = jitfn.params

    def name(path):
        n = params[path[0]].name
        return n + "".join(f"[{i}]" for i in path[1:])

    def declared_constexpr(path):
        return len(path) == 1 and getattr(params[path[0]], "is_constexpr", False)

    out = {"constexprs": {}, "divisible_by_16": [], "equal_to_1": []}
    for path, value in constexprs.items():
        out["constexprs"][name(path)] = repr(value)
        if not declared_constexpr(path) and value == 1 and not isinstance(value, bool):
            out["equal_to_1"].append(name(path))
    for path, values in attrs.items():
        if any(k == "tt.divisibility" and v == 16 for k, v in values):
            out["divisible_by_16"].append(name(path))
    return json.dumps(out)


def _where(jitfn) -> str:
    try:
        return f"{jitfn.fn.__code__.co_filename}:{jitfn.starting_line_number}"
    except Exception:
        return "?"


# --------------------------------------------------------------------------------------------
# The Python stack of a launch (user frames only)

_SKIP_DIRS = None


def _skip_dirs():
    """(directory + separator, is the standard library) of the frames a launch stack leaves out."""
    global _SKIP_DIRS
    if _SKIP_DIRS is None:
        dirs = [(_PKG_DIR + os.sep, False)]
        for mod in ("triton", "torch", "_pytest", "pluggy"):
            m = sys.modules.get(mod)
            if m is not None and getattr(m, "__file__", None):
                dirs.append((os.path.dirname(os.path.abspath(m.__file__)) + os.sep, False))
        stdlib = sysconfig.get_paths().get("stdlib")
        if stdlib:
            dirs.append((os.path.abspath(stdlib) + os.sep, True))
        _SKIP_DIRS = tuple(dirs)
    return _SKIP_DIRS


def launch_stack(limit: int = 16) -> list[str]:
    """'file:line in func' for the user's frames of the current stack, innermost last: frames of
    tilescope, Triton, torch, pytest and the standard library are left out (third-party kernel
    libraries in site-packages are the user's code here)."""
    out = []
    frame = sys._getframe(1)
    while frame is not None and len(out) < limit:  # walked directly: no source lines are read
        code = frame.f_code
        f = code.co_filename
        user = _user_file.get(f)
        if user is None:
            user = _user_file[f] = not f.startswith("<") and not _skipped(os.path.abspath(f), _skip_dirs())
        if user:
            out.append(f"{f}:{frame.f_lineno} in {code.co_name}")
        frame = frame.f_back
    out.reverse()
    return out


_user_file: dict[str, bool] = {}  # co_filename -> whether launch_stack keeps its frames


def _skipped(path: str, skip) -> bool:
    for d, is_stdlib in skip:
        if path.startswith(d):
            rest = path[len(d):]
            if is_stdlib and ("site-packages" in rest or "dist-packages" in rest):
                continue  # the stdlib prefix also holds site-packages
            return True
    return False


# --------------------------------------------------------------------------------------------
# The patched JITFunction.run


@functools.cache
def _triton_parts():
    """(triton.knobs, triton.runtime.jit.compute_cache_key), imported once."""
    from triton import knobs
    from triton.runtime.jit import compute_cache_key

    return knobs, compute_cache_key


def _handles(jitfn) -> bool:
    return _state.sanitize_all or bool(_state.profilers) or jitfn.__dict__.get("_tilescope_trace", False)


def run(jitfn, args, grid, warmup, kwargs):
    knobs, compute_cache_key = _triton_parts()

    # The program's own options, for the compiled forms Triton makes of the kernel (_compiled.py).
    user_options = {"debug": bool(kwargs.get("debug", jitfn.debug) or knobs.runtime.debug),
                    "sanitize_overflow": kwargs.get("sanitize_overflow", True)}
    kwargs["debug"] = True  # keep tl.device_assert (the sanitizer reports failed asserts)
    kwargs.setdefault("sanitize_overflow", False)  # the sanitizer finds int32 overflow itself
    kwargs["instrumentation_mode"] = knobs.compilation.instrumentation_mode

    for hook in jitfn.pre_run_hooks:
        hook(*args, **kwargs)

    with _compile_lock:
        st = _state_of(jitfn)
    wargs = [_wrap(a) for a in args]
    wkwargs = {k: _wrap(v) for k, v in kwargs.items()}
    _alloc.own_reads.on = True  # the binder's data_ptr() calls: the tensors are noted below, by name
    try:
        bound_args, specialization, options = st.binder(*wargs, **wkwargs)
    finally:
        _alloc.own_reads.on = False

    with _compile_lock:
        # The program's own options are part of the key: Triton's later stages are made for them.
        key = (compute_cache_key(st.key_cache, specialization, options), tuple(sorted(user_options.items())))
        kernel = st.kernels.get(key)
        if kernel is None:
            kernel = _compile(jitfn, st, wkwargs, bound_args, specialization, options, user_options)
            st.kernels[key] = kernel

    not_present = object()
    for (name, _), (val, globals_dict) in jitfn.used_global_vals.items():
        if (new := globals_dict.get(name, not_present)) != val:
            raise RuntimeError(f"Global variable {name} has changed since we compiled this kernel, from {val} to {new}")

    if warmup:
        return kernel

    if grid is None:
        raise LaunchError(f"kernel '{kernel.name}': launched without a grid")
    if callable(grid):
        grid = grid(bound_args)
    try:
        grid = [operator.index(g) for g in (grid if isinstance(grid, (tuple, list)) else (grid,))]
    except (TypeError, ValueError):
        raise LaunchError(f"kernel '{kernel.name}': the grid must be 1 to 3 integers, got {grid!r}") from None
    if not 1 <= len(grid) <= 3:
        raise LaunchError(f"kernel '{kernel.name}': the grid must have 1 to 3 dimensions, got {grid!r}")
    # The engine checks the grid against CUDA's limits (exec::check_grid) and raises LaunchError;
    # only a size that does not even fit the engine's 64-bit grid is refused here.
    for d, g in enumerate(grid):
        if not -2**63 <= g < 2**63:
            raise LaunchError(f"tilescope: launch of kernel '{kernel.name}' failed: grid dimension {'xyz'[d]} is {g}, "
                              f"past CUDA's limits (x < 2^31, y and z <= 65535)")
    if any(g == 0 for g in grid) and all(g >= 0 for g in grid):
        return kernel  # an empty grid launches nothing, as on the GPU

    leaves = []
    for (name, value), spec in zip(bound_args.items(), specialization):
        _flatten(value, spec[0], name, leaves)
    staged = []
    native_args = []
    for name, value, ty in leaves:
        if isinstance(ty, str) and ty.startswith("*"):
            if not hasattr(value, "data_ptr"):
                raise LaunchError(f"kernel '{kernel.name}': argument '{name}' is a pointer ({ty}) but got {value!r}")
            native_args.append(_describe_buffer(value, name, staged))
            _alloc.note(value.array if isinstance(value, NumpyArg) else value,
                        f"'{name}' of a launch of {kernel.name}")
        elif isinstance(ty, str) and ty.startswith("tensordesc"):
            # A host-side TensorDescriptor: the TTIR takes the descriptor, then its shape (i32 each)
            # and strides (i64 each) as separate arguments, as Triton's frontend decomposes it.
            base = getattr(value, "base", None)
            if base is None or not hasattr(base, "data_ptr"):
                raise LaunchError(f"kernel '{kernel.name}': argument '{name}' is a tensor descriptor ({ty}) "
                                  f"but got {value!r}")
            base = _wrap(base)
            buf = _describe_buffer(base, name, staged)
            buf.padding = 2 if getattr(value, "padding", "zero") == "nan" else 1
            native_args.append(buf)
            _alloc.note(base.array if isinstance(base, NumpyArg) else base, f"'{name}' of a launch of {kernel.name}")
            native_args.extend(int(n) for n in value.shape)
            native_args.extend(int(s) for s in value.strides)
        else:
            if hasattr(value, "item") and not isinstance(value, (int, float, bool)):
                value = value.item()
            native_args.append(value)

    _native = _native_module()
    _uninit.install()  # torch or numpy imported after Triton: tracked from now on
    stack = launch_stack()
    try:
        threads, max_steps = _state.launch_limits()
        res = _native.launch(kernel.native, native_args, grid, threads=threads, max_steps=max_steps,
                             analyses=_state.analyses_json(jitfn.__dict__.get("_tilescope_races"),
                                                           uninit=jitfn.__dict__.get("_tilescope_uninit", True),
                                                           num_warps=kwargs.get("num_warps")),
                             stack=stack,
                             specialization=kernel.specialization,
                             allocations=_alloc.buffers() if kernel.makes_pointers else [],
                             max_memory=_state.max_memory, trace=_state.trace_path)
    except _native.TilescopeError as e:
        raise _with_diagnostic(LaunchError(f"tilescope: launch of kernel '{kernel.name}' failed: {e}"), e) from None
    finally:
        for s in staged:
            s.copy_back()
    # The engine writes nothing itself: tl.device_print text goes through sys.stdout, so redirections
    # and pytest's capture see it. A stream that fails loses the text, as a GPU's printf buffer would,
    # without an exception in the program.
    for stream, text in ((sys.stdout, res["stdout"]), (sys.stderr, res["stderr"])):
        if text:
            try:
                stream.write(text)
            except (OSError, ValueError):
                pass
    _state.trace_error(res.get("trace_error"))
    _state.record(res["findings"], kernel.name, stack, res.get("reports", ""))
    return kernel


_original_run = None


def install():
    """Replace JITFunction.run and short-circuit autotuning. Idempotent."""
    global _original_run
    from triton.runtime import autotuner, jit

    from . import _driver

    _driver.install()
    _alloc.install()
    _uninit.install()
    if _original_run is not None:
        return
    _install_parse_cache()
    _original_run = jit.JITFunction.run

    def patched_run(self, *args, grid, warmup, **kwargs):
        if not _handles(self):
            return _original_run(self, *args, grid=grid, warmup=warmup, **kwargs)
        return run(self, args, grid, warmup, kwargs)

    patched_run.__wrapped__ = _original_run
    jit.JITFunction.run = patched_run

    original_autotune_run = autotuner.Autotuner.run

    def autotune_run(self, *args, **kwargs):
        # No benchmarking: the first configuration left after the user's pruning that compiles wins,
        # as if it had been the fastest; then Triton's own run applies it (and runs its pre_hook and
        # the autotuner's reset hook as after a real tuning).
        base = _base_jit(self)
        if base is not None and _handles(base) and len(self.configs) > 1:
            self.nargs = dict(zip(self.arg_names, args))
            all_args = {**self.nargs, **kwargs}
            _args = {k: v for (k, v) in all_args.items() if k in self.arg_names}
            key = [_args[k] for k in self.keys if k in _args]
            for _, arg in _args.items():
                if hasattr(arg, "dtype"):
                    key.append(str(arg.dtype))
            key = tuple(key)
            if key not in self.cache:
                config = _first_compiling_config(self, base, args, kwargs, self.prune_configs(kwargs))
                self.cache[key] = config
                full_nargs = {**self.nargs, **kwargs, **config.all_kwargs()}
                self.pre_hook(full_nargs, reset_only=True)
        return original_autotune_run(self, *args, **kwargs)

    autotuner.Autotuner.run = autotune_run


def _first_compiling_config(tuner, base, args, kwargs, configs):
    """The first of `configs` whose kernel compiles, as Triton's autotuner would pick among timings
    where a configuration that fails to compile counts as infinitely slow (``Autotuner._bench``
    catches OutOfResources, CompileTimeAssertionFailure and PTXASError). As there, a configuration's
    pre_hook runs before its kernel is compiled. Each skipped configuration
    is said on stderr and noted for the report. When every one fails, the first is returned (Triton's
    ``min`` over equal timings) and its launch raises the error, as in Triton.

    Only TTIR is made here, so what only Triton's later stages check (shared memory and registers:
    OutOfResources, PTXASError) is not known: such a configuration runs on the CPU."""
    from triton.compiler.errors import CompileTimeAssertionFailure
    from triton.runtime.errors import OutOfResources, PTXASError

    skipped = []
    chosen = None
    for config in configs:
        conflicts = kwargs.keys() & config.kwargs.keys()
        if conflicts:  # as Autotuner._bench says it
            raise ValueError(f"Conflicting meta-parameters: {', '.join(conflicts)}."
                             " Make sure that you don't re-define auto-tuned symbols.")
        current = {**kwargs, **config.all_kwargs()}
        if config.pre_hook:  # before compiling, as Autotuner._bench (it may set descriptors' block shapes)
            config.pre_hook({**tuner.nargs, **current})
        try:
            tuner.fn.run(*args, **{**current, "warmup": True})
        except (OutOfResources, CompileTimeAssertionFailure, PTXASError) as e:
            skipped.append((config, e))
            continue
        chosen = config
        break
    if chosen is None:
        return configs[0]
    name = base.fn.__name__
    for config, e in skipped:
        reason = getattr(e, "error_message", None) or str(e)
        reason = " ".join(str(reason).split())  # one line
        text = (f"autotune of kernel '{name}': skipped the configuration {{{config}}}, which does not "
                f"compile ({type(e).__name__}: {reason}), as Triton's autotuner does")
        _state.note(text)
        _state._warn(text)
    return chosen


def _base_jit(fn):
    while fn is not None and not hasattr(fn, "pre_run_hooks"):
        fn = getattr(fn, "fn", None)
    return fn
