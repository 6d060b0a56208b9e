"""Make Triton usable on a machine without a GPU.

Triton's launch path asks ``driver.active`` for the current device, stream and target; on a machine
without a GPU no driver is active and that raises. tilescope never runs Triton's launcher (launches go
to the CPU engine), but programs and libraries still ask the driver (``get_current_target``,
``get_active_torch_device``, ``utils.get_device_properties``, autotuner benchmarkers). When no real
driver is active, this installs a stand-in that answers for the emulated device (``_device``: the
``--target``, default sm_90) whose tensors live on the CPU, and the rest of the emulated device
(torch.cuda's queries, the benchmarks).
"""
from __future__ import annotations

import os

from . import _device

try:
    from triton.backends.driver import DriverBase as _DriverBase
except ImportError:  # only the annotations need it; Triton is checked where it is used
    _DriverBase = object


def target():
    """The GPUTarget every kernel is compiled for (``_device.selected()``)."""
    return _device.gpu_target()


class _Utils:

    def get_device_properties(self, device=0):
        return _device.triton_device_properties(_device.selected())


class CpuDriver(_DriverBase):
    """The stand-in ``driver.active`` when no GPU driver is available."""

    def __init__(self):
        self.utils = _Utils()

    @staticmethod
    def is_active():
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
        return _device.selected().capability

    def get_device_interface(self):
        import torch

        return torch.cuda

    def get_benchmarker(self):
        return _device.do_bench

    def get_empty_cache_for_benchmark(self):
        import torch

        return torch.empty(1, dtype=torch.int8)

    def clear_cache(self, cache):
        pass

    def map_python_to_cpp_type(self, ty):
        return ty


_installed = False


def install():
    """Install the stand-in driver and the emulated device unless a real driver is active. Idempotent."""
    global _installed
    if _installed:
        return
    _installed = True
    os.environ.setdefault("TRITON_MOCK_PTX_VERSION", "8.7")
    _device.selected()  # a bad TILESCOPE_TARGET fails here, before anything is patched
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
        _device.install()
