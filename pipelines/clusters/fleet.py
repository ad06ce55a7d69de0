"""Simulated fleets against measured ones: per-GPU draw as % of TDP over GPU-time (``power_model_vs_measured``).

**Measured** (``fleet_power_cdf``, AcmeTrace's DCGM POWER_USAGE, 15 s samples pooled over every
GPU of Seren or Kalos in August 2023): the per-GPU power curve, piecewise linear
(``pipelines.clusters.distributions``), divided by the A100's TDP (400 W).

**Simulated** (one fleet per trace, GPU and policy): every GPU of the cluster over the window the
policies share (``cluster_power_summary``), busy and idle together. A run contributes its per-GPU
draw ``energy_j / time_s / num_gpu`` (its configuration's average power) weighted by its
GPU-seconds ``num_gpu x time_s``; the GPUs without a job contribute the GPU's idle draw weighted
by ``idle_gpu_h``. That is a step CDF, divided by the simulated GPU's TDP. Where the replay holds
more GPUs than the cluster has (``over_capacity_gpu_h``), those GPU-seconds count too.

Per row: the share of GPU-time strictly below 25% of TDP, the median and 90th percentile (%
TDP; the smallest value whose CDF reaches the level), and the Kolmogorov-Smirnov distance to
Seren's and to Kalos's measured distribution, exact (``ks_distance``).

**Busy GPUs** (``occupancy`` busy, after the whole-fleet rows): the fleets at matched occupancy.
Measured: the busy share is 1 - the share of DCGM GPU_UTIL samples at 0 % (``fleet_power_cdf``'s
``gpu_util_pct`` curve, F(0)); the busy power distribution is the top ``busy share`` of the power
CDF, renormalised (``distributions.upper_share``): it assumes that the GPUs at 0 % utilisation are
the lowest-drawing samples. Simulated: the running GPUs only (the busy draws, no idle atom); busy
share = busy GPU-seconds over the fleet's. Each busy row's KS is to the measured busy distribution.

**Same cluster** (when AcmeTrace's job CSVs are present): Seren's own jobs (``cluster_workload_jobs``
of trace acme, cluster seren) as a fleet of Seren's published size, on a measured A100 profile
when ``zeus_power_profiles`` has one (a GPU named ``a100...``: simulated here), else on the A40,
the only Ampere GPU among the published profiles (its rows of ``zeus_cluster_history``); the
``note`` says which.

The A100's idle draw in the registry is the measured low mode (``measured_idle_w``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import polars as pl

from pipelines.clusters import capacity, power, simulate
from pipelines.clusters.distributions import Polyline, ks_distance, mode_window, piecewise_linear, step, upper_share
from pipelines.contracts.base import polars_schema
from pipelines.contracts.fleet import OCCUPANCIES, PowerModelVsMeasured
from pipelines.vocabulary import GPU_BY_NAME
from pipelines.vocabulary.units import S_PER_H
from pipelines.zeus.traces import Traces

#: The measured clusters every row is compared with, and their GPU.
MEASURED: tuple[str, ...] = ("seren", "kalos")
MEASURED_GPU = "a100"
METRIC = "gpu_power_w"
#: The measured utilisation curve: its share of samples at 0 % is the idle share.
UTIL_METRIC = "gpu_util_pct"
#: The share reported: GPU-time strictly below this % of TDP.
LOW_PCT_TDP = 25.0
#: The low mode (A100 idle draw): the densest window of this half-width (W) below this share of TDP, on a 0.1 W grid
#: (DCGM's power is rounded to 0.1 W upstream).
LOW_MODE_HALF_WIDTH_W = 2.5
LOW_MODE_BELOW_TDP = 0.5
LOW_MODE_RESOLUTION_W = 0.1
#: The trace and cluster of the same-cluster comparison.
SAME_CLUSTER = ("acme", "seren")
SCHEMA = polars_schema(PowerModelVsMeasured)


class FleetError(ValueError):
    """A measured curve that is missing, or a fleet that cannot be compared."""


def measured_curve(fleet_cdf: pl.DataFrame, cluster: str, metric: str = METRIC) -> Polyline:
    """One measured curve (x in its unit, read piecewise linear); ``FleetError`` when it is absent."""
    rows = fleet_cdf.filter((pl.col("cluster") == cluster) & (pl.col("metric") == metric)).sort("point")
    if rows.height < 2:
        raise FleetError(f"fleet_power_cdf has no {cluster}/{metric} curve")
    return piecewise_linear(rows["x"].to_numpy(), rows["cdf_pct"].to_numpy())


def measured_idle_w(fleet_cdf: pl.DataFrame) -> float:
    """The A100's idle draw (W): the low mode of Seren's and Kalos's per-GPU power, averaged, to 0.1 W.

    Each cluster's low mode is the centre of the densest ``2 x LOW_MODE_HALF_WIDTH_W`` window below
    ``LOW_MODE_BELOW_TDP`` of the A100's TDP (``distributions.mode_window``).
    """
    tdp = GPU_BY_NAME[MEASURED_GPU].tdp_w
    modes = [mode_window(measured_curve(fleet_cdf, c), LOW_MODE_HALF_WIDTH_W, LOW_MODE_BELOW_TDP * tdp, LOW_MODE_RESOLUTION_W)
             for c in MEASURED]
    return round(float(np.mean(modes)), 1)


def measured_pct_tdp(fleet_cdf: pl.DataFrame, cluster: str) -> Polyline:
    """A measured cluster's per-GPU power as % of the A100's TDP."""
    return measured_curve(fleet_cdf, cluster).scaled(100 / GPU_BY_NAME[MEASURED_GPU].tdp_w)


def measured_busy_share(fleet_cdf: pl.DataFrame, cluster: str) -> float:
    """The share (0-1) of a measured cluster's GPU-time that is busy: 1 - its DCGM GPU_UTIL samples' share at 0 %."""
    return 1.0 - float(measured_curve(fleet_cdf, cluster, UTIL_METRIC).cdf(0.0)[0])


@dataclass(frozen=True)
class Fleet:
    """A simulated fleet: its key, the TDP and idle draw it is measured in, its size, and what it is."""

    trace: str  # cluster_or_trace
    gpu: str
    policy: str
    tdp_w: float
    idle_w: float
    cluster_gpus: int
    idle_gpu_s: float
    note: str


def busy_draws(history: pl.DataFrame) -> pl.DataFrame:
    """Per (trace, gpu, policy, per-GPU draw in W): the GPU-seconds at that draw (runs of positive length and GPUs).

    Sorted by those keys: a group-by's row order varies from run to run, and sums over the rows would vary in their last bits.
    """
    return (
        history.filter((pl.col("time_s") > 0) & (pl.col("num_gpu") > 0))
        .with_columns((pl.col("energy_j") / pl.col("time_s") / pl.col("num_gpu")).alias("draw_w"),
                      (pl.col("num_gpu") * pl.col("time_s")).alias("gpu_s"))
        .group_by("trace", "gpu", "policy", "draw_w")
        .agg(pl.col("gpu_s").sum())
        .sort("trace", "gpu", "policy", "draw_w")
    )


def simulated_pct_tdp(draws: pl.DataFrame, fleet: Fleet) -> Polyline:
    """The fleet's per-GPU draw as % of its TDP: busy draws (``busy_draws`` rows of the fleet) and the idle atom."""
    values = np.append(draws["draw_w"].to_numpy(), fleet.idle_w)
    weights = np.append(draws["gpu_s"].to_numpy(), fleet.idle_gpu_s)
    return step(100 * values / fleet.tdp_w, weights)


