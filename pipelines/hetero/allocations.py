"""The allocations table: every method's allocation for each workload's GPUs, scored under both models.

One row per (workload, method, model). ``model`` is the cost the search minimised (``published``
or ``sync``, see ``pipelines.hetero.model``); ``time_s``, ``energy_j`` and ``cost`` are under that
model, ``published_cost`` and ``sync_*`` score the same allocation under each model (same eta and
time price), so the published optimum's cost in synchronous training can be read next to the
synchronous optimum's. The row
``baseline_as_written`` (published model, two GPUs, G = 4096 only) is the published baseline as its
code computes it: ``cost`` is the score that code reports (GPU 2's term only, see
``search.baseline_as_written``), while time and energy are the allocation's real published-model values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import polars as pl

from pipelines.contracts.base import polars_schema
from pipelines.contracts.hetero import AS_WRITTEN, HeteroAllocations
from pipelines.hetero.fit import GpuFit, fit_profiles
from pipelines.hetero.model import CostModel
from pipelines.hetero.search import PUBLISHED_GLOBAL_BATCH, Allocation, Grid, Progress, baseline, baseline_as_written, brute_force, evaluate, heuristic
from pipelines.vocabulary import DEFAULT_ETA, HETERO_METHODS, ModelKind, TimePrice

#: GPUs from strongest to weakest (the published code takes the stronger first; A10 > T4 by datasheet FLOPS).
GPU_STRENGTH_ORDER: tuple[str, ...] = ("a10", "t4")

#: Columns, types and units: the contract ``pipelines.contracts.hetero.HeteroAllocations``.
SCHEMA = polars_schema(HeteroAllocations)

_METHOD_FUNCTIONS: dict[str, Callable[..., Allocation]] = {"brute": brute_force, "heuristic": heuristic, "baseline": baseline}


def order_gpus(gpus: Sequence[str], strength_order: Sequence[str] = GPU_STRENGTH_ORDER) -> list[str]:
    """``gpus`` strongest first by ``strength_order``; a GPU not in it raises ``ValueError``."""
    unknown = sorted(set(gpus) - set(strength_order))
    if unknown:
        raise ValueError(f"GPU(s) {unknown} not in the strength order {list(strength_order)}: give the order, strongest first")
    return sorted(set(gpus), key=list(strength_order).index)


def allocation_rows(
    fits: Sequence[GpuFit],
    grid: Grid = Grid(),
    *,
    eta: float = DEFAULT_ETA,
    time_price: TimePrice = "power_limit",
    idle_power_w: Sequence[float] | None = None,
    methods: Sequence[str] = HETERO_METHODS,
    models: Sequence[ModelKind] = ("published", "sync"),
    as_written: bool = True,
    progress: Callable[[str], Progress | None] | None = None,
) -> list[dict[str, object]]:
    """Rows (``SCHEMA``) for one group of GPUs (one workload), ``fits`` strongest first.

    ``progress(label)`` may return a callback that receives the number of splits searched.
    """
    idle = tuple(idle_power_w) if idle_power_w is not None else None
    sync = CostModel("sync", eta, time_price, idle)
    rows = []
    for kind in models:
        model = CostModel(kind, eta, time_price, idle)
        for method in methods:
            report = progress(f"{method} ({kind})") if progress else None
            found = _METHOD_FUNCTIONS[method](fits, grid, model, progress=report)
            rows.append(_row(fits, grid, method, model, found, sync))
    two_gpus_published = len(fits) == 2 and grid.global_batch == PUBLISHED_GLOBAL_BATCH and "published" in models
    if as_written and two_gpus_published:
        found, score = baseline_as_written(fits)
        published = CostModel("published", 0.5, "power_limit", idle)
        row = _row(fits, grid, AS_WRITTEN, published, found, sync)
        rows.append({**row, "cost": score})
    return rows


def _row(fits: Sequence[GpuFit], grid: Grid, method: str, model: CostModel, found: Allocation, sync: CostModel) -> dict[str, object]:
    published = CostModel("published", sync.eta, sync.time_price)
    in_sync = evaluate(fits, found.batch_split, found.power_limits, sync)
    in_published = evaluate(fits, found.batch_split, found.power_limits, published)
    return {
        "workload": fits[0].workload,
        "gpus": list(found.gpus),
        "method": method,
        "model": model.kind,
        "eta": model.eta,
        "time_price": model.time_price,
        "global_batch": grid.global_batch,
        "granularity": grid.granularity,
        "batch_split": list(found.batch_split),
        "power_limits": list(found.power_limits),
        "gpu_time_s": list(found.gpu_time_s),
        "time_s": found.time_s,
        "energy_j": found.energy_j,
        "cost": found.cost,
        "published_cost": in_published.cost,
        "sync_time_s": in_sync.time_s,
        "sync_energy_j": in_sync.energy_j,
        "sync_cost": in_sync.cost,
        "idle_power_w": sync.idle_powers(fits).tolist(),
        "candidates": found.candidates,
    }


def allocations_table(
    profiles: pl.DataFrame,
    grid: Grid = Grid(),
    *,
    strength_order: Sequence[str] = GPU_STRENGTH_ORDER,
    eta: float = DEFAULT_ETA,
    time_price: TimePrice = "power_limit",
    idle_power_w: Mapping[str, float] | None = None,
    log: Callable[[str], None] | None = None,
) -> pl.DataFrame:
    """The allocations table (``SCHEMA``) for every workload of a profiles table with two or more GPUs.

    ``profiles`` is a ``hetero_gpu_profiles`` table (``pipelines.ingest.zeus2``), in file order. Each workload's
    GPUs form one group, strongest first by ``strength_order``. ``idle_power_w`` maps GPU -> W
    (missing GPUs take the model default).
    """
    fits = fit_profiles(profiles)
    rows: list[dict[str, object]] = []
    for workload in profiles["workload"].unique(maintain_order=True):
        gpus = order_gpus([g for w, g in fits if w == workload], strength_order)
        if len(gpus) < 2:
            if log:
                log(f"{workload}: only {gpus} profiled, nothing to split")
            continue
        group = [fits[(workload, g)] for g in gpus]
        idle = None
        if idle_power_w:
            defaults = CostModel("sync").idle_powers(group)
            idle = [float(idle_power_w.get(g, d)) for g, d in zip(gpus, defaults, strict=True)]
        rows.extend(allocation_rows(group, grid, eta=eta, time_price=time_price, idle_power_w=idle))
        if log:
            log(f"{workload}: {' + '.join(gpus)} allocated")
    return pl.DataFrame(rows, schema=SCHEMA) if rows else pl.DataFrame(schema=SCHEMA)
