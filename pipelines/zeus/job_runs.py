"""The trace-driven outcome of one job run, and the record of it.

A run of a job at (batch size, power limit) samples one training path (one of the trace's runs
at that batch size and target, uniformly, with the simulation's PCG64 stream exactly as
``DataFrame.sample(n=1, random_state=rng)`` draws it), then:

* stops early: with a cost bound C, it runs at most floor(C / epoch cost) epochs, where the
  epoch cost is eta x E_epoch + (1 - eta) x P_max,bs x T_epoch and P_max,bs is the largest limit
  profiled at that batch size; a run that cannot afford one epoch never starts (0 J, 0 s, missed);
* reaches the target at the path's target epoch if that is within the epoch budget
  (max_epochs, or the early-stopping bound), else stops at the budget and misses;
* profiles power just in time on the first run of a batch size: its first epoch costs the mean
  epoch energy and time over all limits of that batch size.

The hybrid cost of a run is eta x energy + (1 - eta) x MaxPower x time (MaxPower: the GPU's
largest limit in the trace).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from pipelines.zeus.cost import zeus_cost
from pipelines.zeus.errors import SimulationError
from pipelines.zeus.exact import Uint32Draws
from pipelines.zeus.traces import WorkloadTable


class JobRun(NamedTuple):
    """One run of a recurring job. ``job``: recurrence index (single) or trace-job index in its group."""

    job: int
    bs: int
    pl: int
    energy: float  # J
    time: float  # s
    reached: bool


class RunSampler:
    """Samples run outcomes of one job on one GPU from a PCG64 stream seeded with ``seed``."""

    def __init__(self, table: WorkloadTable, eta: float, seed: int) -> None:
        self._table = table
        self._eta = eta
        self._max_epochs = table.spec.max_epochs
        self._draws = Uint32Draws(np.random.PCG64(seed), prefetch=64)
        self._configs: dict[tuple[int, int], tuple[float, float, int, float, float, tuple[float, ...]]] = {}

    def _config(self, bs: int, power_limit: int) -> tuple[float, float, int, float, float, tuple[float, ...]]:
        t = self._table.by_batch_size[bs]
        if not t.target_epochs:
            raise SimulationError(f"no train-trace run of {self._table.spec} at batch size {bs} on {self._table.gpu}")
        i = t.limit_index(power_limit)
        cfg = (
            t.energy_per_epoch[i],
            t.time_per_epoch[i],
            t.max_power_limit,
            t.profiling_epoch_energy,
            t.profiling_epoch_time,
            t.target_epochs,
        )
        self._configs[(bs, power_limit)] = cfg
        return cfg

    def run(self, bs: int, power_limit: int, profile: bool, cost_bound: float) -> tuple[float, float, bool]:
        """(energy J, time s, reached) of one run; (0.0, 0.0, False) when it cannot afford one epoch."""
        cfg = self._configs.get((bs, power_limit)) or self._config(bs, power_limit)
        epe, tpe, max_pl, first_e, first_t, targets = cfg
        target = targets[self._draws.choice_one(len(targets))]
        if cost_bound == math.inf:
            budget: float = self._max_epochs
        else:
            eta = self._eta
            budget = min(cost_bound // zeus_cost(eta, epe, max_pl, tpe), self._max_epochs)
        if budget == 0:
            return 0.0, 0.0, False
        reached = not math.isnan(target) and target <= budget
        epochs = target if reached else budget
        if profile:
            return first_e + epe * (epochs - 1), first_t + tpe * (epochs - 1), reached
        return epe * epochs, tpe * epochs, reached