def simulated_busy_pct_tdp(draws: pl.DataFrame, fleet: Fleet) -> Polyline:
    """The fleet's running GPUs only: the busy draws (``busy_draws`` rows of the fleet) as % of its TDP, no idle atom."""
    return step(100 * draws["draw_w"].to_numpy() / fleet.tdp_w, draws["gpu_s"].to_numpy())


def simulated_busy_share(draws: pl.DataFrame, fleet: Fleet) -> float:
    """The share (0-1) of the fleet's GPU-time with a job: busy GPU-seconds over busy and idle ones.

    The busy GPU-seconds are summed exactly rounded (``math.fsum``), so the share does not depend on the rows' order.
    """
    busy = math.fsum(draws["gpu_s"].to_list())
    return busy / (busy + fleet.idle_gpu_s)


def measured_dists(fleet_cdf: pl.DataFrame, occupancy: str) -> dict[str, Polyline]:
    """Seren's and Kalos's % TDP distributions of one occupancy: whole, or busy (the top busy share, ``upper_share``)."""
    whole = {c: measured_pct_tdp(fleet_cdf, c) for c in MEASURED}
    if occupancy == "whole":
        return whole
    return {c: upper_share(dist, measured_busy_share(fleet_cdf, c)) for c, dist in whole.items()}


