"""A recurring group's Zeus workload from its own GPU utilisation, where the export gives one.

An export says how busy each job kept its GPUs (Slurm's ``gres/gpuutil``, a job log's
``gpu_util_pct``) but not what it trained. Without utilisation a group's workload comes from its
runtime (``pipelines.clusters.mapping.group_workloads``). With it, the group plays a workload whose
Default draw (b0 at the maximum power limit: the replay's mean power per GPU, W) is consistent
with that utilisation:

* the group's utilisation u (%) is its jobs' mean, weighted by their GPU-hours (jobs without one left out);
* the draw it implies is P(u) = idle + u / 100 x (TDP - idle), between the replayed GPU's idle draw and its TDP;
* its candidates are the workloads whose Default draw lies within ``BAND`` x (TDP - idle) of P(u)
  (+-53.5 W on a V100); where none does, the band widens by ``WIDEN`` x (TDP - idle) at a time
  until at least one does.

Draw 0 (the replay documented everywhere) plays the candidate whose draw is nearest P(u) (ties by
name); draw k >= 1 picks one of the candidates at random, so the interval still spans what the
utilisation cannot tell apart. Groups without utilisation keep the runtime rule among themselves.

On a V100 (idle 36 W, TDP 250 W) a group at 95 % (P = 239 W) plays cifar100, imagenet,
sentiment140 or squad (188 to 228 W), never movielens-1m (38 W); at 15 % (P = 68 W) movielens-1m
only: the next workload, librispeech at 161 W, is the draw of a GPU about 58 % busy. A band
widened until two workloads qualify (the rule first proposed) would put a 15 % group on
librispeech in half the draws.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from pipelines.clusters import mapping
from pipelines.zeus.groups import group_job_spec
from pipelines.zeus.traces import Traces, build_table

#: How groups with a utilisation get their workload (``whatif --workloads-by``): by it (the default), or by runtime as every other.
BY_UTILISATION = "utilisation"
BY_RUNTIME = "runtime"
WORKLOADS_BY = (BY_UTILISATION, BY_RUNTIME)
#: The band's half-width around P(u), as a fraction of (TDP - idle).
BAND = 0.25
#: How much the band widens at a time (fraction of TDP - idle) when no workload lies in it.
WIDEN = 0.05
#: The rule in one line, for the report.
RULE = (f"a group with GPU utilisation u plays a workload whose Default draw per GPU lies within {BAND * 100:g} % of (TDP - idle) of "
        "idle + u x (TDP - idle), widened until one does; sample 1 the nearest, the others one of them at random")


@dataclass(frozen=True)
class Analogues:
    """The utilisation rule on one profile: the GPU's idle draw and TDP (W) and each workload's Default draw per GPU (W)."""

    gpu: str
    idle_w: float
    tdp_w: float
    draw_w: Mapping[str, float]

    def target_w(self, util_pct: float) -> float:
        """P(u) (W): the draw a utilisation of ``util_pct`` % implies, clipped to [idle, TDP]."""
        share = min(max(util_pct, 0.0), 100.0) / 100
        return self.idle_w + share * (self.tdp_w - self.idle_w)

    def candidates(self, util_pct: float) -> tuple[str, ...]:
        """The workloads a group at ``util_pct`` % may play (see the module docstring), by name."""
        span = self.tdp_w - self.idle_w
        target = self.target_w(util_pct)
        distance = {w: abs(p - target) for w, p in self.draw_w.items()}
        steps = 0
        while True:
            width = (BAND + steps * WIDEN) * span
            found = tuple(sorted(w for w, d in distance.items() if d <= width))
            if found:
                return found
            steps += 1

    def nearest(self, util_pct: float) -> str:
        """The candidate whose Default draw is nearest P(u) (ties by name): draw 0's."""
        target = self.target_w(util_pct)
        return min(self.candidates(util_pct), key=lambda w: (abs(self.draw_w[w] - target), w))


