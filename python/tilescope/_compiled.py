"""Compiled kernels that look like Triton's ``CompiledKernel``.

A launch (``kernel[grid](...)``, ``kernel.warmup(...)``) returns a ``Compiled``: the TTIR the engine
runs plus what Triton's CompiledKernel offers, made by Triton's own backend for the emulated device's
target (``_device``) only when read:

- ``asm``: ``ttir`` (the TTIR tilescope runs: compiled with ``debug=True`` so that ``tl.device_assert``
  is kept; the locations of findings point into it) and, on first read of any other key, Triton's
  stages for the program's own options (``debug`` as the program set it): ``source`` (``make_ir``),
  ``ttgir``, ``llir``, ``ptx`` and ``cubin`` (the bundled ptxas) for CUDA targets, ``amdgcn`` and
  ``hsaco`` for AMD ones. Each stage runs once, when a key at or after it is first read.
- ``metadata``: Triton's fields (``num_warps``, ``num_stages``, ``shared``, ``tmem_size``, ``hash``,
  ``target``, ...); those the stages fill (``shared`` and the rest) are read after running the stages
  through ``llir``; ``_asdict()`` as on Triton's namedtuple.
- ``n_regs``, ``n_spills``, ``n_max_threads`` after ``_init_handles()`` (or on first read): what the
  CUDA driver reports for the cubin (registers; local memory bytes / 4; the most threads a block can
  have with those registers), read from the bundled ``cuobjdump -res-usage``; for AMD targets from the
  assembly's own report (``NumVgprs``, ``ScratchSize``). ``_init_handles()`` raises Triton's
  ``OutOfResources`` as a GPU would when the kernel needs more shared memory, tensor memory or
  threads than the target has.
- ``kernel[grid](*args)`` launches it again on the engine, as Triton's runner does.

What these match was measured: for the kernels of tests/gpu/device_kernels.py the TTGIR and PTX are
byte-identical to an H200's (Triton 3.6), and n_regs / n_spills / n_max_threads / shared equal the CUDA
driver's there (tests/python/test_device.py).
"""
from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import tempfile
import threading

from . import _device


class _Stages:
    """Triton's compilation pipeline for one specialization, run stage by stage on demand."""

    def __init__(self, jitfn, target, backend, signature, constexprs, attrs, options):
        from triton.compiler.compiler import ASTSource

        self.jitfn = jitfn
        self.target = target
        self.backend = backend
        self.options = options
        self.src = ASTSource(jitfn, signature, constexprs, attrs)
        self.lock = threading.RLock()
        self.order = None  # stage names after "source", in Triton's order
        self.done = {}  # stage name -> its text (bytes for binaries)
        self.metadata = None
        self._module = None
        self._fns = None

    def _start(self):
        from triton import __version__
        from triton._C.libtriton import ir
        from triton.backends.compiler import Language

        fns = {}
        self.backend.add_stages(fns, self.options, Language.TRITON)
        self._fns = fns
        self.order = list(fns)
        self.metadata = {"hash": self.hash(), "target": self.target, **self.options.__dict__,
                         "triton_version": __version__}
        context = ir.context()
        ir.load_dialects(context)
        self.backend.load_dialects(context)
        codegen = self.backend.get_codegen_implementation(self.options)
        self._module = self.src.make_ir(self.target, self.options, codegen, self.backend.get_module_map(), context)
        self.done["source"] = str(self._module)

    def hash(self) -> str:
        """Triton's kernel hash (its cache key's sha256) for these options."""
        import hashlib

        from triton.runtime.cache import get_cache_key
        from triton.compiler.compiler import get_cache_invalidating_env_vars

        key = get_cache_key(self.src, self.backend, self.options, env_vars=get_cache_invalidating_env_vars())
        return hashlib.sha256(key.encode("utf-8")).hexdigest()

    def run_through(self, stage: str) -> None:
        """Run the stages up to and including ``stage`` (a name of ``names()``)."""
        with self.lock:
            if self._fns is None:
                self._start()
            if stage == "source" or stage in self.done:
                return
            for name in self.order:
                if name in self.done:
                    continue
                self._module = self._fns[name](self._module, self.metadata)
                m = self._module
                self.done[name] = m if isinstance(m, (str, bytes)) else str(m)
                if name == stage:
                    return

    def names(self) -> list[str]:
        with self.lock:
            if self._fns is None:
                fns = {}
                from triton.backends.compiler import Language

                self.backend.add_stages(fns, self.options, Language.TRITON)
                return ["source"] + list(fns)
            return ["source"] + self.order


