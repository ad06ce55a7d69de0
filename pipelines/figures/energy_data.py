"""Expected time and energy to accuracy of every (batch size, power limit), from the Zeus traces.

Plain polars, no plotting. Definitions (Zeus, NSDI '23: https://www.usenix.org/conference/nsdi23/presentation/you):

* A workload is (dataset, network, optimizer, target metric, max epochs, default batch size b0),
  as in the artifact's job specs (``pipelines.vocabulary.WORKLOADS``).
* A run of a batch size *reached* the target when its ``target_epoch`` is not null and at most the
  workload's ``max_epochs`` (a run needing more epochs is stopped by the epoch budget before it gets
  there). Runs that did not reach the target are left out of the mean; ``reach_rate`` says how
  many runs are behind each number. A batch size none of whose runs reached it has no TTA and is
  left out.
* TTA (s) = mean ``target_epoch`` over the runs that reached the target x ``time_per_epoch`` (s).
* ETA (J) = TTA x ``average_power`` (W).
* MaxPower (W) = the largest power limit in that GPU's power trace (over rows that join a train row).
* cost(eta) = eta x ETA + (1 - eta) x MaxPower x TTA (J).
* Default = b0 at the largest power limit profiled for b0, with b0 = min(default b0, largest batch
  size of that workload in that GPU's power trace).
* Pareto front: configurations no other configuration beats on both TTA and ETA (ties in both:
  the first in (TTA, ETA, batch size, power limit) order).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from pipelines.contracts.base import conform, polars_schema
from pipelines.contracts.figures import ConfigExpectations
from pipelines.vocabulary import DEFAULT_ETA, WORKLOADS, Job
from pipelines.zeus.cost import zeus_cost

#: Columns of ``config_expectations``, types and units: the contract ``ConfigExpectations``.
EXPECTATION_COLUMNS = polars_schema(ConfigExpectations)
_WORKLOAD_KEY = ["dataset", "network", "optimizer"]
_GROUP = ["gpu", "dataset"]


def workloads_frame(workloads: Sequence[Job] = WORKLOADS) -> pl.DataFrame:
    """One row per workload: dataset, network, optimizer, target_metric, max_epochs, default_batch_size (= b0)."""
    columns = ("dataset", "network", "optimizer", "target_metric", "max_epochs", "default_bs")
    return pl.DataFrame([{c: getattr(w, c) for c in columns} for w in workloads]).rename({"default_bs": "default_batch_size"})


def run_statistics(train: pl.DataFrame, workloads: Sequence[Job] = WORKLOADS) -> pl.DataFrame:
    """Per workload and batch size, at the workload's target: runs, runs_reached, mean_target_epoch."""
    reached = pl.col("target_epoch").is_not_null() & (pl.col("target_epoch") <= pl.col("max_epochs"))
    return (
        train.join(workloads_frame(workloads), on=[*_WORKLOAD_KEY, "target_metric"], how="inner")
        .group_by([*_WORKLOAD_KEY, "target_metric", "batch_size"])
        .agg(
            pl.len().alias("runs"),
            reached.sum().cast(pl.UInt32).alias("runs_reached"),
            pl.col("target_epoch").filter(reached).mean().cast(pl.Float64).alias("mean_target_epoch"),
        )
    )


def max_power(train: pl.DataFrame, power: pl.DataFrame) -> pl.DataFrame:
    """MaxPower (W) per GPU: the largest limit among its power rows that join a train row."""
    keys = [*_WORKLOAD_KEY, "batch_size"]
    return (
        power.join(train.select(keys).unique(), on=keys, how="semi")
        .group_by("gpu")
        .agg(pl.col("power_limit").max().cast(pl.Int64).alias("max_power_w"))
    )


def config_expectations(
    train: pl.DataFrame, power: pl.DataFrame, workloads: Sequence[Job] = WORKLOADS
) -> pl.DataFrame:
    """One row per (gpu, dataset, batch size, power limit) that reaches the target: TTA, ETA, flags.

    ``train`` is ``zeus_train_runs``, ``power`` is ``zeus_power_profiles`` (any GPUs). Columns and
    units: ``ConfigExpectations``. Sorted by gpu, dataset, batch size, power limit.
    """
    specs = workloads_frame(workloads)
    stats = run_statistics(train, workloads).filter(pl.col("runs_reached") > 0)
    rows = power.join(specs.drop("target_metric", "max_epochs"), on=_WORKLOAD_KEY, how="inner")
    b0 = rows.group_by(_GROUP).agg(
        pl.min_horizontal(pl.col("default_batch_size").first(), pl.col("batch_size").max()).alias("b0")
    )
    frame = (
        rows.join(stats, on=[*_WORKLOAD_KEY, "batch_size"], how="inner")
        .join(max_power(train, power), on="gpu", how="left")
        .join(b0, on=_GROUP, how="left")
        .with_columns(
            (pl.col("runs_reached") / pl.col("runs")).alias("reach_rate"),
            pl.col("time_per_epoch").alias("time_per_epoch_s"),
            pl.col("average_power").alias("average_power_w"),
            (pl.col("mean_target_epoch") * pl.col("time_per_epoch")).alias("tta_s"),
        )
        .with_columns(
            (pl.col("tta_s") * pl.col("average_power_w")).alias("eta_j"),
            pl.col("b0").alias("default_batch_size"),
        )
    )
    default_limit = pl.col("power_limit").filter(pl.col("batch_size") == pl.col("b0")).max().over(_GROUP)
    frame = frame.with_columns(
        ((pl.col("batch_size") == pl.col("b0")) & (pl.col("power_limit") == default_limit)).fill_null(False).alias("is_default")
    )
    return conform(pareto_flags(frame), ConfigExpectations).sort("gpu", "dataset", "batch_size", "power_limit")


