"""Named measurement windows of time (s) and energy (J) over one or more NVIDIA GPUs.

Per GPU the method is chosen once, when the monitor opens: ``"counter"`` reads NVML's total-energy
counter (mJ, Volta and newer) at both ends of a window; where the GPU answers NOT_SUPPORTED it
falls back to ``"polling"``: power (mW) sampled in a background thread every ``poll_interval_s``
and integrated with the trapezoid rule. Every number carries the method that produced it; pass
``method="polling"`` to measure every GPU the same way when results are compared.

Invariants of a ``Measurement``: time_s >= 0, every energy_j >= 0, and average power is None
rather than a division by zero. A window shorter than the method's resolution still returns a
value, flagged ``short_window`` (and a ``ShortWindowWarning``); a counter that went backwards is
flagged ``counter_reset`` and reports only the energy counted since the reset (a lower bound).

A MIG instance cannot be measured on its own: the monitor measures its parent GPU (all its
instances together) and says so in ``GpuInfo.note``. Power limits are never changed here (see
``power_limit``).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Literal

from pipelines.measure.counters import counter_delta
from pipelines.measure.nvml import Handle, NvmlBackend, NvmlNotSupported, NvmlUnavailable, PynvmlBackend
from pipelines.measure.polling import PowerPoller
from pipelines.measure.power_limit_scope import power_limit

Method = Literal["counter", "polling"]
MethodChoice = Literal["auto", "counter", "polling"]

#: Below these a window is flagged short. The counter's update period is not documented; on the
#: GPUs we know it is tens of ms. On recent GPUs a power reading averages the last 1 s.
DEFAULT_COUNTER_RESOLUTION_S = 0.1
DEFAULT_POWER_AVERAGING_S = 1.0


class ShortWindowWarning(UserWarning):
    """A window shorter than its method's resolution: its energy is a rough value (it may be 0)."""


@dataclass(frozen=True)
class GpuInfo:
    """One measured GPU. ``uuid`` and ``name`` are those of the GPU actually measured (the parent under MIG)."""

    position: int  # index in the monitor's GPU list (not necessarily NVML's index)
    name: str
    uuid: str
    method: Method
    mig_uuid: str | None = None  # the MIG instance that was asked for, when its parent is measured
    note: str | None = None


@dataclass(frozen=True)
class GpuEnergy:
    """Energy (J, >= 0) of one GPU over one window, and how it was obtained."""

    gpu: GpuInfo
    energy_j: float
    method: Method
    short_window: bool = False
    counter_reset: bool = False
    note: str | None = None


@dataclass(frozen=True)
class Measurement:
    """One closed window: its wall time (s, >= 0) and each GPU's energy (J)."""

    name: str
    time_s: float
    gpus: tuple[GpuEnergy, ...]

    @property
    def energy_j(self) -> float:
        """Total energy of all GPUs (J)."""
        return sum(g.energy_j for g in self.gpus)

    @property
    def short_window(self) -> bool:
        return any(g.short_window for g in self.gpus)

    def average_power_w(self, position: int | None = None) -> float | None:
        """Average power (W) of one GPU (or all together); None for a zero-length window."""
        energy = self.energy_j if position is None else self.gpus[position].energy_j
        return energy / self.time_s if self.time_s > 0 else None


@dataclass(frozen=True)
class _Target:
    info: GpuInfo
    handle: Handle


@dataclass(frozen=True)
class _OpenWindow:
    start_s: float
    counters_mj: dict[int, int]  # position -> counter reading (counter GPUs only)


