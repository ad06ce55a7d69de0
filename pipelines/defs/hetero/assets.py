"""Zeus² (heterogeneous GPUs): the A10/T4 profiles, and the optimal batch split and power limits (figures in the catalog)."""

import dagster as dg
import polars as pl

from pipelines.defs.shared.ingest_assets import ingest_asset, raw_asset
from pipelines.defs.shared.metadata import contract_metadata
from pipelines.hetero.allocations import GPU_STRENGTH_ORDER, allocations_table
from pipelines.ingest import zeus2

raw_zeus2_profiles = raw_asset("raw_zeus2_profiles", "zeus2", "Zeus² A10/T4 profiles (JSON).")

hetero_gpu_profiles = ingest_asset(
    zeus2.HETERO_SPEC,
    description="Zeus² A10/T4 profiles (cifar, imagenet): energy (J) and time (s) per batch size and power limit (W). "
    "A malformed file is one quarantine row (file, line, key path, reason) and none of its entries.",
    raw=raw_zeus2_profiles,
    read=lambda p: zeus2.ingest_profile_folder(p.raw / "zeus2"),
    sources=[f"zeus2/{name}" for name in zeus2.PROFILE_FILES],
)

_PROFILES = {"hetero_gpu_profiles": dg.AssetIn(key="hetero_gpu_profiles")}


@dg.asset(
    group_name="zeus",
    ins=_PROFILES,
    kinds={"polars", "parquet"},
    automation_condition=dg.AutomationCondition.eager(),
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
