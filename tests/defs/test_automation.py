"""Keeping the tables current without a click: automation conditions downstream, the raw/measured sensor upstream.

On a real instance: the raw and ingest layers materialized from the mirror, the traces registered,
then Dagster's own evaluator of automation conditions (what the ``make dev`` daemon runs) and the
sensor evaluated by hand.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import dagster as dg
import polars as pl
import pytest

from pipelines.defs.clusters.partitions import register_trace_partitions
from pipelines.defs.zeus.sensors import measured_profiles_sensor
from pipelines.home.paths import ProjectPaths
from pipelines.vocabulary import PUBLISHED_GPUS
from tests.support.materialize import INGEST, Homes
from tests.support.measured_profiles import profile_rows

CLUSTER_JOBS = dg.AssetKey("cluster_workload_jobs")
OWN_JOBS = dg.AssetKey("own_cluster_jobs")


@pytest.fixture(scope="module")
def setting(materialized: Homes) -> Iterator[tuple[dg.Definitions, dg.DagsterInstance, ProjectPaths, dict]]:
    """The code location, an instance holding one materialization of raw + ingest, and the home it wrote. The instance is
    in memory, as ``dg.materialize``'s own default (a SQLite test instance tripled the materialization's time)."""
    instance = dg.DagsterInstance.ephemeral()
    home = materialized(INGEST, instance=instance, name="automation")  # a home of its own: these tests write into it
    assert home.result.success
    assert set(register_trace_partitions(instance, home.root)[0]) == {"itp", "elasticflow"}  # the mirror's public traces
    yield materialized.definitions(), instance, home.paths, home.resources()


@pytest.mark.slow
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


def _runs_after_a_drop_in(definitions: dg.Definitions, instance: dg.DagsterInstance, traces: list[str]) -> list[dict[str, set[str]]]:
    """The automation's requests, tick by tick, after the ingest of ``traces`` (the sensor's run): each tick's requested
    partitions by asset, each marked materialized before the next tick (as the runs would), until a tick requests nothing."""
    graph = definitions.resolve_asset_graph()
    downstream = dg.AssetSelection.assets(OWN_JOBS).downstream()
    result = dg.evaluate_automation_conditions(defs=definitions, instance=instance, asset_selection=downstream)
    for table in ("own_cluster_jobs", "own_cluster_traces", "quarantine/own_cluster_jobs_bad_rows"):
        for trace in traces:
            instance.report_runless_asset_event(dg.AssetMaterialization(dg.AssetKey.from_user_string(table), partition=trace))
    ticks: list[dict[str, set[str]]] = []
    while len(ticks) < 6:
        result = dg.evaluate_automation_conditions(defs=definitions, instance=instance, asset_selection=downstream, cursor=result.cursor)
        requested = {k: result.get_requested_partitions(k) for k in downstream.resolve(graph) if result.get_num_requested(k)}
        if not requested:
            return ticks
        ticks.append({k.to_user_string(): {str(p) for p in partitions} for k, partitions in requested.items()})
        for key, partitions in requested.items():
            for partition in partitions:
                instance.report_runless_asset_event(dg.AssetMaterialization(key, partition=partition))
    raise AssertionError(f"the automation did not settle: {ticks}")


@pytest.mark.slow  # five evaluations of the code location's automation conditions: about 15 s of CPU
def test_a_drop_in_follows_in_one_run_per_partitions_definition() -> None:
    """After the ingest of a new trace of yours, the automation asks for its replays and everything that reads them in three
    waves, one partitions definition each (a Dagster run holds one): the trace's jobs, cluster size and knob grid; its
    four GPUs' history, summary and power; then every table and figure that reads all traces, once, together. No public
    trace's partition is asked for again. (In ``make dev`` a run of each wave: 4 runs with the sensor's ingest,
    docs/own-cluster.md.)"""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pipelines.definitions import defs

        definitions = defs()
    graph = definitions.resolve_asset_graph()
    gpus = [f"{gpu}|lab" for gpu in PUBLISHED_GPUS]
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("trace", ["itp", "elasticflow"])
        for key in graph.materializable_asset_keys:  # the home `make figures` leaves
            partitions_def = graph.get(key).partitions_def
            for partition in partitions_def.get_partition_keys(dynamic_partitions_store=instance) if partitions_def else [None]:
                instance.report_runless_asset_event(dg.AssetMaterialization(key, partition=partition))
        for dimension in ("trace", "own_trace"):  # what cluster_traces_sensor does before it runs lab's ingest
            instance.add_dynamic_partitions(dimension, ["lab"])
        ticks = _runs_after_a_drop_in(definitions, instance, ["lab"])
    unpartitioned = {k.to_user_string() for k in dg.AssetSelection.assets(OWN_JOBS).downstream().resolve(graph)
                     if graph.get(k).partitions_def is None}
    assert ticks == [
        {"cluster_workload_jobs": {"lab"}, "cluster_capacity": {"lab"}, "zeus_knob_grid": {"lab"}},
        {key: set(gpus) for key in ("zeus_cluster_history", "zeus_cluster_summary", "cluster_power", "cluster_power_summary")},
        {key: {"None"} for key in unpartitioned},
    ]
    assert {"own_cluster_summary", "figures/own_cluster_report", "figures/traces_submissions", "figures/knob_grid_savings",
            "figures/clusters_timeline_power", "zeus_cluster_co2e"} <= unpartitioned