class EnergyMonitor(AbstractContextManager["EnergyMonitor"]):
    """Named windows (``begin_window`` / ``end_window``) over ``gpus``: NVML indices, or UUIDs (``GPU-...``, ``MIG-...``).

    ``gpus=None`` measures every GPU NVML sees. Raises ``NvmlUnavailable`` (with the reason) when
    NVML cannot start or finds no GPU, and ``NvmlNotSupported`` when ``method="counter"`` is asked
    of a GPU without the counter. ``background_polling=False`` leaves sampling to ``sample()``
    calls (tests drive it with a fake clock). Windows may overlap and nest; names are unique
    among open windows. Close the monitor (or use it as a context manager) to stop the thread.
    """

    def __init__(
        self,
        gpus: Sequence[int | str] | None = None,
        *,
        backend: NvmlBackend | None = None,
        method: MethodChoice = "auto",
        poll_interval_s: float = 0.1,
        counter_resolution_s: float = DEFAULT_COUNTER_RESOLUTION_S,
        power_averaging_s: float = DEFAULT_POWER_AVERAGING_S,
        clock: Callable[[], float] = time.monotonic,
        background_polling: bool = True,
    ) -> None:
        self.backend: NvmlBackend = backend if backend is not None else PynvmlBackend()
        self.backend.init()
        self._clock = clock
        self._counter_resolution_s = counter_resolution_s
        self._polling_resolution_s = max(poll_interval_s, power_averaging_s)
        self._windows: dict[str, _OpenWindow] = {}
        try:
            selection = list(range(self.backend.device_count())) if gpus is None else list(gpus)
            if not selection:
                raise NvmlUnavailable("NVML found no GPU on this machine")
            self._targets = [self._resolve(i, sel, method) for i, sel in enumerate(selection)]
            polled = [t.info.position for t in self._targets if t.info.method == "polling"]
            self._poller = (
                PowerPoller(polled, lambda p: self.backend.power_usage_mw(self._targets[p].handle), poll_interval_s, clock)
                if polled
                else None
            )
            if self._poller is not None and background_polling:
                self._poller.start()
        except BaseException:
            self.backend.shutdown()
            raise

    def _resolve(self, position: int, selector: int | str, method: MethodChoice) -> _Target:
        backend = self.backend
        handle = backend.handle_by_index(selector) if isinstance(selector, int) else backend.handle_by_uuid(selector)
        mig_uuid = note = None
        if backend.is_mig_device(handle):
            mig_uuid = backend.uuid(handle)
            handle = backend.mig_parent(handle)
            note = f"MIG instance {mig_uuid}: measuring its parent GPU {backend.uuid(handle)} (the energy of all its instances)"
        chosen: Method
        if method == "polling":
            chosen = "polling"
        else:
            try:
                backend.total_energy_mj(handle)
                chosen = "counter"
            except NvmlNotSupported:
                if method == "counter":
                    raise
                chosen = "polling"
                support = "no total-energy counter (NVML_ERROR_NOT_SUPPORTED): power polled and integrated"
                note = f"{note}; {support}" if note else support
        info = GpuInfo(position, backend.name(handle), backend.uuid(handle), chosen, mig_uuid, note)
        return _Target(info, handle)

    @property
    def gpus(self) -> list[GpuInfo]:
        return [t.info for t in self._targets]

    def handle(self, position: int) -> Handle:
        """The NVML handle of the measured GPU at ``position`` (the parent GPU under MIG)."""
        return self._targets[position].handle

    def sample(self) -> None:
        """Take one power sample of every polled GPU now (the background thread does this by itself)."""
        if self._poller is not None:
            self._poller.sample()

    def begin_window(self, name: str) -> None:
        """Open window ``name`` now. Raises ``ValueError`` if a window of that name is open."""
        if name in self._windows:
            raise ValueError(f"window {name!r} is already open")
        if self._poller is not None:
            self._poller.sample()
        counters = {t.info.position: self.backend.total_energy_mj(t.handle) for t in self._targets if t.info.method == "counter"}
        self._windows[name] = _OpenWindow(self._clock(), counters)

    def end_window(self, name: str) -> Measurement:
        """Close window ``name`` and return its time (s) and per-GPU energy (J)."""
        window = self._windows.pop(name, None)
        if window is None:
            raise ValueError(f"no open window named {name!r} (open: {sorted(self._windows)})")
        counters = {t.info.position: self.backend.total_energy_mj(t.handle) for t in self._targets if t.info.method == "counter"}
        if self._poller is not None:
            self._poller.sample()
        end_s = self._clock()
        elapsed = max(0.0, end_s - window.start_s)
        results = tuple(
            self._counter_energy(t.info, window.counters_mj[t.info.position], counters[t.info.position], elapsed)
            if t.info.method == "counter"
            else self._polled_energy(t.info, window.start_s, end_s, elapsed)
            for t in self._targets
        )
        self._forget_old_samples()
        measurement = Measurement(name, elapsed, results)
        if measurement.short_window:
            warnings.warn(
                f"window {name!r} lasted {elapsed:.4f} s, shorter than the measurement resolution: its energy is rough",
                ShortWindowWarning,
                stacklevel=2,
            )
        return measurement

    def _counter_energy(self, gpu: GpuInfo, begin_mj: int, end_mj: int, elapsed: float) -> GpuEnergy:
        delta = counter_delta(begin_mj, end_mj)  # NVML's counter is 64-bit mJ: going backwards means a reset
        note = None
        if delta.anomaly == "reset":
            note = f"energy counter went from {begin_mj} to {end_mj} mJ (driver reload?): energy since the reset only, a lower bound"
        short = elapsed < self._counter_resolution_s or delta.value == 0
        return GpuEnergy(gpu, delta.value / 1000.0, "counter", short_window=short, counter_reset=delta.anomaly is not None, note=note)

    def _polled_energy(self, gpu: GpuInfo, start_s: float, end_s: float, elapsed: float) -> GpuEnergy:
        assert self._poller is not None
        energy = self._poller.energy_j(gpu.position, start_s, end_s)
        short = elapsed < self._polling_resolution_s
        return GpuEnergy(gpu, energy, "polling", short_window=short)

    def _forget_old_samples(self) -> None:
        if self._poller is None:
            return
        oldest = min((w.start_s for w in self._windows.values()), default=self._clock())
        self._poller.discard_before(oldest)

    def power_limit(self, position: int, watts: float) -> AbstractContextManager[int]:
        """Context manager: set GPU ``position``'s power limit to ``watts`` (W), restore the previous limit after."""
        return power_limit(self.backend, self.handle(position), watts)

    def enforced_power_limit_w(self, position: int) -> float:
        """The power limit (W) in effect on GPU ``position`` now."""
        return self.backend.enforced_power_limit_mw(self.handle(position)) / 1000.0

    def close(self) -> None:
        if self._poller is not None:
            self._poller.stop()
        self.backend.shutdown()

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class GpuProbe:
    """What NVML sees, without raising: ``reason`` is None when GPUs can be measured."""

    gpus: tuple[GpuInfo, ...]
    reason: str | None = None

    @property
    def available(self) -> bool:
        return self.reason is None


def probe_gpus(backend: NvmlBackend | None = None) -> GpuProbe:
    """The GPUs and the method each would be measured with, or the reason none can be (no driver, no GPU)."""
    try:
        with EnergyMonitor(backend=backend, background_polling=False) as monitor:
            return GpuProbe(tuple(monitor.gpus))
    except NvmlUnavailable as exc:
        return GpuProbe((), str(exc))