class AsmDict(dict):
    """``kernel.asm``: ``ttir`` at once; every other stage made by Triton when first read."""

    def __init__(self, ttir: str, stages: _Stages | None):
        super().__init__(ttir=ttir)
        self._stages = stages

    def _names(self):
        return [n for n in self._stages.names() if n != "ttir"] if self._stages else []

    def __missing__(self, key):
        if key not in self._names():
            raise KeyError(key)
        self._stages.run_through(key)
        value = self._stages.done[key]
        self[key] = value
        return value

    def get(self, key, default=None):
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key):
        return dict.__contains__(self, key) or key in self._names()

    def keys(self):
        return ["ttir"] + self._names()

    def __iter__(self):
        return iter(self.keys())

    def __len__(self):
        return len(self.keys())

    def items(self):
        return [(k, self[k]) for k in self.keys()]

    def values(self):
        return [self[k] for k in self.keys()]


# Metadata fields known before any stage runs (the compile options and these); every other field is
# read after the stages through llir, which fill them (num_warps too: warp specialization changes it).
_EAGER = ("hash", "target", "triton_version")


class Metadata:
    """``kernel.metadata``: Triton's KernelMetadata fields, filled by the stages when first read."""

    def __init__(self, stages: _Stages | None, name: str):
        self._stages = stages
        self._name = name

    def _full(self) -> dict:
        st = self._stages
        st.run_through("llir")
        md = dict(st.metadata)
        md.setdefault("name", self._name)
        return md

    def __getattr__(self, field):
        if field.startswith("_") or self._stages is None:
            raise AttributeError(field)
        st = self._stages
        if field == "name":
            return self._name
        if field in _EAGER or (field in st.options.__dict__ and field != "num_warps"):
            st.run_through("source")
            return st.metadata[field]
        md = self._full()
        if field not in md:
            st.run_through(st.names()[-1])
            md = dict(st.metadata)
        try:
            return md[field]
        except KeyError:
            raise AttributeError(field) from None

    def _asdict(self) -> dict:
        md = self._full()
        return dict(sorted(md.items()))

    def _fields(self):
        return tuple(self._asdict())

    def __repr__(self):
        return "KernelMetadata(" + ", ".join(f"{k}={v!r}" for k, v in self._asdict().items()) + ")"


def _tool(name: str) -> str:
    from triton import knobs

    return getattr(knobs.nvidia, name).path


_RES_LINE = re.compile(r"Function\s+(\S+):\s*\n\s*REG:(\d+)\s+STACK:(\d+)")