def default_draw_w(traces: Traces, gpu: str, workload: str) -> float:
    """``workload``'s Default draw on ``gpu`` (W per GPU): its default batch size's epoch energy over epoch time at the
    largest power limit, the mean power of every Default run (and so an anchored job's kWh per GPU-hour x 1000)."""
    table = build_table(traces, gpu, group_job_spec(traces, gpu, workload))
    b0 = table.by_batch_size[table.spec.default_bs]
    i = b0.limit_index(b0.max_power_limit)
    return b0.energy_per_epoch[i] / b0.time_per_epoch[i]


def for_profile(traces: Traces, gpu: str, workloads: Sequence[str], idle_w: float, tdp_w: float) -> Analogues:
    """``Analogues`` of ``workloads`` on ``gpu``, a GPU idling at ``idle_w`` with a TDP of ``tdp_w`` (W)."""
    if not (math.isfinite(idle_w) and math.isfinite(tdp_w) and 0 <= idle_w < tdp_w):
        raise ValueError(f"{gpu}: idle draw {idle_w:g} W and TDP {tdp_w:g} W: the idle draw must be below the TDP")
    return Analogues(gpu, idle_w, tdp_w, {w: default_draw_w(traces, gpu, w) for w in workloads})


def group_utilisation(jobs: pl.DataFrame) -> pl.DataFrame:
    """(group, util_pct) of the groups of ``jobs`` (``mapping.own_keyed`` rows with ``gpu_util_pct``) with a utilisation: each
    the mean of its jobs', weighted by their GPU-hours; sorted by group. Empty when ``jobs`` carries none."""
    if "gpu_util_pct" not in jobs.columns:
        return pl.DataFrame(schema={"group": pl.String, "util_pct": pl.Float64})
    weight = (pl.col("end_time_s") - pl.col("start_time_s")) * pl.col("num_gpu")
    known = jobs.filter(pl.col("gpu_util_pct").is_not_null())
    return (known.group_by("group")
            .agg(((pl.col("gpu_util_pct") * weight).sum() / weight.sum()).alias("util_pct"), pl.col("gpu_util_pct").mean().alias("_mean"))
            .select("group", pl.col("util_pct").fill_nan(pl.col("_mean")).cast(pl.Float64))  # zero-weight groups: the plain mean
            .sort("group"))


def assign(utils: pl.DataFrame, analogues: Analogues, shuffle: np.random.Generator | None) -> pl.DataFrame:
    """(group, dataset) of ``group_utilisation``'s groups: the nearest candidate without ``shuffle`` (draw 0), else one drawn."""
    datasets = []
    for util in utils["util_pct"].to_list():
        if shuffle is None:
            datasets.append(analogues.nearest(util))
        else:
            found = analogues.candidates(util)
            datasets.append(found[int(shuffle.integers(len(found)))])
    return pl.DataFrame({"group": utils["group"], "dataset": pl.Series(datasets, dtype=pl.String)})


def group_datasets(runtimes: pl.DataFrame, utils: pl.DataFrame | None, workloads: Sequence[str], analogues: Analogues | None,
                   shuffle: np.random.Generator | None) -> pl.DataFrame:
    """(group, dataset) of every group of ``runtimes`` (``mapping.group_runtimes``): those of ``utils`` (``group_utilisation``)
    by their utilisation when the row has ``analogues``, the others by runtime among themselves (``mapping.group_workloads``,
    ``shuffle`` as there, then the utilisation draws from the same generator). Without utilisation: exactly the runtime rule."""
    if analogues is None or utils is None or utils.height == 0:
        return mapping.group_workloads(runtimes, workloads, shuffle=shuffle, subset=True)
    rest = runtimes.filter(~pl.col("group").is_in(utils["group"].implode()))
    parts = [mapping.group_workloads(rest, workloads, shuffle=shuffle, subset=True)] if rest.height else []
    return pl.concat([*parts, assign(utils, analogues, shuffle)])
