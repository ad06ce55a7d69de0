"""Contracts of the cluster-power tables: power over time and its per-policy summary.

Both are derived from ``zeus_cluster_history`` by ``pipelines.clusters.power`` (see there and the
docs page "Cluster power" for how a run's energy is spread over time, the idle GPUs, and the
headroom formula), with the cluster's size from ``cluster_capacity`` (``pipelines.clusters.capacity``).
Keys: one row per (trace, gpu, policy, bin_start_s) and per (trace, gpu, policy); one per trace.
"""

from __future__ import annotations

import dataframely as dy
import polars as pl

from pipelines.contracts.clusters import trace_column


class ClusterPower(dy.Schema):
    """Cluster power drawn by every run of a replay history, averaged over fixed time bins."""

    trace = trace_column(primary_key=True)
    gpu = dy.String(primary_key=True, description="GPU every job of the replay runs on")
    policy = dy.String(primary_key=True, description="replay policy: zeus, default or grid-search")
    bin_start_s = dy.Float64(primary_key=True, description="bin start (s on the trace's timeline), a multiple of the bin length")
    bin_end_s = dy.Float64(description="bin end (s, exclusive): bin_start_s + bin length")
    mean_power_w = dy.Float64(min=0, description="cluster power averaged over the bin (W) = energy in the bin / bin length")
    gpus_in_use = dy.Float64(min=0, description="GPUs busy, averaged over the bin = GPU-seconds of runs in the bin / bin length")
    cluster_gpus = dy.Int64(nullable=True, min=1, description="GPUs of the cluster (cluster_capacity); null: no cluster size given")
    idle_gpus = dy.Float64(nullable=True, min=0, description="GPUs without a job, averaged over the bin = max(cluster_gpus - "
                           "gpus_in_use, 0) inside the trace's window rounded out to whole bins (cluster_capacity), 0 outside it")
    idle_power_w = dy.Float64(nullable=True, min=0,
                              description="draw of the GPUs without a job (W) = idle_gpus x the GPU's idle draw (registry); "
                              "fleet power = mean_power_w + idle_power_w")

    @dy.rule()
    def bin_ends_after_start(cls) -> pl.Expr:
        return pl.col("bin_end_s") > pl.col("bin_start_s")


class ClusterCapacity(dy.Schema):
    """``cluster_capacity``: each trace's cluster size (GPUs), where it comes from, and the trace's peak concurrent GPUs."""

    trace = trace_column(primary_key=True)
    cluster_gpus = dy.Int64(min=1, description="GPUs of the cluster the power model charges idle draw for (docs: Cluster power)")
    source = dy.String(description="where cluster_gpus comes from: a setting (clusters add --cluster-gpus), a publication, "
                       "or the trace's peak concurrent GPUs")
    peak_concurrent_gpus = dy.Int64(min=0, description="most GPUs the trace's replayed jobs hold at one instant on its own timeline")
    window_start_s = dy.Float64(description="start of the trace's window: its first replayed job's start (s, the trace's clock)")
    window_end_s = dy.Float64(description="end of the trace's window: its last replayed job's end (s); idle draw is charged "
                              "over [window_start_s, window_end_s)")

    @dy.rule()
    def window_ends_after_start(cls) -> pl.Expr:
        """window_end_s must not be before window_start_s"""
        return pl.col("window_end_s") >= pl.col("window_start_s")