def simulated_dist(draws: pl.DataFrame, fleet: Fleet, occupancy: str) -> Polyline:
    """The fleet's % TDP distribution of one occupancy: whole (idle atom included) or busy (running GPUs only)."""
    return simulated_pct_tdp(draws, fleet) if occupancy == "whole" else simulated_busy_pct_tdp(draws, fleet)


def statistics(dist: Polyline, references: Mapping[str, Polyline]) -> dict[str, float]:
    """The row's numbers for one % TDP distribution: share below 25%, median, p90, KS to Seren and to Kalos."""
    return {
        "share_below_25pct_tdp": 100 * float(dist.cdf_left(LOW_PCT_TDP)[0]),
        "median_pct_tdp": dist.quantile(0.5),
        "p90_pct_tdp": dist.quantile(0.9),
        **{f"ks_vs_{c}": ks_distance(dist, references[c]) for c in MEASURED},
    }


def fleets(summary: pl.DataFrame) -> list[Fleet]:
    """Every fleet of ``cluster_power_summary`` that has a cluster size (its GPU in the registry for the TDP)."""
    out = []
    for r in summary.filter(pl.col("cluster_gpus").is_not_null()).sort("trace", "gpu", "policy").iter_rows(named=True):
        gpu = GPU_BY_NAME.get(r["gpu"])
        if gpu is None:
            continue
        out.append(Fleet(r["trace"], r["gpu"], r["policy"], gpu.tdp_w, r["gpu_idle_w"], r["cluster_gpus"], r["idle_gpu_h"] * S_PER_H,
                         f"simulated: {r['trace']} on the {gpu.label} ({r['cluster_gpus']:,} GPUs, idle {r['gpu_idle_w']:g} W each)"))
    return out


def compare(fleet_cdf: pl.DataFrame, history: pl.DataFrame, summary: pl.DataFrame, extra: Iterable[tuple[Fleet, pl.DataFrame]] = ()) -> pl.DataFrame:
    """``power_model_vs_measured``: whole fleets, then busy GPUs; each block the measured rows (Seren, Kalos), one row per
    fleet of ``summary``, then ``extra``.

    ``extra`` holds (fleet, its ``busy_draws`` rows) made elsewhere (``same_cluster``). A fleet with no
    busy GPU-second has no busy row.
    """
    shares = {c: measured_busy_share(fleet_cdf, c) for c in MEASURED}
    simulated = fleets(summary)
    draws = busy_draws(history) if simulated else None
    pairs = [(f, draws.filter((pl.col("trace") == f.trace) & (pl.col("gpu") == f.gpu) & (pl.col("policy") == f.policy)))
             for f in simulated if draws is not None]
    pairs += list(extra)
    tdp = GPU_BY_NAME[MEASURED_GPU].tdp_w
    rows = []
    for occupancy in OCCUPANCIES:
        references = measured_dists(fleet_cdf, occupancy)
        for c in MEASURED:
            how = f"AcmeTrace DCGM POWER_USAGE, 15 s samples over every {c.title()} GPU, August 2023"
            if occupancy == "busy":
                how += f"; the top {shares[c]:.1%} of its CDF, renormalised ({shares[c]:.1%} of DCGM GPU_UTIL samples above 0 %)"
            rows.append({"source": "measured", "cluster_or_trace": c, "gpu": MEASURED_GPU, "policy": "measured", "occupancy": occupancy,
                         "tdp_w": tdp, "idle_w": None, "cluster_gpus": None, "busy_share_pct": 100 * shares[c],
                         **statistics(references[c], references), "note": f"measured: {how}"})
        for fleet, runs in pairs:
            if occupancy == "busy" and runs.height == 0:
                continue
            dist = simulated_dist(runs, fleet, occupancy)
            rows.append({"source": "simulated", "cluster_or_trace": fleet.trace, "gpu": fleet.gpu, "policy": fleet.policy,
                         "occupancy": occupancy, "tdp_w": fleet.tdp_w, "idle_w": fleet.idle_w, "cluster_gpus": fleet.cluster_gpus,
                         "busy_share_pct": 100 * simulated_busy_share(runs, fleet), **statistics(dist, references),
                         "note": fleet.note if occupancy == "whole" else f"{fleet.note}; running GPUs only"})
    return pl.DataFrame(rows, schema=SCHEMA)


