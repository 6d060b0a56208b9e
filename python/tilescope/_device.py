"""The emulated GPU: the one device a program run under tilescope sees on a machine without a GPU.

tilescope compiles every kernel for one target (``--target``, ``TILESCOPE_TARGET``; default sm_90) and
runs it on the CPU. Where no real GPU driver is active, the program's device queries answer for that
target, as the GPU would (README, "The emulated GPU"):

- Triton's ``driver.active`` (``_driver.CpuDriver``): the target, ``utils.get_device_properties``,
  the active torch device (the CPU: tensors live there), the benchmarker.
- ``torch.cuda``'s queries (capability, name, properties, current device, synchronize, streams,
  events, memory statistics): ``install_torch``. ``torch.cuda.is_available()`` and ``device_count()``
  keep torch's answer (False, 0), since torch cannot make a "cuda" tensor; with ``--cuda-on-cpu``
  (``TILESCOPE_CUDA_ON_CPU=1``) "cuda" tensors are made on the CPU and they answer True, 1.
- ``triton.testing.do_bench`` / ``do_bench_cudagraph``: the time returned is NaN (there is no GPU to
  time, and a CPU time is no measure of one) and the function is not run; ``perf_report`` benchmarks
  run at their first x value only. ``--bench-all`` (TILESCOPE_BENCH_ALL=1) runs every x value and each
  benchmarked function once, sanitized like any launch.

Numbers: sm_90 is the NVIDIA H200 that tests/gpu/data/device_h200.json was recorded on (torch's and
Triton's answers there); sm_80 (A100-SXM4-80GB), sm_100 (B200) and gfx942 (AMD Instinct MI300X) are
from their vendors' data sheets and the CUDA / HIP occupancy tables for their architectures.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import threading


@dataclasses.dataclass(frozen=True)
class Device:
    """One emulated device. Sizes in bytes, clocks in kHz, the memory bus in bits (as CUDA reports)."""

    target: str  # the --target spelling: sm_90, gfx942
    backend: str  # Triton's backend: "cuda" or "hip"
    arch: int | str  # Triton's GPUTarget arch: 90, "gfx942"
    warp_size: int
    name: str  # torch.cuda.get_device_name()
    capability: tuple[int, int]  # torch.cuda.get_device_capability()
    multi_processor_count: int
    total_memory: int
    l2_cache_size: int
    shared_memory_per_block: int
    shared_memory_per_block_optin: int  # Triton's max_shared_mem (CUDA); HIP: = per block
    shared_memory_per_multiprocessor: int
    regs_per_multiprocessor: int
    regs_per_block: int  # Triton's max_num_regs
    max_threads_per_block: int
    max_threads_per_multi_processor: int
    clock_rate: int
    memory_clock_rate: int
    memory_bus_width: int
    gcn_arch_name: str  # torch's gcnArchName (CUDA builds report the device name there)


TARGETS = {
    d.target: d
    for d in (
        Device("sm_80", "cuda", 80, 32, "NVIDIA A100-SXM4-80GB", (8, 0), 108, 85_899_345_920, 41_943_040, 49152,
               166_912, 167_936, 65536, 65536, 1024, 2048, 1_410_000, 1_593_000, 5120, "NVIDIA A100-SXM4-80GB"),
        Device("sm_90", "cuda", 90, 32, "NVIDIA H200", (9, 0), 132, 150_109_880_320, 62_914_560, 49152, 232_448,
               233_472, 65536, 65536, 1024, 2048, 1_980_000, 3_201_000, 6016, "NVIDIA H200"),
        Device("sm_100", "cuda", 100, 32, "NVIDIA B200", (10, 0), 148, 191_514_476_544, 132_644_864, 49152, 232_448,
               233_472, 65536, 65536, 1024, 2048, 1_965_000, 3_996_000, 8192, "NVIDIA B200"),
        Device("gfx942", "hip", "gfx942", 64, "AMD Instinct MI300X", (9, 4), 304, 206_141_652_992, 4_194_304, 65536,
               65536, 65536, 524_288, 65536, 1024, 2048, 2_100_000, 1_300_000, 8192, "gfx942:sramecc+:xnack-"),
    )
}
DEFAULT_TARGET = "sm_90"


def selected() -> Device:
    """The device of this process: TILESCOPE_TARGET (set by ``tilescope sanitize --target``), else sm_90.

    Raises ValueError naming the known targets for any other value."""
    name = os.environ.get("TILESCOPE_TARGET") or DEFAULT_TARGET
    dev = TARGETS.get(name)
    if dev is None:
        raise ValueError(f"tilescope: unknown target {name!r} (TILESCOPE_TARGET); known: {', '.join(TARGETS)}")
    return dev


def gpu_target():
    """Triton's GPUTarget of the selected device: what every kernel is compiled for."""
    from triton.backends.compiler import GPUTarget

    d = selected()
    return GPUTarget(d.backend, d.arch, d.warp_size)


