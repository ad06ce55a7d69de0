"""The power limit Zeus's ``GlobalPowerLimitOptimizer`` chooses from a profile, by its four selectors.

A profile is one measurement per power limit, in the order the optimizer took them (highest limit
first when it profiled them itself): the energy (J, summed over the job's GPUs) and the time (s)
of one profiling window at that limit. The choice is the one zeus 0.16.0's
``zeus.optimizer.power_limit`` selectors make, ties included (the first measurement of the
profile wins, as Python's ``min`` does there):

- ``zeus-cost`` (``ZeusCost(eta, world_size)``): lowest eta x E + (1 - eta) x maxPL x world_size x T,
  maxPL the highest limit of the profile (W);
- ``energy`` (``Energy``): lowest E; ``time`` (``Time``): lowest T;
- ``max-slowdown`` (``MaxSlowdownConstraint(f)``): the lowest limit whose T is at most f x the T at
  the highest limit.

Plain Python, no zeus import (``tests/zeus/test_limit_selectors.py`` checks every selector against zeus).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from pipelines.vocabulary import DEFAULT_ETA
from pipelines.zeus.cost import zeus_cost

SelectorName = Literal["zeus-cost", "energy", "time", "max-slowdown"]
SELECTORS: tuple[SelectorName, ...] = get_args(SelectorName)


@dataclass(frozen=True)
class Measurement:
    """One profiling window at one power limit: ``power_limit_w`` (W, > 0), ``energy_j`` (J, > 0, all GPUs), ``time_s`` (s, > 0)."""

    power_limit_w: int
    energy_j: float
    time_s: float


@dataclass(frozen=True)
class Selector:
    """A selector and its knobs: ``eta`` in [0, 1] and ``world_size`` >= 1 (zeus-cost), ``max_slowdown`` >= 1 (max-slowdown)."""

    name: SelectorName = "zeus-cost"
    eta: float = DEFAULT_ETA
    world_size: int = 1
    max_slowdown: float = 1.1

    def __post_init__(self) -> None:
        if self.name not in SELECTORS:
            raise ValueError(f"unknown selector {self.name!r}: one of {', '.join(SELECTORS)}")
        if not 0.0 <= self.eta <= 1.0:
            raise ValueError(f"eta must be between 0 and 1, inclusive, got {self.eta}")
        if self.world_size < 1:
            raise ValueError(f"world size must be at least 1 GPU, got {self.world_size}")
        if not self.max_slowdown >= 1.0:
            raise ValueError(f"the maximum slowdown factor must be at least 1.0, got {self.max_slowdown}")


def check_profile(measurements: Sequence[Measurement]) -> None:
    """Raise ``ValueError`` unless the profile has two or more distinct limits, each with finite positive numbers."""
    if len(measurements) < 2:
        raise ValueError(f"a profile needs at least two power limits, got {len(measurements)}")
    limits = [m.power_limit_w for m in measurements]
    if len(set(limits)) != len(limits):
        raise ValueError(f"a power limit appears twice in the profile: {limits}")
    for m in measurements:
        if m.power_limit_w <= 0 or not (math.isfinite(m.energy_j) and m.energy_j > 0 and math.isfinite(m.time_s) and m.time_s > 0):
            raise ValueError(f"power limit {m.power_limit_w} W: limit, energy and time must be positive and finite, got {m}")


def max_power_w(measurements: Sequence[Measurement], world_size: int) -> int:
    """The MaxPower of the Zeus cost: the highest limit of the profile (W) times the GPUs of the job."""
    return max(m.power_limit_w for m in measurements) * world_size


def at_max_limit(measurements: Sequence[Measurement]) -> Measurement:
    """The measurement at the highest limit (the first, if the profile had it twice)."""
    top = max(m.power_limit_w for m in measurements)
    return next(m for m in measurements if m.power_limit_w == top)


def choose(measurements: Sequence[Measurement], selector: Selector) -> int:
    """The power limit (W) ``selector`` chooses from ``measurements``, as GlobalPowerLimitOptimizer would."""
    check_profile(measurements)
    if selector.name == "energy":
        return min(measurements, key=lambda m: m.energy_j).power_limit_w
    if selector.name == "time":
        return min(measurements, key=lambda m: m.time_s).power_limit_w
    if selector.name == "zeus-cost":
        top = max_power_w(measurements, selector.world_size)
        return min(measurements, key=lambda m: zeus_cost(selector.eta, m.energy_j, top, m.time_s)).power_limit_w
    shortest = at_max_limit(measurements).time_s
    return min(m.power_limit_w for m in measurements if m.time_s <= selector.max_slowdown * shortest)


@dataclass(frozen=True)
class Compared:
    """One limit of a profile beside the highest: its Zeus cost (J, ``selector``'s eta and world size) and the energy it saves (%)."""

    measurement: Measurement
    cost_j: float
    saved_vs_max_pct: float
    slowdown: float  # time / time at the highest limit


def compare(measurements: Sequence[Measurement], selector: Selector) -> list[Compared]:
    """Every measurement, in profile order, against the one at the highest limit (what the optimizer runs at before it chooses)."""
    check_profile(measurements)
    top = at_max_limit(measurements)
    max_power = max_power_w(measurements, selector.world_size)
    return [Compared(m, zeus_cost(selector.eta, m.energy_j, max_power, m.time_s), 100.0 * (top.energy_j - m.energy_j) / top.energy_j, m.time_s / top.time_s)
            for m in measurements]
