"""Make Triton usable on a machine without a GPU.

Triton's launch path asks ``driver.active`` for the current device, stream and target; on a machine
without CUDA no driver is active and that raises. tilescope never runs Triton's launcher (launches go
to the CPU engine), but programs and libraries still touch the driver (``get_current_device``,
``get_active_torch_device``, autotuner benchmarkers, device properties). When no real driver is
active, this installs a small stand-in that answers for a CUDA sm_90 device whose tensors live on
the CPU.
"""
from __future__ import annotations

import os

# The fixed target Triton compiles for (reference §4.2): sm_90 keeps block pointers and
# descriptors as ops, which the engine runs.
TARGET_ARCH = 90
WARP_SIZE = 32


def target():
    from triton.backends.compiler import GPUTarget

    return GPUTarget("cuda", TARGET_ARCH, WARP_SIZE)


class _DeviceProperties(dict):
    pass


class _Utils:
    def get_device_properties(self, device=0):
        # H100/H200-like numbers: libraries size grids and blocks from these.
        return _DeviceProperties(max_shared_mem=232448, max_num_regs=65536, multiprocessor_count=132,
                                 warpSize=WARP_SIZE, sm_clock_rate=1980000, mem_clock_rate=2619000,
                                 mem_bus_width=5120)


class CpuDriver:
    """The stand-in ``driver.active`` when no GPU driver is available."""

    def __init__(self):
        self.utils = _Utils()

    def is_active(self):
        return True

    def get_current_device(self):
        return 0

    def set_current_device(self, device):
        pass

    def get_current_stream(self, device=None):
        return 0

    def get_current_target(self):
        return target()

    def get_active_torch_device(self):
        import torch

        return torch.device("cpu")

    def get_device_capability(self, device=0):
        return (TARGET_ARCH // 10, TARGET_ARCH % 10)

    def get_device_interface(self):
        import torch

        return torch.cuda

    def get_benchmarker(self):
        # Autotuning is short-circuited (one configuration, no timing); anything else that asks
        # for a benchmark gets one run and zero times.
        def bench(kernel_call, quantiles=None, **kwargs):
            kernel_call()
            return [0.0] * len(quantiles) if quantiles else 0.0

        return bench

    def get_empty_cache_for_benchmark(self):
        import torch

        return torch.empty(1, dtype=torch.int8)

    def clear_cache(self, cache):
        pass

    def map_python_to_cpp_type(self, ty):
        return ty


_installed = False


def install():
    """Install the stand-in driver unless a real one is active. Idempotent."""
    global _installed
    if _installed:
        return
    _installed = True
    os.environ.setdefault("TRITON_MOCK_PTX_VERSION", "8.7")
    import importlib

    driver_mod = importlib.import_module("triton.runtime.driver")

    cfg = driver_mod.driver
    try:
        if cfg._active is not None or cfg._default is not None:
            return
        cfg._default = driver_mod._create_driver()
    except Exception:
        cfg._default = CpuDriver()
        cfg._active = cfg._default