# ---------------------------------------------------------------------------------------------
# the same cluster: Seren's jobs against Seren's measurement


def a100_stand_in(profile_gpus: Iterable[str]) -> tuple[str, bool]:
    """(the GPU Seren's jobs are simulated on, whether it is a measured A100 profile): ``a100...`` if profiled, else the A40."""
    measured = sorted(g for g in set(profile_gpus) if g == MEASURED_GPU or g.startswith(f"{MEASURED_GPU}-"))
    return (measured[0], True) if measured else ("a40", False)


def same_cluster(
    jobs: pl.DataFrame, history: pl.DataFrame, traces: Traces | None, *, eta: float, beta: float,
) -> list[tuple[Fleet, pl.DataFrame]]:
    """Seren's jobs as a fleet of Seren's size, per policy: [(fleet, its busy draws)]; [] without Seren's jobs.

    ``jobs``: ``cluster_workload_jobs``; ``history``: ``zeus_cluster_history`` (the A40's acme
    rows are used when no A100 profile exists); ``traces``: Zeus's traces with every profiled GPU
    (an A100 profile among them is simulated here; None: not looked for).
    """
    trace, cluster = SAME_CLUSTER
    seren = jobs.filter((pl.col("trace") == trace) & (pl.col("cluster") == cluster))
    if seren.height == 0:
        return []
    gpu, is_a100 = a100_stand_in(traces.gpus() if traces is not None else ())
    registry = GPU_BY_NAME[MEASURED_GPU if is_a100 else gpu]
    if is_a100:
        assert traces is not None
        runs = simulate.simulate_trace(seren, traces, gpu, eta=eta, beta=beta)
        why = f"simulated: Seren's jobs on the measured A100 profile {gpu!r} (A100 TDP and idle draw)"
    else:
        runs = history.filter((pl.col("trace") == trace) & (pl.col("gpu") == gpu) & (pl.col("cluster") == cluster))
        why = "simulated: Seren's jobs on the A40, the only Ampere GPU among the published profiles (no A100 profile measured)"
    if runs.height == 0:
        return []
    size = capacity.cluster_capacity(trace, cluster, seren)
    sizes, draw = {trace: size}, {gpu: registry.idle_w}
    summary = power.power_summary(power.power_bins(runs, capacity=sizes, idle_w=draw), capacity=sizes, idle_w=draw)
    draws = busy_draws(runs)
    out = []
    for r in summary.sort("policy").iter_rows(named=True):
        fleet = Fleet(f"{trace}/{cluster}", gpu, r["policy"], registry.tdp_w, registry.idle_w, size.cluster_gpus, r["idle_gpu_h"] * S_PER_H,
                      f"{why}; {size.cluster_gpus:,} GPUs ({size.source})")
        out.append((fleet, draws.filter(pl.col("policy") == r["policy"])))
    return out
