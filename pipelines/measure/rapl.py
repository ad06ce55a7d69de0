"""CPU package energy from Linux RAPL (``/sys/class/powercap/intel-rapl:<n>/energy_uj``), for machines without a GPU.

Each top-level zone ``intel-rapl:<n>`` is one CPU package; its ``energy_uj`` counter (uJ) wraps
at ``max_energy_range_uj``. Sub-zones (core, uncore, dram) are parts of a package and the
``psys`` zone covers the whole platform, so only ``package-*`` zones are summed. When nothing is
readable (no powercap, a VM, or ``energy_uj`` readable by root only, as since Linux 5.10) the
reader says why instead of raising.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pipelines.measure.counters import counter_delta

RAPL_ROOT = Path("/sys/class/powercap")


@dataclass(frozen=True)
class RaplZone:
    name: str  # e.g. "package-0"
    path: Path
    max_energy_range_uj: int


@dataclass(frozen=True)
class RaplProbe:
    """The readable package zones, or the reason there are none (``zones`` empty)."""

    zones: tuple[RaplZone, ...]
    reason: str | None = None

    @property
    def available(self) -> bool:
        return self.reason is None


def _read_int(path: Path) -> int:
    return int(path.read_text().strip())


def probe_rapl(root: Path = RAPL_ROOT) -> RaplProbe:
    """The CPU package zones under ``root`` whose energy counter this process can read."""
    if not root.is_dir():
        return RaplProbe((), f"no RAPL: {root} does not exist (not Linux, a VM or container without powercap, or no intel_rapl driver)")
    zones, problems = [], []
    for zone in sorted(root.glob("intel-rapl:*")):
        if zone.name.count(":") != 1:  # intel-rapl:0:1 is a sub-zone of package 0
            continue
        try:
            name = (zone / "name").read_text().strip()
            if not name.startswith("package"):
                continue
            _read_int(zone / "energy_uj")
            zones.append(RaplZone(name, zone, _read_int(zone / "max_energy_range_uj")))
        except PermissionError:
            problems.append(f"{zone}/energy_uj is not readable by this user (root only since Linux 5.10)")
        except (OSError, ValueError) as exc:
            problems.append(f"{zone}: {exc}")
    if zones:
        return RaplProbe(tuple(zones))
    return RaplProbe((), "; ".join(problems) or f"no RAPL package zone under {root}")


def package_power_limit_w(probe: RaplProbe) -> float | None:
    """Sum over packages of the long-term power limit (constraint 0, W), or None if any is unreadable."""
    try:
        return sum(_read_int(z.path / "constraint_0_power_limit_uw") for z in probe.zones) / 1e6 if probe.zones else None
    except (OSError, ValueError):
        return None


def read_energy_uj(root: Path = RAPL_ROOT) -> tuple[dict[str, int] | None, str | None]:
    """Each package's counter now (uJ), or ``(None, reason)`` when no counter is readable."""
    probe = probe_rapl(root)
    if not probe.available:
        return None, probe.reason
    return {z.name: _read_int(z.path / "energy_uj") for z in probe.zones}, None


@dataclass(frozen=True)
class RaplMeasurement:
    """One window: wall time (s, >= 0), energy of all packages (J, >= 0), and whether a counter wrapped."""

    name: str
    time_s: float
    energy_j: float
    wrapped: bool

    @property
    def average_power_w(self) -> float | None:
        return self.energy_j / self.time_s if self.time_s > 0 else None


class RaplMeter:
    """Named windows of CPU package energy. Each window must be shorter than one counter wrap
    (max_energy_range_uj / power: minutes to an hour), or it is undercounted."""

    def __init__(self, probe: RaplProbe, clock: Callable[[], float] = time.monotonic) -> None:
        if not probe.available:
            raise ValueError(f"RAPL is not readable: {probe.reason}")
        self.zones = probe.zones
        self._clock = clock
        self._open: dict[str, tuple[float, dict[str, int]]] = {}

    def _read(self) -> dict[str, int]:
        return {z.name: _read_int(z.path / "energy_uj") for z in self.zones}

    def begin_window(self, name: str) -> None:
        if name in self._open:
            raise ValueError(f"window {name!r} is already open")
        self._open[name] = (self._clock(), self._read())

    def end_window(self, name: str) -> RaplMeasurement:
        if name not in self._open:
            raise ValueError(f"no open window named {name!r}")
        start_s, begin = self._open.pop(name)
        end = self._read()
        elapsed = max(0.0, self._clock() - start_s)
        deltas = [counter_delta(begin[z.name], end[z.name], z.max_energy_range_uj) for z in self.zones]
        return RaplMeasurement(name, elapsed, sum(d.value for d in deltas) / 1e6, any(d.anomaly for d in deltas))


def open_rapl(root: Path = RAPL_ROOT) -> tuple[RaplMeter | None, str | None]:
    """A meter over the readable packages, or ``(None, reason)``."""
    probe = probe_rapl(root)
    return (RaplMeter(probe), None) if probe.available else (None, probe.reason)
