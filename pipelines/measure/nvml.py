"""The NVML calls the monitor needs, behind a small interface: ``PynvmlBackend`` wraps pynvml, tests pass a fake.

Units are NVML's own: energy in mJ (since the driver loaded), power and power limits in mW.
Errors are translated into the exceptions below, so callers never import pynvml to catch them.
``pynvml`` (package ``nvidia-ml-py``) is imported in ``PynvmlBackend.init``, never at import time.
"""

from __future__ import annotations

import contextlib
from typing import Any, Protocol

#: An opaque NVML device handle (a ctypes pointer for pynvml; anything hashable for a fake).
Handle = Any


class NvmlUnavailable(RuntimeError):
    """NVML cannot be used at all: nvidia-ml-py missing, no NVIDIA driver, or no GPU. ``str()`` says which."""


class NvmlNotSupported(RuntimeError):
    """The GPU does not support this query (NVML_ERROR_NOT_SUPPORTED, or a function the driver lacks)."""


class NvmlNoPermission(PermissionError):
    """The call needs privileges the process lacks (setting a power limit needs root or CAP_SYS_ADMIN)."""


class NvmlCallError(RuntimeError):
    """Any other NVML failure (GPU lost, timeout, ...), with the function's name."""


class NvmlBackend(Protocol):
    """The NVML surface used by ``EnergyMonitor`` and ``power_limit``; every method may raise the errors above."""

    def init(self) -> None:
        """Start NVML; raises ``NvmlUnavailable`` with the reason when it cannot."""

    def shutdown(self) -> None: ...

    def device_count(self) -> int: ...

    def handle_by_index(self, index: int) -> Handle: ...

    def handle_by_uuid(self, uuid: str) -> Handle:
        """A GPU or MIG-instance handle from its UUID (``GPU-...`` or ``MIG-...``)."""

    def name(self, handle: Handle) -> str: ...

    def uuid(self, handle: Handle) -> str: ...

    def is_mig_device(self, handle: Handle) -> bool: ...

    def mig_parent(self, handle: Handle) -> Handle:
        """The physical GPU of a MIG-instance handle."""

    def total_energy_mj(self, handle: Handle) -> int:
        """Energy (mJ) consumed since the driver loaded; ``NvmlNotSupported`` before Volta."""

    def power_usage_mw(self, handle: Handle) -> int:
        """Current power draw (mW); on recent GPUs an average over the last second."""

    def power_limit_mw(self, handle: Handle) -> int:
        """The power-management limit currently set (mW)."""

    def enforced_power_limit_mw(self, handle: Handle) -> int:
        """The limit in effect (mW): the smaller of the set limit and any other cap."""

    def power_limit_range_mw(self, handle: Handle) -> tuple[int, int]:
        """(min, max) power-management limit the GPU accepts (mW)."""

    def set_power_limit_mw(self, handle: Handle, limit_mw: int) -> None: ...


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


class PynvmlBackend:
    """``NvmlBackend`` over nvidia-ml-py (``import pynvml``)."""

    def __init__(self) -> None:
        self._nvml: Any = None

    def init(self) -> None:
        try:
            import pynvml
        except ImportError as exc:
            raise NvmlUnavailable("the Python module pynvml (package nvidia-ml-py) is not installed") from exc
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            raise NvmlUnavailable(f"NVML could not start: {exc} (is an NVIDIA driver installed and loaded?)") from exc
        self._nvml = pynvml

    def shutdown(self) -> None:
        if self._nvml is not None:
            nvml, self._nvml = self._nvml, None
            with contextlib.suppress(nvml.NVMLError):  # shutting down a broken NVML has nothing left to release
                nvml.nvmlShutdown()

    def _call(self, function: str, *args: object) -> Any:
        nvml = self._nvml
        if nvml is None:
            raise NvmlUnavailable("NVML is not initialized (call init() first)")
        try:
            return getattr(nvml, function)(*args)
        except nvml.NVMLError as exc:
            code = getattr(exc, "value", None)
            if code in (nvml.NVML_ERROR_NOT_SUPPORTED, nvml.NVML_ERROR_FUNCTION_NOT_FOUND):
                raise NvmlNotSupported(f"{function}: {exc}") from exc
            if code == nvml.NVML_ERROR_NO_PERMISSION:
                raise NvmlNoPermission(f"{function}: {exc} (needs root or CAP_SYS_ADMIN)") from exc
            if code in (nvml.NVML_ERROR_UNINITIALIZED, nvml.NVML_ERROR_DRIVER_NOT_LOADED, nvml.NVML_ERROR_LIBRARY_NOT_FOUND):
                raise NvmlUnavailable(f"{function}: {exc}") from exc
            raise NvmlCallError(f"{function}: {exc}") from exc

    def device_count(self) -> int:
        return int(self._call("nvmlDeviceGetCount"))

    def handle_by_index(self, index: int) -> Handle:
        return self._call("nvmlDeviceGetHandleByIndex", index)

    def handle_by_uuid(self, uuid: str) -> Handle:
        return self._call("nvmlDeviceGetHandleByUUID", uuid)

    def name(self, handle: Handle) -> str:
        return _text(self._call("nvmlDeviceGetName", handle))

    def uuid(self, handle: Handle) -> str:
        return _text(self._call("nvmlDeviceGetUUID", handle))

    def is_mig_device(self, handle: Handle) -> bool:
        try:
            return bool(self._call("nvmlDeviceIsMigDeviceHandle", handle))
        except NvmlNotSupported:  # GPUs without MIG (and old drivers) cannot hold a MIG handle
            return False

    def mig_parent(self, handle: Handle) -> Handle:
        return self._call("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", handle)

    def total_energy_mj(self, handle: Handle) -> int:
        return int(self._call("nvmlDeviceGetTotalEnergyConsumption", handle))

    def power_usage_mw(self, handle: Handle) -> int:
        return int(self._call("nvmlDeviceGetPowerUsage", handle))

    def power_limit_mw(self, handle: Handle) -> int:
        return int(self._call("nvmlDeviceGetPowerManagementLimit", handle))

    def enforced_power_limit_mw(self, handle: Handle) -> int:
        return int(self._call("nvmlDeviceGetEnforcedPowerLimit", handle))

    def power_limit_range_mw(self, handle: Handle) -> tuple[int, int]:
        lo, hi = self._call("nvmlDeviceGetPowerManagementLimitConstraints", handle)
        return int(lo), int(hi)

    def set_power_limit_mw(self, handle: Handle, limit_mw: int) -> None:
        self._call("nvmlDeviceSetPowerManagementLimit", handle, limit_mw)
