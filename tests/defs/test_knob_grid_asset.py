"""zeus_knob_grid is partitioned by trace: a new trace's partition replays that trace only, the others stay as they were.

On an instance stored on disk: two traces' jobs (a slice of ElasticFlow, and the same jobs as a user's
trace ``mine``) reported materialized, the grid materialized for the first, then the second trace
registered and Dagster's own evaluator of automation conditions (what the ``make dev`` daemon runs)
asked what to run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from pipelines.clusters import mapping
from pipelines.clusters.sweep import GRIDS, replays
from pipelines.home.atomic import write_parquet_atomic
from tests.support.materialize import Homes, resources

GRID = dg.AssetKey("zeus_knob_grid")
JOBS = dg.AssetKey("cluster_workload_jobs")
#: The replays in the step's own process: no Dask cluster to start in a test.
IN_PROCESS = {"resources": {"dask": {"config": {"scheduler": "none"}}}}


def _report(instance: dg.DagsterInstance, key: dg.AssetKey, partition: str | None = None) -> None:
    """Record ``key`` (``partition``) as materialized, as a run writing its file would."""
    instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=key, partition=partition))


@pytest.mark.slow
def test_a_new_trace_replays_only_its_own_grid(ingested, materialized: Homes, tmp_path: Path) -> None:
    src, _ = ingested
    root = tmp_path / "home"
    for table in ("zeus_train_runs", "zeus_power_profiles"):
        shutil.copy(src.table(table), (root / "assets").mkdir(parents=True, exist_ok=True) or root / f"assets/{table}.parquet")
    testbed = mapping.map_elasticflow(pl.read_parquet(src.table("elasticflow_jobs")).filter(pl.col("cluster") == "testbed"))
    write_parquet_atomic(testbed, root / "assets/cluster_workload_jobs/elasticflow.parquet")
    write_parquet_atomic(testbed.with_columns(trace=pl.lit("mine")), root / "assets/cluster_workload_jobs/mine.parquet")
    definitions = materialized.definitions()
    everything = [*(definitions.assets or []), *(definitions.asset_checks or [])]
    grid_only = dg.AssetSelection.assets(GRID)
    with dg.DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions("trace", ["elasticflow"])
        for key in (dg.AssetKey("zeus_train_runs"), dg.AssetKey("zeus_power_profiles")):
            _report(instance, key)
        _report(instance, JOBS, "elasticflow")
        first = dg.evaluate_automation_conditions(defs=definitions, instance=instance, asset_selection=grid_only)
        assert dg.materialize(everything, selection=grid_only, partition_key="elasticflow", instance=instance,
                              resources=resources(root), run_config=IN_PROCESS).success
        before = (root / "assets/zeus_knob_grid/elasticflow.parquet").read_bytes()
        quiet = dg.evaluate_automation_conditions(defs=definitions, instance=instance, asset_selection=grid_only, cursor=first.cursor)
        assert quiet.total_requested == 0

        instance.add_dynamic_partitions("trace", ["mine"])  # what cluster_traces_sensor does for `clusters add mine FILE`
        _report(instance, JOBS, "mine")
        after = dg.evaluate_automation_conditions(defs=definitions, instance=instance, asset_selection=grid_only, cursor=quiet.cursor)
        assert after.get_requested_partitions(GRID) == {"mine"}  # not elasticflow again
        result = dg.materialize(everything, selection=grid_only, partition_key="mine", instance=instance,
                                resources=resources(root), run_config=IN_PROCESS)
        (event,) = result.asset_materializations_for_node("zeus_knob_grid")
        count = {t: len(instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=GRID, asset_partitions=[t]), limit=10).records)
                 for t in ("elasticflow", "mine")}
    assert event.partition == "mine" and count == {"elasticflow": 1, "mine": 1}
    assert event.metadata["replays"].value == len(replays(GRIDS["default"], ("mine",))) == 72  # one trace's replays, not two
    assert (root / "assets/zeus_knob_grid/elasticflow.parquet").read_bytes() == before
    mine = pl.read_parquet(root / "assets/zeus_knob_grid/mine.parquet")
    theirs = pl.read_parquet(root / "assets/zeus_knob_grid/elasticflow.parquet")
    assert mine["trace"].unique().to_list() == ["mine"] and event.metadata["dagster/row_count"].value == mine.height
    # the same jobs under another name: the same numbers
    assert mine.drop("trace").equals(theirs.drop("trace"))