class ClusterPowerSummary(dy.Schema):
    """Peak, p99 and mean cluster power per policy, time near Default's peak, and GPU headroom."""

    trace = trace_column(primary_key=True)
    gpu = dy.String(primary_key=True, description="GPU every job of the replay runs on")
    policy = dy.String(primary_key=True, description="replay policy: zeus, default or grid-search")
    bin_s = dy.Float64(min_exclusive=0, description="bin length (s) the power was averaged over")
    bins = dy.Int64(min=0, description="bins from the policy's first run start to its last run end")
    energy_j = dy.Float64(min=0, description="total energy of the policy's runs (J) = sum of mean_power_w x bin length")
    peak_kw = dy.Float64(min=0, description="highest bin-mean cluster power (kW)")
    p99_kw = dy.Float64(min=0, description="99th percentile of bin-mean cluster power over the bins (kW, linear interpolation)")
    mean_kw = dy.Float64(min=0, description="energy / (bins x bin_s): mean cluster power over the policy's span (kW)")
    default_peak_kw = dy.Float64(
        nullable=True, min=0, description="peak_kw of Default on the same trace and GPU (kW); null without Default"
    )
    peak_vs_default_pct = dy.Float64(nullable=True, description="100 x (1 - peak_kw / default_peak_kw): peak reduction vs Default (%)")
    time_above_90pct_default_peak_s = dy.Float64(
        nullable=True, min=0, description="time (s) in bins whose mean power exceeds 0.9 x default_peak_kw"
    )
    peak_gpus_in_use = dy.Float64(min=0, description="highest bin-mean number of busy GPUs")
    gpu_p99_w = dy.Float64(
        nullable=True, min=0,
        description="99th percentile of per-busy-GPU draw (W): mean_power_w / gpus_in_use per bin, weighted by GPU-seconds",
    )
    headroom_gpus = dy.Int64(
        nullable=True,
        description="floor((default_peak_kw - p99_kw) x 1000 / gpu_p99_w): GPUs of this kind that fit under Default's "
        "peak beside this policy's p99 load, each drawing gpu_p99_w; negative: p99 above Default's peak",
    )
    energy_saved_pct = dy.Float64(nullable=True, description="100 x (1 - energy_j / Default's energy_j): job energy saved vs Default (%)")
    cluster_gpus = dy.Int64(nullable=True, min=1, description="GPUs of the cluster (cluster_capacity); null: no cluster size given, "
                            "and every fleet column below is null")
    gpu_idle_w = dy.Float64(nullable=True, min=0, description="idle draw charged per GPU without a job (W; the registry's)")
    window_s = dy.Float64(nullable=True, min=0, description="the trace's window (cluster_capacity) rounded out to whole bins, the "
                          "same for every policy: idle draw is charged over it (s)")
    busy_gpu_h = dy.Float64(nullable=True, min=0, description="GPU-hours of runs (sum of gpus_in_use x bin length)")
    idle_gpu_h = dy.Float64(nullable=True, min=0, description="GPU-hours without a job inside the window (sum of idle_gpus x bin "
                            "length, plus cluster_gpus over the part of the window outside this policy's bins)")
    over_capacity_gpu_h = dy.Float64(nullable=True, min=0, description="GPU-hours of runs beyond cluster_gpus (bins where the "
                                     "replay holds more GPUs than the cluster has: it does not queue); 0 when it fits")
    idle_energy_j = dy.Float64(nullable=True, min=0, description="energy of the GPUs without a job over window_s (J) = idle_gpu_h x "
                               "3600 x gpu_idle_w")
    fleet_energy_j = dy.Float64(nullable=True, min=0, description="energy_j + idle_energy_j: the jobs and the idle GPUs of the cluster (J)")
    fleet_peak_kw = dy.Float64(nullable=True, min=0, description="highest bin mean of mean_power_w + idle_power_w (kW)")
    fleet_mean_kw = dy.Float64(nullable=True, min=0, description="fleet_energy_j over the time from the earlier of the window's and "
                               "the policy's first bin's start to the later of their ends (kW)")
    fleet_energy_saved_pct = dy.Float64(nullable=True, description="100 x (1 - fleet_energy_j / Default's fleet_energy_j): "
                                        "energy saved vs Default counting idle GPUs (%)")


class PowerTimeline(dy.Schema):
    """Figure data of ``clusters_timeline_power``: cluster power per bin of one GPU's replays, Default and Zeus."""

    trace = dy.String(description="cluster trace")
    gpu = dy.String(description="GPU every job of the replay runs on")
    policy = dy.String(description="replay policy: default or zeus")
    day = dy.Float64(min=0, description="bin start (days since the trace's first bin)")
    power_kw = dy.Float64(min=0, description="cluster power averaged over the bin (kW)")


class LoadDuration(dy.Schema):
    """Figure data of ``clusters_power_load_duration``: bin powers sorted descending against the time at or above them."""

    trace = dy.String(description="cluster trace")
    gpu = dy.String(description="GPU every job of the replay runs on")
    policy = dy.String(description="replay policy: default or zeus")
    hours = dy.Float64(min_exclusive=0, description="time during which the cluster draws at least power_kw (h)")
    power_kw = dy.Float64(min=0, description="cluster power of the bin at this rank (kW)")
