"""The Zeus train and power traces as polars frames, and per-(workload, GPU) lookup tables.

Train trace (one row per run x target): the columns of ``zeus_train_runs``
(``pipelines.contracts.sources.ZeusTrainRuns``; target_epoch null = never reached). Power trace
(one row per GPU x workload x batch size x power limit): the columns of ``zeus_power_profiles``
(``ZeusPowerProfiles``: power_limit in W, time_per_epoch in s, average_power in W) but ``source``.
Unknown extra columns are ignored.

Row order matters: the simulator samples one run of a (batch size, power limit) by position
among the train rows of that workload, batch size and target, in train-trace order (file order
for ``summary_train.csv``, whose runs are ordered 1, 10, 2, 3, ...). Readers must keep file order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from pipelines.vocabulary import Job
from pipelines.zeus.cost import power_cost
from pipelines.zeus.exact import kahan_mean_of_copies, tiled_mean

#: The columns of each trace the simulator reads. Their types and units are the contracts'
#: (``ZeusTrainRuns``, ``ZeusPowerProfiles``), which every table passed here already satisfies: the
#: materialized tables were validated when written, CSVs are validated by the ingest readers. So
#: the simulator's own path imports no validation library (the command line starts faster).
TRAIN_COLUMNS: tuple[str, ...] = ("dataset", "network", "batch_size", "optimizer", "target_metric", "target_epoch")
POWER_COLUMNS: tuple[str, ...] = ("gpu", "dataset", "network", "batch_size", "optimizer", "power_limit", "time_per_epoch", "average_power")
#: The columns a train row and a power row are joined on (the published simulator's inner merge).
JOIN_KEY: tuple[str, ...] = ("dataset", "network", "batch_size", "optimizer")
TRAIN_TABLE = "zeus_train_runs"
POWER_TABLE = "zeus_power_profiles"


class TraceError(ValueError):
    """A trace that cannot be used: missing file or column, a value that does not parse."""


@dataclass(frozen=True)
class Traces:
    """The train trace and the power trace of every GPU (``gpu`` column)."""

    train: pl.DataFrame
    power: pl.DataFrame
    #: Derived lookups memoized per instance (per-GPU rows, MaxPower, per-workload columns); not part of equality.
    cache: dict[tuple[str, str | None], Any] = field(default_factory=dict, compare=False, repr=False)

    def gpus(self) -> list[str]:
        return sorted(self.power["gpu"].unique().to_list())

    def power_of(self, gpu: str) -> pl.DataFrame:
        """The power rows of one GPU, in trace order. Raises ``TraceError`` for an unknown GPU."""
        rows = self.cache.get(("power", gpu))
        if rows is None:
            rows = self.power.filter(pl.col("gpu") == gpu)
            if rows.height == 0:
                raise TraceError(f"unknown GPU {gpu!r}: the power trace has {', '.join(self.gpus())}")
            self.cache[("power", gpu)] = rows
        return rows


def from_frames(train: pl.DataFrame, power: pl.DataFrame) -> Traces:
    """The simulator's columns of validated trace tables (``TRAIN_COLUMNS``, ``POWER_COLUMNS``; row order kept)."""
    return Traces(_columns(train, TRAIN_COLUMNS, "train trace"), _columns(power, POWER_COLUMNS, "power trace"))


def _columns(frame: pl.DataFrame, columns: tuple[str, ...], name: str) -> pl.DataFrame:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise TraceError(f"{name}: column {missing[0]!r} is missing (has {', '.join(frame.columns)})")
    return frame.select(columns)


@dataclass(frozen=True)
class BatchSizeTable:
    """Everything the simulator needs about one batch size of a job on one GPU.

    ``power_limits`` etc. follow power-trace order; ``target_epochs`` follows train-trace order,
    one entry per run (NaN: that run never reached the target).
    """

    batch_size: int
    power_limits: tuple[int, ...]
    time_per_epoch: tuple[float, ...]  # s
    energy_per_epoch: tuple[float, ...]  # J, time_per_epoch x average_power
    max_power_limit: int  # W, the largest limit profiled at this batch size
    profile_average_power: tuple[float, ...]  # W, per limit, as the published simulator averages it
    profile_time_per_epoch: tuple[float, ...]  # s, idem
    profiling_epoch_energy: float  # J, first epoch split evenly across all limits
    profiling_epoch_time: float  # s, idem
    target_epochs: tuple[float, ...]

    def limit_index(self, power_limit: int) -> int:
        return self.power_limits.index(power_limit)

    def epoch_costs(self, eta: float) -> list[float]:
        """Per limit, the epoch cost the JIT profiler sees: (eta x P_avg + (1 - eta) x P_max,bs) x T_epoch."""
        return [
            power_cost(eta, ap, self.max_power_limit, tpe)
            for ap, tpe in zip(self.profile_average_power, self.profile_time_per_epoch, strict=True)
        ]

    def best_power_limit(self, eta: float) -> int:
        """The limit JIT profiling picks: lowest epoch cost, ties to the higher limit (profiled first)."""
        costs = self.epoch_costs(eta)
        best_pl, best_cost = None, math.inf
        for i in sorted(range(len(costs)), key=lambda k: -self.power_limits[k]):
            if best_pl is None or best_cost > costs[i]:
                best_pl, best_cost = self.power_limits[i], costs[i]
        assert best_pl is not None
        return best_pl