def triton_device_properties(d: Device) -> dict:
    """What Triton's driver ``utils.get_device_properties(device)`` answers (its driver.c: CUDA's seven
    keys; HIP's nine, with the architecture and threads per CU)."""
    if d.backend == "hip":
        return {"max_shared_mem": d.shared_memory_per_block, "max_num_regs": d.regs_per_block,
                "multiprocessor_count": d.multi_processor_count, "sm_clock_rate": d.clock_rate,
                "mem_clock_rate": d.memory_clock_rate, "mem_bus_width": d.memory_bus_width, "arch": d.gcn_arch_name,
                "warpSize": d.warp_size, "max_threads_per_sm": d.max_threads_per_multi_processor}
    return {"max_shared_mem": d.shared_memory_per_block_optin, "max_num_regs": d.regs_per_block,
            "multiprocessor_count": d.multi_processor_count, "warpSize": d.warp_size, "sm_clock_rate": d.clock_rate,
            "mem_clock_rate": d.memory_clock_rate, "mem_bus_width": d.memory_bus_width}


def cuda_on_cpu() -> bool:
    """Whether "cuda" tensors are made on the CPU (``--cuda-on-cpu``, TILESCOPE_CUDA_ON_CPU=1)."""
    return os.environ.get("TILESCOPE_CUDA_ON_CPU", "") not in ("", "0")


# --------------------------------------------------------------------------------------------
# torch.cuda


class DeviceProperties:
    """``torch.cuda.get_device_properties()``'s answer: the fields of torch's _CudaDeviceProperties."""

    def __init__(self, d: Device):
        self.name = d.name
        self.major, self.minor = d.capability
        self.total_memory = d.total_memory
        self.multi_processor_count = d.multi_processor_count
        self.is_integrated = 0
        self.is_multi_gpu_board = 0
        self.max_threads_per_block = d.max_threads_per_block
        self.max_threads_per_multi_processor = d.max_threads_per_multi_processor
        self.regs_per_multiprocessor = d.regs_per_multiprocessor
        self.warp_size = d.warp_size
        self.L2_cache_size = d.l2_cache_size
        self.shared_memory_per_block = d.shared_memory_per_block
        self.shared_memory_per_block_optin = d.shared_memory_per_block_optin
        self.shared_memory_per_multiprocessor = d.shared_memory_per_multiprocessor
        self.clock_rate = d.clock_rate
        self.memory_clock_rate = d.memory_clock_rate
        self.memory_bus_width = d.memory_bus_width
        self.gcnArchName = d.gcn_arch_name
        self.uuid = "00000000-0000-0000-0000-000000000000"
        self.pci_bus_id = 0
        self.pci_device_id = 0
        self.pci_domain_id = 0

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // (1024 * 1024)}MB, "
                f"multi_processor_count={self.multi_processor_count}, uuid={self.uuid}, pci_bus_id=0, "
                f"pci_device_id=0, pci_domain_id=0, L2_cache_size={self.L2_cache_size // (1024 * 1024)}MB) "
                f"[emulated by tilescope]")


def _index(device) -> int:
    """The device index of a torch.cuda ``device`` argument (None, int, "cuda", "cuda:0", torch.device);
    only device 0 exists."""
    if device is None:
        return 0
    if isinstance(device, str):
        kind, _, index = device.partition(":")
        if kind not in ("cuda", "") or (index and not index.isdigit()):
            raise ValueError(f"invalid CUDA device {device!r}")
        idx = int(index or 0)
    elif isinstance(device, int):
        idx = device
    else:  # torch.device
        idx = device.index or 0
    if idx != 0:
        raise ValueError(f"tilescope emulates one GPU (device 0); the program asked for device {device!r}")
    return 0


