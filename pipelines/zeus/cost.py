"""Zeus's cost: eta x energy + (1 - eta) x MaxPower x time (J), written once per floating-point form.

One formula, two orders of evaluation, each the order a published peer computes it in, so that every site keeps its
peer's numbers bit for bit:

* ``zeus_cost``: eta x E + (1 - eta) x MaxPower x T, as ``zeus.utils.metric.zeus_cost`` (the power-limit optimizer,
  the simulator's run cost, its cost bound per epoch, the Oracle, the figures' expectations);
* ``power_cost``: (eta x P + (1 - eta) x MaxPower) x T from an average power P, the JIT profiler's per-epoch cost in
  the artifact's simulator and Zeus²'s per-GPU cost.

With E = P x T the two agree in exact arithmetic, not always in the last bit. Both take floats, numpy arrays or
polars expressions alike. The compiled replay (``kernels.py``) inlines ``zeus_cost``; tests/zeus/test_cost.py holds
its costs equal to this function's, bit for bit.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np
import polars as pl

#: A number, an array of numbers or a polars expression: the formula is the same arithmetic on each.
Value = TypeVar("Value", float, np.ndarray, pl.Expr)


def zeus_cost(eta: float, energy: Value, max_power: Value, time: Value) -> Value:
    """eta x energy (J) + (1 - eta) x max_power (W) x time (s), in J; ``eta`` in [0, 1]."""
    return eta * energy + (1 - eta) * max_power * time


def power_cost(eta: float, power: Value, max_power: Value, time: Value) -> Value:
    """(eta x power (W) + (1 - eta) x max_power (W)) x time (s), in J; ``eta`` in [0, 1]."""
    return (eta * power + (1 - eta) * max_power) * time
