"""Cluster power of a replay split into partitions (issue 56): the partitions' power series added up, bin by bin.

Invariant: bins are ``[k x bin_s, (k + 1) x bin_s)`` on the trace's clock (``pipelines.clusters.power``), the same for
every partition, and a bin's ``mean_power_w`` and ``gpus_in_use`` are sums over the runs inside it (energy and
GPU-seconds over the bin's length). Runs split into partitions (no run in two), so for every (trace, gpu, policy, bin)

    mean_power_w(all runs) = sum over partitions of mean_power_w(the partition's runs)

(a bin a partition does not reach counts 0 W there), and the same for ``gpus_in_use``; equal up to the order of
floating-point additions. The idle columns are not sums (``max(cluster_gpus - gpus_in_use, 0)`` of the whole cluster)
and are left null here: the caller fills them from the summed ``gpus_in_use`` and the cluster's size.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from pipelines.clusters.power import POWER_SCHEMA

KEY = ("trace", "gpu", "policy", "bin_start_s")


def sum_power(parts: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """``ClusterPower`` rows of every partition's runs together, from each partition's rows (``power.power_bins`` of its
    runs, at one bin length): per (trace, gpu, policy) every bin from the earliest partition's first to the latest's
    last, ``mean_power_w`` and ``gpus_in_use`` summed (see the module docstring), the idle columns null."""
    frames = [p for p in parts if p.height]
    if not frames:
        return pl.DataFrame(schema=POWER_SCHEMA)
    rows = pl.concat([f.select(*KEY, "bin_end_s", "mean_power_w", "gpus_in_use") for f in frames], how="vertical")
    lengths = rows.select((pl.col("bin_end_s") - pl.col("bin_start_s")).unique())
    if lengths.height != 1:
        raise ValueError(f"the partitions' bins differ in length ({sorted(lengths.to_series().to_list())} s): bin them alike")
    bin_s = float(lengths.item())
    summed = rows.group_by(KEY).agg(pl.col("mean_power_w").sum(), pl.col("gpus_in_use").sum())
    # every bin of each key's span, as power_bins gives it: bins no partition reaches are 0 W
    spans = summed.group_by("trace", "gpu", "policy").agg(pl.col("bin_start_s").min().alias("lo"), pl.col("bin_start_s").max().alias("hi"))
    grid = spans.with_columns(
        pl.int_ranges(0, ((pl.col("hi") - pl.col("lo")) / bin_s).round(0).cast(pl.Int64) + 1).alias("k")).explode("k").select(
        "trace", "gpu", "policy", (pl.col("lo") + pl.col("k") * bin_s).alias("bin_start_s"))
    out = grid.join(summed, on=list(KEY), how="left").with_columns(
        pl.col("mean_power_w").fill_null(0.0), pl.col("gpus_in_use").fill_null(0.0),
        (pl.col("bin_start_s") + bin_s).alias("bin_end_s"),
        pl.lit(None, pl.Int64).alias("cluster_gpus"), pl.lit(None, pl.Float64).alias("idle_gpus"), pl.lit(None, pl.Float64).alias("idle_power_w"))
    return out.select(POWER_SCHEMA.keys()).cast(POWER_SCHEMA).sort(*KEY)