class Stream:
    """A stream of the emulated device. Launches run to completion when made, so every operation on a
    stream is complete: synchronize and waits return at once."""

    def __init__(self, device=None, priority=0, **kwargs):
        self.device_index = _index(device)
        self.priority = priority
        self.cuda_stream = 0

    @property
    def device(self):
        import torch

        return torch.device("cuda", 0)

    def query(self):
        return True

    def synchronize(self):
        pass

    def wait_stream(self, stream):
        pass

    def wait_event(self, event):
        pass

    def record_event(self, event=None):
        event = event or Event()
        event.record(self)
        return event

    def __eq__(self, other):
        return isinstance(other, Stream)

    def __hash__(self):
        return 0

    def __repr__(self):
        return "<tilescope emulated stream (device 0)>"


class Event:
    """An event of the emulated device. ``elapsed_time`` is NaN: there is no GPU to time (see do_bench)."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False, **kwargs):
        self.enable_timing = enable_timing
        self.recorded = False

    def record(self, stream=None):
        self.recorded = True

    def query(self):
        return True

    def synchronize(self):
        pass

    def wait(self, stream=None):
        pass

    def elapsed_time(self, end_event):
        _note_no_timing()
        return float("nan")


class _NoOpContext:
    """``torch.cuda.device(i)``, ``torch.cuda.device_of(t)``: the one device is always current."""

    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_streams = threading.local()


def _current_stream(device=None):
    _index(device)
    s = getattr(_streams, "current", None)
    return s if s is not None else _DEFAULT_STREAM


_DEFAULT_STREAM = Stream()


def _set_stream(stream):
    _streams.current = stream


@contextlib.contextmanager
def _stream(stream):
    old = getattr(_streams, "current", None)
    if stream is not None:
        _streams.current = stream
    try:
        yield stream
    finally:
        _streams.current = old


def _answer(value):
    """A torch.cuda query of device 0 that answers ``value``."""

    def query(device=None):
        _index(device)
        return value

    return query


def _nothing(*args, **kwargs):
    return None


def _zero(*args, **kwargs):
    return 0


def _torch_cuda_table(d: Device, on_cpu: bool) -> dict:
    """name in torch.cuda -> what answers for the emulated device."""
    table = {
        "get_device_capability": _answer(d.capability),
        "get_device_name": _answer(d.name),
        "get_device_properties": _answer(DeviceProperties(d)),
        "current_device": lambda: 0,
        "set_device": _answer(None),
        "synchronize": _answer(None),  # launches are complete when they return
        "init": _nothing,
        "is_initialized": lambda: True,
        "is_bf16_supported": lambda including_emulation=True: d.capability >= (8, 0),
        "is_tf32_supported": lambda: d.backend == "cuda" and d.capability >= (8, 0),
        "Stream": Stream,
        "Event": Event,
        "current_stream": _current_stream,
        "default_stream": _answer(_DEFAULT_STREAM),
        "set_stream": _set_stream,
        "stream": _stream,
        "device": _NoOpContext,
        "device_of": _NoOpContext,
        "mem_get_info": _answer((d.total_memory, d.total_memory)),
        # Memory statistics: tilescope keeps none for the device (its memory is the host's).
        "memory_allocated": _zero,
        "max_memory_allocated": _zero,
        "memory_reserved": _zero,
        "max_memory_reserved": _zero,
        "reset_peak_memory_stats": _nothing,
        "reset_max_memory_allocated": _nothing,
        "reset_accumulated_memory_stats": _nothing,
        "empty_cache": _nothing,
    }
    if on_cpu:
        table["is_available"] = lambda: True
        table["device_count"] = lambda: 1
    return table


_installed_torch = False


def install_torch() -> None:
    """Make torch.cuda answer for the selected device (torch without a usable GPU only). Idempotent."""
    global _installed_torch
    if _installed_torch:
        return
    _installed_torch = True
    import torch

    d = selected()
    on_cpu = cuda_on_cpu()
    for name, fn in _torch_cuda_table(d, on_cpu).items():
        setattr(torch.cuda, name, fn)
    nvtx = getattr(torch.cuda, "nvtx", None)
    if nvtx is not None:  # CPU builds' nvtx raises: ranges mark nothing here
        for name in ("range_push", "range_pop", "mark", "range_start", "range_end"):
            if hasattr(nvtx, name):
                setattr(nvtx, name, _zero)
        if hasattr(nvtx, "range"):
            nvtx.range = _NoOpContext
    # Programs reach the device module as getattr(torch, DEVICE.type): with DEVICE the CPU that is
    # torch.cpu, which lacks set_stream (tutorial 02's benchmark).
    if not hasattr(torch.cpu, "set_stream"):
        torch.cpu.set_stream = _nothing
    if on_cpu:
        _install_cuda_on_cpu(torch)


# --------------------------------------------------------------------------------------------
# --cuda-on-cpu: "cuda" tensors are made on the CPU


def _install_cuda_on_cpu(torch) -> None:
    from torch.overrides import TorchFunctionMode

    tensor_cuda = torch.Tensor.cuda

    def is_cuda(x) -> bool:
        if isinstance(x, str):
            return x == "cuda" or x.startswith("cuda:")
        return isinstance(x, torch.device) and x.type == "cuda"

    class CudaOnCpu(TorchFunctionMode):
        """Every torch function given a "cuda" device (the ``device`` keyword, or an argument after the
        first, as ``x.to("cuda")`` passes it) gets the CPU instead; ``Tensor.cuda()`` is the tensor
        itself; ``pin_memory`` is dropped."""

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if func is tensor_cuda:
                return args[0]
            if is_cuda(kwargs.get("device")):
                kwargs["device"] = "cpu"
            if kwargs.get("pin_memory"):
                kwargs["pin_memory"] = False
            if any(is_cuda(a) for a in args[1:]):
                args = tuple("cpu" if i and is_cuda(a) else a for i, a in enumerate(args))
            return func(*args, **kwargs)

    # The mode stays on for the life of the program (this thread: torch keeps modes per thread).
    CudaOnCpu().__enter__()


# --------------------------------------------------------------------------------------------
# Benchmarks

_noted = set()


def _note_once(key: str, text: str) -> None:
    if key in _noted:
        return
    _noted.add(key)
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _note_no_timing() -> None:
    _note_once("timing", "tilescope: GPU times are NaN here (there is no GPU to time): triton.testing.do_bench "
               "returns NaN without running the function (--bench-all runs it once, sanitized); "
               "torch.cuda.Event.elapsed_time is NaN\n")


def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean"):
    """``triton.testing.do_bench`` under tilescope: NaN where Triton returns milliseconds, in the same
    shape (a list per quantile, one value when there is one; a list for return_mode "all"). ``fn`` is
    not run, unless bench_all(): then once (its launches run on the engine and are sanitized)."""
    assert return_mode in ["min", "max", "mean", "median", "all"]
    if bench_all():
        fn()
    _note_no_timing()
    nan = float("nan")
    if quantiles is not None:
        return [nan] * len(quantiles) if len(quantiles) != 1 else nan
    if return_mode == "all":
        return [nan]
    return nan


def do_bench_cudagraph(fn, rep=20, grad_to_none=None, quantiles=None, return_mode="mean"):
    """``triton.testing.do_bench_cudagraph`` under tilescope: as do_bench."""
    return do_bench(fn, quantiles=quantiles, return_mode=return_mode)


def bench_all() -> bool:
    """Whether benchmarks run in full (``--bench-all``, TILESCOPE_BENCH_ALL=1): perf_report at every x
    value, not the first only, and do_bench running its function once, not never."""
    return os.environ.get("TILESCOPE_BENCH_ALL", "") not in ("", "0")


_installed_bench = False


def install_bench() -> None:
    """Replace triton.testing's benchmark functions; perf_report runs each benchmark at its first x value
    only (unless bench_all()). Idempotent."""
    global _installed_bench
    if _installed_bench:
        return
    _installed_bench = True
    import copy

    import triton.testing

    triton.testing.do_bench = do_bench
    triton.testing.do_bench_cudagraph = do_bench_cudagraph
    original_run = triton.testing.Mark._run

    def _run(self, bench, *args, **kwargs):
        xs = list(bench.x_vals)
        if not bench_all() and len(xs) > 1:
            _note_once(f"bench-{id(bench)}", f"tilescope: benchmark '{bench.plot_name}' runs at the first of its "
                       f"{len(xs)} x values only ({', '.join(bench.x_names)} = {xs[0]!r}); --bench-all runs "
                       "them all\n")
            bench = copy.copy(bench)
            bench.x_vals = xs[:1]
        return original_run(self, bench, *args, **kwargs)

    triton.testing.Mark._run = _run


def install() -> None:
    """The emulated device for a process without a GPU driver: torch.cuda and the benchmarks."""
    try:
        import torch  # noqa: F401
    except ImportError:
        torch = None
    if torch is not None:
        install_torch()
    install_bench()
