"""Who picks the (batch size, power limit) of each job run: Zeus and the three baselines.

A policy answers ``choose()`` -> (batch size, power limit, profile_first_epoch) for a run that
may explore, ``power_limit(bs)`` for a concurrent run at the best known batch size, and learns
from ``observe(bs, limit, cost, reached)``. ``early_stopping`` says whether runs are cut at
beta x the minimum cost; ``max_tries`` bounds the runs of one recurrence in single-job mode and
``first_must_reach`` makes a miss in the first recurrence an error (both as published for Zeus).

* Zeus: the pruning + Gaussian TS batch-size optimizer with just-in-time power-limit profiling
  (the first run of a batch size splits its first epoch across all limits, high to low, and
  then uses the limit with the lowest epoch cost).
* Default: b0 at its maximum power limit, every run.
* Grid Search: each (batch size, power limit) once, batch sizes then limits ascending, then the
  cheapest configuration that reached the target (b0 at its maximum limit if none did).
* Oracle: the configuration with the lowest expected cost to reach the target over the trace's
  runs, known in hindsight (a lower bound for regret), every run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

from pipelines.vocabulary import POLICIES, PolicyName
from pipelines.zeus.bandit import PruningGTSOptimizer
from pipelines.zeus.cost import zeus_cost
from pipelines.zeus.errors import SimulationError
from pipelines.zeus.traces import BatchSizeTable, WorkloadTable

#: Runs of one recurrence before the published simulator gives up.
ZEUS_MAX_TRIES = 20


class Policy(Protocol):
    early_stopping: bool
    max_tries: int
    first_must_reach: bool

    def choose(self) -> tuple[int, int, bool]: ...

    def power_limit(self, batch_size: int) -> int: ...

    def observe(self, batch_size: int, power_limit: int, cost: float, reached: bool) -> None: ...


class ZeusPolicy:
    """Zeus: pruning Gaussian TS over batch sizes, JIT profiling of power limits."""

    early_stopping = True
    max_tries = ZEUS_MAX_TRIES
    first_must_reach = True

    def __init__(self, table: WorkloadTable, eta: float, seed: int, concurrency: bool) -> None:
        self.bso = PruningGTSOptimizer(list(table.batch_sizes), table.spec.default_bs, seed, concurrency)
        self._table = table
        self._eta = eta
        self._best_pl: dict[int, int] = {}  # batch sizes profiled so far -> their power limit

    def choose(self) -> tuple[int, int, bool]:
        bs = self.bso.predict()
        limit = self._best_pl.get(bs)
        if limit is not None:
            return bs, limit, False
        limit = self._best_pl[bs] = self._table.by_batch_size[bs].best_power_limit(self._eta)
        return bs, limit, True

    def power_limit(self, batch_size: int) -> int:
        limit = self._best_pl.get(batch_size)
        if limit is None:
            raise SimulationError(f"Power not profiled for best known BS {batch_size}")
        return limit

    def observe(self, batch_size: int, power_limit: int, cost: float, reached: bool) -> None:
        self.bso.observe(batch_size, cost, reached)


class FixedPolicy:
    """One configuration for every run (Default: b0 at its maximum limit; Oracle: the hindsight best)."""

    early_stopping = False
    first_must_reach = False

    def __init__(self, batch_size: int, power_limit: int) -> None:
        self.config = (batch_size, power_limit)
        self.max_tries = ZEUS_MAX_TRIES

    def choose(self) -> tuple[int, int, bool]:
        return self.config[0], self.config[1], False

    def power_limit(self, batch_size: int) -> int:
        return self.config[1]

    def observe(self, batch_size: int, power_limit: int, cost: float, reached: bool) -> None:
        pass


class GridSearchPolicy:
    """Every configuration once, in order, then the cheapest observed run that reached the target."""

    early_stopping = False
    first_must_reach = False

    def __init__(self, table: WorkloadTable) -> None:
        self._table = table
        self._todo = table.configs()
        self._next = 0
        self._fallback = (table.spec.default_bs, table.by_batch_size[table.spec.default_bs].max_power_limit)
        self._best: tuple[int, int] | None = None
        self._best_cost = math.inf
        self.max_tries = len(self._todo) + ZEUS_MAX_TRIES

    def best(self) -> tuple[int, int]:
        return self._best if self._best is not None else self._fallback

    def choose(self) -> tuple[int, int, bool]:
        if self._next < len(self._todo):
            self._next += 1
            bs, limit = self._todo[self._next - 1]
        else:
            bs, limit = self.best()
        return bs, limit, False

    def power_limit(self, batch_size: int) -> int:
        return self._table.by_batch_size[batch_size].max_power_limit

    def observe(self, batch_size: int, power_limit: int, cost: float, reached: bool) -> None:
        if reached and cost < self._best_cost:
            self._best, self._best_cost = (batch_size, power_limit), cost


@dataclass(frozen=True)
class OracleChoice:
    """The configuration with the lowest expected cost to reach the target (retrying misses).

    Over the trace's runs of a configuration (each equally likely), one attempt runs to the
    target epoch or, for a run that never reaches it within max_epochs, max_epochs epochs.
    Expected values to reach the target are per-attempt means divided by the reach probability.
    """

    batch_size: int
    power_limit: int
    reach_probability: float
    expected_energy: float  # J
    expected_time: float  # s
    expected_cost: float  # eta x energy + (1 - eta) x MaxPower x time


def expected_to_target(row: BatchSizeTable, limit: int, max_epochs: int) -> tuple[float, float, float] | None:
    """(reach probability, expected energy J, expected time s) to reach the target at ``limit``, retrying misses; None: never.

    Over the trace's runs of the batch size (each equally likely), one attempt runs to the target
    epoch or, for a run that never reaches it within ``max_epochs``, ``max_epochs`` epochs; the
    expected values to reach the target are the per-attempt means divided by the reach probability.
    """
    epochs = [te if not math.isnan(te) and te <= max_epochs else max_epochs for te in row.target_epochs]
    reached = sum(1 for te in row.target_epochs if not math.isnan(te) and te <= max_epochs)
    if reached == 0:
        return None
    p = reached / len(epochs)
    mean_epochs = sum(epochs) / len(epochs)
    i = row.limit_index(limit)
    return p, mean_epochs * row.energy_per_epoch[i] / p, mean_epochs * row.time_per_epoch[i] / p


def oracle_config(table: WorkloadTable, eta: float) -> OracleChoice:
    """The hindsight-optimal configuration of ``table`` for the hybrid cost with ``eta``."""
    best: OracleChoice | None = None
    for bs, limit in table.configs():
        found = expected_to_target(table.by_batch_size[bs], limit, table.spec.max_epochs)
        if found is None:
            continue
        p, energy, time = found
        cost = zeus_cost(eta, energy, table.max_power, time)
        if best is None or cost < best.expected_cost:
            best = OracleChoice(bs, limit, p, energy, time, cost)
    if best is None:
        raise ValueError(f"no configuration of {table.spec} on {table.gpu} ever reaches the target")
    return best


def make_policy(name: PolicyName, table: WorkloadTable, eta: float, seed: int, concurrency: bool) -> Policy:
    """A fresh policy of kind ``name`` for one job (or one group of recurring jobs)."""
    if name == "zeus":
        return ZeusPolicy(table, eta, seed, concurrency)
    if name == "default":
        b0 = table.spec.default_bs
        return FixedPolicy(b0, table.by_batch_size[b0].max_power_limit)
    if name == "grid-search":
        return GridSearchPolicy(table)
    if name == "oracle":
        choice = oracle_config(table, eta)
        return FixedPolicy(choice.batch_size, choice.power_limit)
    raise ValueError(f"unknown policy {name!r}; expected one of {', '.join(POLICIES)}")