def pareto_flags(frame: pl.DataFrame, time: str = "tta_s", energy: str = "eta_j", group: Sequence[str] = _GROUP) -> pl.DataFrame:
    """``frame`` with ``is_pareto``: no row of its group has both lower-or-equal ``time`` and ``energy`` (one strictly)."""
    order = [*group, time, energy, "batch_size", "power_limit"]
    best_before = pl.col(energy).cum_min().shift(1).over(list(group))
    return (
        frame.sort(order)
        .with_columns((pl.col(energy) < best_before.fill_null(np.inf)).alias("is_pareto"))
    )


def hybrid_cost(eta_knob: float) -> pl.Expr:
    """cost(eta) = eta x ETA + (1 - eta) x MaxPower x TTA (J), on an expectations frame."""
    return zeus_cost(eta_knob, pl.col("eta_j"), pl.col("max_power_w"), pl.col("tta_s"))


def defaults(expectations: pl.DataFrame) -> pl.DataFrame:
    """The Default configuration of each (gpu, dataset) that has one: gpu, dataset, batch size, limit, TTA, ETA."""
    return expectations.filter(pl.col("is_default")).select(
        *_GROUP,
        pl.col("batch_size").alias("default_batch_size"),
        pl.col("power_limit").alias("default_power_limit"),
        pl.col("tta_s").alias("default_tta_s"),
        pl.col("eta_j").alias("default_eta_j"),
    )


def eta_sweep(expectations: pl.DataFrame, etas: Sequence[float]) -> pl.DataFrame:
    """For each eta and (gpu, dataset) with a Default: the configuration of least cost(eta), vs Default.

    Ties go to the smaller batch size, then the smaller power limit. Columns: gpu, dataset, eta,
    batch_size, power_limit, tta_s, eta_j, cost_j, default_* (see ``defaults``), energy_ratio =
    ETA / Default ETA, time_ratio = TTA / Default TTA (both < 1 mean a saving).
    """
    if any(not 0.0 <= e <= 1.0 for e in etas):
        raise ValueError(f"eta must lie in [0, 1], got {list(etas)}")
    base = defaults(expectations)
    best = [
        expectations.with_columns(pl.lit(float(e)).alias("eta"), hybrid_cost(float(e)).alias("cost_j"))
        .sort(*_GROUP, "cost_j", "batch_size", "power_limit")
        .group_by(_GROUP, maintain_order=True)
        .first()
        for e in etas
    ]
    frame = pl.concat(best) if best else expectations.clear().with_columns(pl.lit(0.0).alias("eta"), pl.lit(0.0).alias("cost_j"))
    return (
        frame.join(base, on=_GROUP, how="inner")
        .with_columns(
            (pl.col("eta_j") / pl.col("default_eta_j")).alias("energy_ratio"),
            (pl.col("tta_s") / pl.col("default_tta_s")).alias("time_ratio"),
        )
        .select(*_GROUP, "eta", "batch_size", "power_limit", "tta_s", "eta_j", "cost_j", "default_batch_size",
                "default_power_limit", "default_tta_s", "default_eta_j", "energy_ratio", "time_ratio")
        .sort(*_GROUP, "eta")
    )


#: The two criteria of the potential-savings figure: (label, eta of the hybrid cost).
SAVINGS_CRITERIA: tuple[tuple[str, float], ...] = (("min ETA", 1.0), (f"min cost, eta = {DEFAULT_ETA:g}", DEFAULT_ETA))


def savings_vs_default(expectations: pl.DataFrame, criteria: Sequence[tuple[str, float]] = SAVINGS_CRITERIA) -> pl.DataFrame:
    """Per (gpu, dataset, criterion): the best configuration and its energy and time saving vs Default.

    energy_saving = 1 - ETA / Default ETA, time_saving = 1 - TTA / Default TTA (fractions; negative
    means worse than Default). ``criterion`` is the label, ``eta`` the knob of the cost minimised
    (eta = 1 is ETA alone).
    """
    parts = [
        eta_sweep(expectations, [eta]).with_columns(pl.lit(label).alias("criterion"))
        for label, eta in criteria
    ]
    return (
        pl.concat(parts)
        .with_columns((1.0 - pl.col("energy_ratio")).alias("energy_saving"), (1.0 - pl.col("time_ratio")).alias("time_saving"))
        .select("criterion", "eta", *_GROUP, "batch_size", "power_limit", "tta_s", "eta_j", "default_batch_size",
                "default_power_limit", "default_tta_s", "default_eta_j", "energy_saving", "time_saving")
    )
