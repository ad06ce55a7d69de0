"""Keeping the tables current without a click: automation conditions downstream, the raw/measured sensor upstream.

On a real instance: the raw and ingest layers materialized from the mirror, the traces registered,
then Dagster's own evaluator of automation conditions (what the ``make dev`` daemon runs) and the
sensor evaluated by hand.
"""

from __future__ import annotations

from collections.abc import Iterator

import dagster as dg
import polars as pl
import pytest

from pipelines.defs.clusters.partitions import register_trace_partitions
from pipelines.defs.zeus.sensors import measured_profiles_sensor
from pipelines.home.paths import ProjectPaths
from tests.support.materialize import INGEST, Homes
from tests.support.measured_profiles import profile_rows

CLUSTER_JOBS = dg.AssetKey("cluster_workload_jobs")


@pytest.fixture(scope="module")
def setting(materialized: Homes) -> Iterator[tuple[dg.Definitions, dg.DagsterInstance, ProjectPaths, dict]]:
    """The code location, an instance holding one materialization of raw + ingest, and the home it wrote."""
    with dg.instance_for_test() as instance:
        home = materialized(INGEST, instance=instance, name="automation")  # a home of its own: these tests write into it
        assert home.result.success
        assert set(register_trace_partitions(instance, home.root)[0]) == {"itp", "elasticflow"}  # the mirror's public traces
        yield materialized.definitions(), instance, home.paths, home.resources()


def test_an_ingested_table_updated_in_the_ui_refreshes_cluster_workload_jobs(setting) -> None:
    definitions, instance, _, resources = setting
    job = definitions.resolve_implicit_global_asset_job_def()
    first = dg.evaluate_automation_conditions(defs=definitions, instance=instance, asset_selection=dg.AssetSelection.assets(CLUSTER_JOBS))
    for trace in ("itp", "elasticflow"):
        subset = job.get_subset(asset_selection={CLUSTER_JOBS})
        assert subset.execute_in_process(resources=resources, instance=instance, partition_key=trace).success
    quiet = dg.evaluate_automation_conditions(defs=definitions, instance=instance, asset_selection=dg.AssetSelection.assets(CLUSTER_JOBS),
                                              cursor=first.cursor)
    assert quiet.total_requested == 0  # up to date
    itp = job.get_subset(asset_selection={dg.AssetKey("itp_jobs"), dg.AssetKey(["quarantine", "itp_jobs_bad_rows"])})
    assert itp.execute_in_process(resources=resources, instance=instance).success  # what "Materialize" in the UI does
    after = dg.evaluate_automation_conditions(defs=definitions, instance=instance, asset_selection=dg.AssetSelection.assets(CLUSTER_JOBS),
                                              cursor=quiet.cursor)
    assert after.get_requested_partitions(CLUSTER_JOBS) == {"itp", "elasticflow"}


def test_a_new_trace_partition_waits_for_the_sensors_run(setting) -> None:
    """cluster_traces_sensor adds a trace of yours as a trace and an own-trace partition, then runs its ingest; the automation
    must not start cluster_workload_jobs for it meanwhile, reading an own_cluster_jobs partition not written yet (it follows
    once the ingest has run: tests/clusters/test_own_clusters.py)."""
    definitions, instance, _, _ = setting
    select = dg.AssetSelection.assets(CLUSTER_JOBS)
    quiet = dg.evaluate_automation_conditions(defs=definitions, instance=instance, asset_selection=select)
    for dimension in ("trace", "own_trace"):
        instance.add_dynamic_partitions(dimension, ["lab"])
    try:
        after = dg.evaluate_automation_conditions(defs=definitions, instance=instance, asset_selection=select, cursor=quiet.cursor)
        assert after.get_requested_partitions(CLUSTER_JOBS) == set()
    finally:
        for dimension in ("trace", "own_trace"):
            instance.delete_dynamic_partition(dimension, "lab")


def test_every_derived_asset_follows_its_inputs(setting) -> None:
    definitions, _, _, _ = setting
    graph = definitions.resolve_asset_graph()
    derived = dg.AssetSelection.groups("clusters", "zeus", "figures").resolve(graph)
    assert all(graph.get(k).automation_condition is not None for k in derived)
    ingested = dg.AssetSelection.groups("ingest").resolve(graph) - {dg.AssetKey("own_cluster_jobs"), dg.AssetKey("own_cluster_traces")}
    assert all(graph.get(k).automation_condition is not None for k in ingested)  # a re-fetch in the UI re-ingests


def test_a_new_measured_profile_is_ingested_by_the_sensor(setting) -> None:
    definitions, instance, paths, resources = setting
    context = dg.build_sensor_context(instance=instance, resources={"paths": resources["paths"]})
    skipped = measured_profiles_sensor(context)
    assert isinstance(skipped, dg.SkipReason) and "holds the files" in (skipped.skip_message or "")
    from pipelines.measure.harness import write_profile

    write_profile(profile_rows(), paths.measured / "lab_a100.csv")  # what `measure profile --out raw/measured/...` writes
    request = measured_profiles_sensor(context)
    assert isinstance(request, dg.RunRequest)
    assert request.tags["gpu_energy/launched_by"] == "sensor:measured_profiles_sensor"  # the Runs page says who launched it
    assert set(request.asset_selection or ()) == {dg.AssetKey(t) for t in ("zeus_power_profiles", "power_limit_profiles")} | {
        dg.AssetKey(["quarantine", f"{t}_bad_rows"]) for t in ("zeus_power_profiles", "power_limit_profiles")}
    run = definitions.resolve_implicit_global_asset_job_def().get_subset(asset_selection=set(request.asset_selection or ()))
    assert run.execute_in_process(resources=resources, instance=instance).success
    again = measured_profiles_sensor(context)
    assert isinstance(again, dg.SkipReason)  # the table now holds the new profile
    # Zeus's own profile JSON dropped there (as GlobalPowerLimitOptimizer saves it) is a change too
    (paths.measured / "job.json").write_text('{"measurements": [{"power_limit": 300, "energy": 9.0, "time": 1.0}, '
                                             '{"power_limit": 250, "energy": 8.0, "time": 1.1}]}')
    request = measured_profiles_sensor(context)
    assert isinstance(request, dg.RunRequest)
    assert run.execute_in_process(resources=resources, instance=instance).success
    assert pl.read_parquet(paths.table("power_limit_profiles"))["source"].to_list() == ["job.json", "job.json"]
