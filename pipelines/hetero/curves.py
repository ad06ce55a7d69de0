"""Cost over the batch split for every pair of power limits of two GPUs (the data of the split figure)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from pipelines.contracts.base import polars_schema
from pipelines.contracts.figures import SplitCurves
from pipelines.hetero.fit import GpuFit, fit_profiles
from pipelines.hetero.model import CostModel, published_totals, sync_totals
from pipelines.hetero.search import Grid
from pipelines.vocabulary import MODEL_KINDS

#: Columns, types and units: the contract ``pipelines.contracts.figures.SplitCurves`` (the data of ``hetero_cost_split``).
SCHEMA = polars_schema(SplitCurves)


def split_curves(fits: Sequence[GpuFit], model: CostModel, grid: Grid = Grid()) -> pl.DataFrame:
    """Two GPUs: time (s), energy (J) and cost (J) of every split b_1 = g .. G - g and limit pair (``SCHEMA``).

    Rows are ordered by (limit 1, limit 2) in profile order, then b_1: the same numbers the search scores.
    """
    if len(fits) != 2:
        raise ValueError(f"split curves need exactly two GPUs, got {len(fits)}")
    first, second = fits
    units = np.arange(1, grid.units, dtype=np.int64)
    b1 = units * grid.granularity
    b2 = grid.global_batch - b1
    # axes: (limit 1, limit 2, split)
    t1, p1 = first.time_s(b1)[:, None, :], first.power_w(b1)[:, None, :]
    t2, p2 = second.time_s(b2)[None, :, :], second.power_w(b2)[None, :, :]
    w1, w2 = model.prices(first)[:, None, None], model.prices(second)[None, :, None]
    if model.kind == "published":
        time, energy, cost = published_totals([p1, p2], [t1, t2], [w1, w2], model.eta)
    else:
        time, energy, cost = sync_totals([p1, p2], [t1, t2], [w1, w2], model.idle_powers(fits), model.eta)
    shape = (first.n_limits, second.n_limits, b1.size)
    l1, l2, b = np.meshgrid(first.power_limits, second.power_limits, b1, indexing="ij")
    n = int(np.prod(shape))
    return pl.DataFrame(
        {
            "workload": [first.workload] * n,
            "model": [model.kind] * n,
            "gpu_1": [first.gpu] * n,
            "gpu_2": [second.gpu] * n,
            "power_limit_1": l1.ravel(),
            "power_limit_2": l2.ravel(),
            "batch_1": b.ravel(),
            "time_s": np.broadcast_to(time, shape).ravel(),
            "energy_j": np.broadcast_to(energy, shape).ravel(),
            "cost": np.broadcast_to(cost, shape).ravel(),
        },
        schema=SCHEMA,
    )


def allocation_curves(profiles: pl.DataFrame, allocations: pl.DataFrame) -> pl.DataFrame:
    """``split_curves`` of every two-GPU workload of ``allocations``, under each cost model, stacked.

    ``profiles`` is ``hetero_gpu_profiles`` (fitted here, as the allocations were); the idle power of
    the synchronous model is the one the allocations used. Empty (``SplitCurves`` columns) when no
    workload has two GPUs.
    """
    fits = fit_profiles(profiles)
    curves = []
    for workload, gpus in allocations.select("workload", "gpus").unique(maintain_order=True).iter_rows():
        if len(gpus) == 2:
            pair = [fits[(workload, g)] for g in gpus]
            idle = allocations.filter(pl.col("workload") == workload)["idle_power_w"][0].to_list()
            curves += [split_curves(pair, CostModel(kind, idle_power_w=tuple(idle))) for kind in MODEL_KINDS]
    return pl.concat(curves) if curves else pl.DataFrame(schema=polars_schema(SplitCurves))