@dataclass(frozen=True)
class WorkloadTable:
    """A job on one GPU: its feasible batch sizes and, for each, the traces' numbers."""

    spec: Job
    gpu: str
    batch_sizes: tuple[int, ...]  # sorted ascending: the job's batch sizes on this GPU (any target)
    by_batch_size: dict[int, BatchSizeTable]
    max_power: int  # W, MaxPower of the hybrid cost: the largest limit anywhere in this GPU's trace
    default_recurrences: int  # 2 x |B| x |P| over the rows at this target

    def configs(self) -> list[tuple[int, int]]:
        """Every (batch size, power limit), batch sizes ascending, limits ascending."""
        return [(bs, limit) for bs in self.batch_sizes for limit in sorted(self.by_batch_size[bs].power_limits)]


def max_power(traces: Traces, gpu: str) -> int:
    """MaxPower of ``gpu`` (W): the largest limit among its power rows that join a train row."""
    cached = traces.cache.get(("max_power", gpu))
    if cached is None:
        keys = list(JOIN_KEY)
        joined = traces.power_of(gpu).join(traces.train.select(keys).unique(), on=keys, how="semi")
        if joined.height == 0:
            raise TraceError(f"GPU {gpu!r}: no power rows match the train trace")
        cached = traces.cache[("max_power", gpu)] = int(joined.select(pl.col("power_limit").max()).item())
    return cached


def workload_columns(traces: Traces, gpu: str | None) -> dict[tuple[str, str, str], dict[str, list[Any]]]:
    """Train rows (``gpu`` None) or ``gpu``'s power rows split by (dataset, network, optimizer), as column lists in trace order."""
    key = ("workloads", gpu)
    cached = traces.cache.get(key)
    if cached is None:
        frame = traces.train if gpu is None else traces.power_of(gpu)
        columns = ["batch_size", "target_metric", "target_epoch"] if gpu is None else ["batch_size", "power_limit", "time_per_epoch", "average_power"]
        parts = frame.partition_by(["dataset", "network", "optimizer"], as_dict=True, maintain_order=True)
        cached = traces.cache[key] = {k: {c: part[c].to_list() for c in columns} for k, part in parts.items()}
    return cached


def build_table(traces: Traces, gpu: str, spec: Job) -> WorkloadTable:
    """The lookup table of ``spec`` on ``gpu``. Raises ``TraceError`` when the job has no rows.

    Only rows present in both traces count (the published simulator's inner join).
    """
    workload = (spec.dataset, spec.network, spec.optimizer)
    train = workload_columns(traces, None).get(workload)
    power = workload_columns(traces, gpu).get(workload)
    trained = set(train["batch_size"]) if train else set()
    rows_by_bs: dict[int, list[tuple[int, float, float]]] = {}
    if power:
        for bs, limit, tpe, ap in zip(power["batch_size"], power["power_limit"], power["time_per_epoch"], power["average_power"], strict=True):
            if bs not in trained:
                continue
            rows = rows_by_bs.setdefault(bs, [])
            if any(limit == r[0] for r in rows):
                raise TraceError(f"power trace of {gpu!r}: {spec.dataset} batch size {bs} power limit {limit} appears twice")
            rows.append((limit, tpe, ap))
    if not rows_by_bs:
        raise TraceError(
            f"no trace rows for dataset {spec.dataset!r}, network {spec.network!r}, optimizer {spec.optimizer!r} on GPU {gpu!r}"
        )
    targets_by_bs: dict[int, list[float]] = {bs: [] for bs in rows_by_bs}
    assert train is not None
    for bs, target, epoch in zip(train["batch_size"], train["target_metric"], train["target_epoch"], strict=True):
        if target == spec.target_metric and bs in targets_by_bs:
            targets_by_bs[bs].append(math.nan if epoch is None else float(epoch))
    batch_sizes = tuple(sorted(rows_by_bs))
    by_bs = {bs: _batch_size_table(bs, rows_by_bs[bs], tuple(targets_by_bs[bs])) for bs in batch_sizes}
    limits_at_target = {limit for bs in batch_sizes if targets_by_bs[bs] for limit in by_bs[bs].power_limits}
    bs_at_target = sum(1 for bs in batch_sizes if targets_by_bs[bs])
    return WorkloadTable(spec, gpu, batch_sizes, by_bs, max_power(traces, gpu), 2 * bs_at_target * len(limits_at_target))


def _batch_size_table(bs: int, rows: list[tuple[int, float, float]], targets: tuple[float, ...]) -> BatchSizeTable:
    limits = tuple(r[0] for r in rows)
    tpe = np.array([r[1] for r in rows], dtype=np.float64)
    ap = np.array([r[2] for r in rows], dtype=np.float64)
    epe = tpe * ap
    copies = len(targets)
    if copies:
        # The published simulator averages over the merged rows: each power row once per run.
        first_e, first_t = tiled_mean(epe, copies), tiled_mean(tpe, copies)
        prof_ap = tuple(kahan_mean_of_copies(x, copies) for x in ap.tolist())
        prof_tpe = tuple(kahan_mean_of_copies(x, copies) for x in tpe.tolist())
    else:
        first_e = first_t = math.nan
        prof_ap, prof_tpe = tuple(ap.tolist()), tuple(tpe.tolist())
    return BatchSizeTable(
        batch_size=bs,
        power_limits=limits,
        time_per_epoch=tuple(tpe.tolist()),
        energy_per_epoch=tuple(epe.tolist()),
        max_power_limit=max(limits),
        profile_average_power=prof_ap,
        profile_time_per_epoch=prof_tpe,
        profiling_epoch_energy=first_e,
        profiling_epoch_time=first_t,
        target_epochs=targets,
    )
