"""Hetero layer (Zeus²): the optimal batch split and power limits on A10 + T4, and its figures."""

import dagster as dg
import polars as pl

from pipelines.dagster_support import PathsResource, contract_metadata
from pipelines.hetero.allocations import GPU_STRENGTH_ORDER, allocations_table
from pipelines.hetero.curves import split_curves
from pipelines.hetero.fit import fit_profiles
from pipelines.hetero.model import MODEL_KINDS, CostModel

_PROFILES = {"hetero_gpu_profiles": dg.AssetIn(key="hetero_gpu_profiles")}


@dg.asset(
    group_name="hetero",
    ins=_PROFILES,
    kinds={"polars", "parquet"},
    description="Zeus² allocations: per workload, the brute-force, heuristic and baseline split of a 4096 batch over "
    "A10 + T4 and their power limits, under the published cost and the synchronous model (eta 0.5); time in s, "
    "energy and cost in J per profiled window.",
    metadata=contract_metadata("hetero_allocations"),
)
def hetero_allocations(context: dg.AssetExecutionContext, hetero_gpu_profiles: pl.DataFrame) -> dg.Output[pl.DataFrame]:
    table = allocations_table(hetero_gpu_profiles, strength_order=GPU_STRENGTH_ORDER, log=context.log.info)
    summary = table.select(
        "workload", "method", "model",
        pl.col("batch_split").list.eval(pl.element().cast(pl.String)).list.join(" / ").alias("split"),
        pl.col("power_limits").list.eval(pl.element().cast(pl.String)).list.join(" / ").alias("limits_w"),
        pl.col("cost").round(2),
    )
    return dg.Output(table, metadata={"optima": dg.MetadataValue.json(summary.to_dicts())})


@dg.asset_check(asset=hetero_allocations, blocking=True, description="No method beats brute force under the cost it minimises.")
def brute_force_is_lowest(hetero_allocations: pl.DataFrame) -> dg.AssetCheckResult:
    searched = hetero_allocations.filter(pl.col("method") != "baseline_as_written")
    best = searched.filter(pl.col("method") == "brute").select("workload", "model", pl.col("cost").alias("brute_cost"))
    worse = searched.join(best, on=["workload", "model"]).filter(pl.col("cost") < pl.col("brute_cost"))
    return dg.AssetCheckResult(passed=worse.height == 0 and best.height > 0, metadata={"violations": dg.MetadataValue.json(worse.to_dicts())})


@dg.asset(
    group_name="hetero",
    ins=_PROFILES,
    kinds={"matplotlib"},
    description="figures/hetero_cost_split (cost over the split for every limit pair, optima marked) and "
    "figures/hetero_methods (baseline, heuristic, brute force and the synchronous optimum), PNG + PDF + Parquet data.",
)
def hetero_figures(
    context: dg.AssetExecutionContext, paths: PathsResource, hetero_gpu_profiles: pl.DataFrame, hetero_allocations: pl.DataFrame
) -> dg.MaterializeResult:
    from pipelines.figures import hetero as figures
    from pipelines.figures.errors import NoData
    from pipelines.figures.style import save_figure

    folder = paths.paths().figures
    fits = fit_profiles(hetero_gpu_profiles)
    curves = []
    for workload, gpus in hetero_allocations.select("workload", "gpus").unique(maintain_order=True).iter_rows():
        if len(gpus) == 2:
            pair = [fits[(workload, g)] for g in gpus]
            idle = hetero_allocations.filter(pl.col("workload") == workload)["idle_power_w"][0].to_list()
            curves += [split_curves(pair, CostModel(kind, idle_power_w=tuple(idle))) for kind in MODEL_KINDS]
    written, skipped = {}, {}
    for name, build in (
        ("hetero_cost_split", lambda: figures.cost_split(pl.concat(curves) if curves else pl.DataFrame(), hetero_allocations)),
        ("hetero_methods", lambda: figures.methods(hetero_allocations)),
    ):
        try:
            fig, data = build()
        except NoData as exc:
            context.log.warning(f"{name}: {exc}")
            skipped[name] = str(exc)
            continue
        written[name] = save_figure(fig, data, name, folder).as_dict()
    return dg.MaterializeResult(metadata={"files": dg.MetadataValue.json(written), "skipped": dg.MetadataValue.json(skipped)})
