"""Deltas of monotone energy counters that may wrap around (RAPL) or reset (NVML after a driver reload).

A counter read at the start and at the end of a window gives the energy of the window as
``end - begin``. When ``end < begin`` the counter wrapped (it counts modulo a known range, as
RAPL's ``energy_uj`` does modulo ``max_energy_range_uj``) or was reset (NVML's total-energy
counter restarts at 0 when the driver reloads). Either way the delta is never negative.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Anomaly = Literal["wraparound", "reset"]


@dataclass(frozen=True)
class CounterDelta:
    """The increase of a counter over a window, in the counter's unit (mJ, uJ); always >= 0.

    ``anomaly`` is None for a plain ``end - begin``. ``"wraparound"``: the counter passed its
    range once (a window spanning several wraps cannot be told apart and is undercounted).
    ``"reset"``: the counter restarted; ``value`` is then the part counted since the reset, a
    lower bound of the window's true increase.
    """

    value: int
    anomaly: Anomaly | None = None


def counter_delta(begin: int, end: int, wrap_range: int | None = None) -> CounterDelta:
    """``end - begin`` for a counter that counts modulo ``wrap_range`` (None: it never wraps, so it reset).

    >>> counter_delta(10, 25)
    CounterDelta(value=15, anomaly=None)
    >>> counter_delta(90, 5, wrap_range=100)
    CounterDelta(value=15, anomaly='wraparound')
    >>> counter_delta(90, 5)
    CounterDelta(value=5, anomaly='reset')
    """
    if begin < 0 or end < 0:
        raise ValueError(f"counter readings must be >= 0, got begin={begin}, end={end}")
    if end >= begin:
        return CounterDelta(end - begin)
    if wrap_range is not None and begin <= wrap_range:
        return CounterDelta(end + wrap_range - begin, "wraparound")
    return CounterDelta(end, "reset")
