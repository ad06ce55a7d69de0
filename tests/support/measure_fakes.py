"""Fakes for the measure tests: an NVML backend whose GPUs integrate a power function of a clock, and RAPL powercap zones."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pipelines.measure.nvml import NvmlCallError, NvmlNoPermission, NvmlNotSupported, NvmlUnavailable


class FakeClock:
    """A clock (s) that moves only when told to."""

    def __init__(self, t: float = 0.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, dt: float) -> None:
        self.t += dt


@dataclass
class FakeGpu:
    """One GPU. Power (W) is ``power_w(t, limit_w)``; the counter (mJ) integrates it exactly at each read."""

    name: str
    uuid: str
    power_w: Callable[[float, float], float]
    clock: Callable[[], float]
    has_counter: bool = True
    limit_mw: int = 250_000
    limit_range_mw: tuple[int, int] = (100_000, 300_000)
    can_set_limit: bool = True
    counter_mj: float = 5_000_000.0
    _last_t: float | None = None
    set_calls: list[int] = field(default_factory=list)

    def advance(self) -> None:
        now = self.clock()
        if self._last_t is not None and now > self._last_t:
            # exact for power constant over the step (the tests change power only at read times)
            self.counter_mj += self.power_w(self._last_t, self.limit_mw / 1000) * (now - self._last_t) * 1000
        self._last_t = now


@dataclass
class FakeMig:
    uuid: str
    parent: FakeGpu


class FakeNvml:
    """``NvmlBackend`` over fake GPUs (handles are the FakeGpu / FakeMig objects)."""

    def __init__(self, gpus: list[FakeGpu], migs: list[FakeMig] = (), *, unavailable: str | None = None) -> None:
        self.gpus, self.migs, self.unavailable = gpus, list(migs), unavailable
        self.init_calls = self.shutdown_calls = 0

    def init(self) -> None:
        self.init_calls += 1
        if self.unavailable:
            raise NvmlUnavailable(f"NVML could not start: {self.unavailable}")

    def shutdown(self) -> None:
        self.shutdown_calls += 1

    def device_count(self) -> int:
        return len(self.gpus)

    def handle_by_index(self, index: int) -> FakeGpu:
        return self.gpus[index]

    def handle_by_uuid(self, uuid: str) -> FakeGpu | FakeMig:
        for h in [*self.gpus, *self.migs]:
            if h.uuid == uuid:
                return h
        raise NvmlCallError(f"nvmlDeviceGetHandleByUUID: Not Found ({uuid})")

    def name(self, handle: FakeGpu) -> str:
        return handle.name

    def uuid(self, handle: FakeGpu | FakeMig) -> str:
        return handle.uuid

    def is_mig_device(self, handle: object) -> bool:
        return isinstance(handle, FakeMig)

    def mig_parent(self, handle: FakeMig) -> FakeGpu:
        return handle.parent

    def total_energy_mj(self, handle: FakeGpu) -> int:
        assert isinstance(handle, FakeGpu), "a MIG handle has no energy counter: the monitor must use the parent"
        if not handle.has_counter:
            raise NvmlNotSupported("nvmlDeviceGetTotalEnergyConsumption: Not Supported")
        handle.advance()
        return int(handle.counter_mj)

    def power_usage_mw(self, handle: FakeGpu) -> int:
        handle.advance()
        return round(handle.power_w(handle.clock(), handle.limit_mw / 1000) * 1000)

    def power_limit_mw(self, handle: FakeGpu) -> int:
        return handle.limit_mw

    def enforced_power_limit_mw(self, handle: FakeGpu) -> int:
        return handle.limit_mw

    def power_limit_range_mw(self, handle: FakeGpu) -> tuple[int, int]:
        return handle.limit_range_mw

    def set_power_limit_mw(self, handle: FakeGpu, limit_mw: int) -> None:
        if not handle.can_set_limit:
            raise NvmlNoPermission("nvmlDeviceSetPowerManagementLimit: Insufficient Permissions (needs root or CAP_SYS_ADMIN)")
        handle.advance()
        handle.set_calls.append(limit_mw)
        handle.limit_mw = limit_mw


def rapl_zone(root: Path, name: str, label: str, energy_uj: int, max_uj: int = 262_143_328_850) -> Path:
    """A powercap zone folder as the kernel exposes it (name, energy counter, its range, a 125 W long-term limit)."""
    zone = root / name
    zone.mkdir(parents=True)
    (zone / "name").write_text(label + "\n")
    (zone / "energy_uj").write_text(f"{energy_uj}\n")
    (zone / "max_energy_range_uj").write_text(f"{max_uj}\n")
    (zone / "constraint_0_power_limit_uw").write_text("125000000\n")
    return zone
