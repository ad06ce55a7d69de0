"""Set a GPU's power limit for the duration of a block, and always put the previous one back.

Nothing else in ``pipelines.measure`` changes a power limit. Setting one needs root or
CAP_SYS_ADMIN (``NvmlNoPermission`` otherwise); under MIG pass the parent GPU's handle.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pipelines.measure.nvml import Handle, NvmlBackend


@contextmanager
def power_limit(backend: NvmlBackend, handle: Handle, watts: float) -> Iterator[int]:
    """Set the power-management limit of ``handle`` to ``watts`` (W) inside the block; yields the limit set (mW).

    The previous limit is read first and restored on exit, whether the block returns or raises.
    A limit outside the GPU's accepted range raises ``ValueError`` before anything is changed.
    """
    target_mw = round(watts * 1000)
    lo, hi = backend.power_limit_range_mw(handle)
    if not lo <= target_mw <= hi:
        raise ValueError(f"power limit {watts} W is outside this GPU's range {lo / 1000:g}-{hi / 1000:g} W")
    previous_mw = backend.power_limit_mw(handle)
    backend.set_power_limit_mw(handle, target_mw)
    try:
        yield target_mw
    finally:
        backend.set_power_limit_mw(handle, previous_mw)
