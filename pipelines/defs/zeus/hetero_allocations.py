"""Zeus² (heterogeneous GPUs): the optimal batch split and power limits over the A10/T4 profiles (figures in the catalog).

In group ``zeus`` with the single-job sweep: both replay Zeus's own profiles, no cluster trace (the profiles' ingest is
``defs/hetero/``).
"""

import dagster as dg
import polars as pl

from pipelines.defs.shared.table_assets import table_asset
from pipelines.hetero.allocations import GPU_STRENGTH_ORDER, allocations_table

_PROFILES = {"hetero_gpu_profiles": dg.AssetIn(key="hetero_gpu_profiles")}


@table_asset(
    ins=_PROFILES,
    description="Zeus² allocations: per workload, the brute-force, heuristic and baseline split of a 4096 batch over "
    "A10 + T4 and their power limits, under the published cost and the synchronous model (eta 0.5); time in s, "
    "energy and cost in J per profiled window.",
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