def cuda_resources(cubin: bytes, kernel: str, dev: _device.Device) -> tuple[int, int, int]:
    """(n_regs, n_spills, n_max_threads) of ``kernel`` in ``cubin``, as Triton's driver gets them from
    the CUDA driver: CU_FUNC_ATTRIBUTE_NUM_REGS; LOCAL_SIZE_BYTES / 4 (cuobjdump's STACK: the
    per-thread local memory of the function); MAX_THREADS_PER_BLOCK: the most whole warps whose
    registers fit in a block (registers are allocated per warp in units of 256), at most the target's
    threads per block."""
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(cubin)
    try:
        out = subprocess.run([_tool("cuobjdump"), "-res-usage", f.name], capture_output=True, text=True,
                             check=True).stdout
    finally:
        os.remove(f.name)
    for name, regs, stack in _RES_LINE.findall(out):
        if name == kernel:
            n_regs, local = int(regs), int(stack)
            break
    else:
        raise RuntimeError(f"cuobjdump -res-usage does not list kernel '{kernel}':\n{out}")
    per_warp = -(-max(n_regs, 1) * dev.warp_size // 256) * 256
    warps = dev.regs_per_block // per_warp
    return n_regs, local // 4, min(dev.max_threads_per_block, warps * dev.warp_size)


def hip_resources(amdgcn: str, dev: _device.Device) -> tuple[int, int, int]:
    """(n_regs, n_spills, n_max_threads) from the AMD assembly's report: NumVgprs, ScratchSize / 4,
    and the kernel's .max_flat_workgroup_size (HIP's NUM_REGS, LOCAL_SIZE_BYTES / 4 and
    MAX_THREADS_PER_BLOCK; not compared with a real AMD GPU)."""

    def field(pattern, default):
        m = re.search(pattern, amdgcn)
        return int(m.group(1)) if m else default

    return (field(r";\s*NumVgprs:\s*(\d+)", 0), field(r";\s*ScratchSize:\s*(\d+)", 0) // 4,
            field(r"\.max_flat_workgroup_size:\s*(\d+)", dev.max_threads_per_block))


class Compiled:
    """One specialization: its TTIR and the engine's kernel, with Triton's CompiledKernel interface
    (module docstring). Returned by a launch, as Triton returns its CompiledKernel."""

    def __init__(self, name, ttir, native, signature, constexprs, specialization="{}", stages=None, launch=None):
        self.name = name
        self.native = native
        self.signature = signature
        self.constants = constexprs
        self.specialization = specialization  # JSON for the launch record (README, "Launch record")
        self.asm = AsmDict(ttir, stages)
        self.metadata = Metadata(stages, name)
        self.src = stages.src if stages is not None else None
        self.module = None
        self.function = None
        self._stages = stages
        self._launch = launch  # (jitfn, launch options) for kernel[grid](...)
        self._resources = None

    def __repr__(self):
        return f"<tilescope kernel {self.name}>"

    @property
    def hash(self):
        return self.metadata.hash

    @property
    def kernel(self):
        """The binary (cubin / hsaco), as Triton's ``CompiledKernel.kernel``."""
        return self.asm[self._stages.names()[-1]]

    def _init_handles(self):
        """Compute n_regs / n_spills / n_max_threads and check the target's limits as the CUDA / HIP
        driver's module load does (raises triton.runtime.errors.OutOfResources)."""
        if self._resources is not None:
            return
        from triton.runtime.errors import OutOfResources

        dev = _device.selected()
        md = self.metadata
        limits = _device.triton_device_properties(dev)
        if md.shared > limits["max_shared_mem"]:
            raise OutOfResources(md.shared, limits["max_shared_mem"], "shared memory")
        tmem = getattr(md, "tmem_size", None)
        if tmem is not None and tmem > 512:
            raise OutOfResources(tmem, 512, "tensor memory")
        if dev.backend == "hip":
            res = hip_resources(self.asm["amdgcn"], dev)
        else:
            res = cuda_resources(self.asm["cubin"], md.name, dev)
        if md.num_warps * dev.warp_size > res[2]:
            raise OutOfResources(md.num_warps * dev.warp_size, res[2], "threads")
        self._resources = res
        self.module = self.function = 0

    @property
    def n_regs(self):
        self._init_handles()
        return self._resources[0]

    @property
    def n_spills(self):
        self._init_handles()
        return self._resources[1]

    @property
    def n_max_threads(self):
        self._init_handles()
        return self._resources[2]

    def __getitem__(self, grid):
        """``compiled[grid](*args)``: launch again on the engine with all arguments (constexprs
        included) in the kernel's parameter order, as Triton's runner takes them."""
        if self._launch is None:
            raise TypeError(f"kernel '{self.name}' cannot be launched from its compiled form")
        jitfn, options = self._launch

        def runner(*args, stream=None):
            from . import _capture

            return _capture.run(jitfn, tuple(args), grid, False, dict(options))

        return runner


def stages_for(jitfn, target, backend, signature, constexprs, attrs, options, user_options: dict):
    """The lazy pipeline of a specialization compiled with ``options`` for the engine, for the
    program's own option values ``user_options`` (debug, sanitize_overflow as it launched)."""
    return _Stages(jitfn, target, backend, signature, constexprs, attrs,
                   dataclasses.replace(options, **user_options))
