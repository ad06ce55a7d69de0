"""Contracts of the cluster-power tables: power over time and its per-policy summary.

Both are derived from ``zeus_cluster_history`` by ``pipelines.clusters.power`` (see there and the
docs page "Cluster power" for how a run's energy is spread over time and for the headroom
formula). Keys: one row per (trace, gpu, policy, bin_start_s) and per (trace, gpu, policy).
"""

from __future__ import annotations

import dataframely as dy
import polars as pl


class ClusterPower(dy.Schema):
    """Cluster power drawn by every run of a replay history, averaged over fixed time bins."""

    trace = dy.String(primary_key=True, description="cluster trace (itp, elasticflow, acme, alibaba)")
    gpu = dy.String(primary_key=True, description="GPU every job of the replay runs on")
    policy = dy.String(primary_key=True, description="replay policy: zeus, default or grid-search")
    bin_start_s = dy.Float64(primary_key=True, description="bin start (s on the trace's timeline), a multiple of the bin length")
    bin_end_s = dy.Float64(description="bin end (s, exclusive): bin_start_s + bin length")
    mean_power_w = dy.Float64(min=0, description="cluster power averaged over the bin (W) = energy in the bin / bin length")
    gpus_in_use = dy.Float64(min=0, description="GPUs busy, averaged over the bin = GPU-seconds of runs in the bin / bin length")

    @dy.rule()
    def bin_ends_after_start(cls) -> pl.Expr:
        return pl.col("bin_end_s") > pl.col("bin_start_s")


class ClusterPowerSummary(dy.Schema):
    """Peak, p99 and mean cluster power per policy, time near Default's peak, and GPU headroom."""

    trace = dy.String(primary_key=True, description="cluster trace (itp, elasticflow, acme, alibaba)")
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


class PowerTimeline(dy.Schema):
    """Figure data of ``clusters_power_timeline``: cluster power per bin of one GPU's replays, Default and Zeus."""

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
