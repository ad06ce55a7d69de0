"""Your own traces in Dagster: ``clusters add``, the sensor that makes a dropped file a partition, and the assets that follow."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path
from unittest import mock

import dagster as dg
import polars as pl
import pytest

from pipelines.defs.clusters.sensors import cluster_traces_sensor
from pipelines.defs.shared.io_manager import ParquetIOManager, PathsResource
from pipelines.sources.fetch import sha256_of
from tests.support.sacct_export import write_export

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from pipelines.definitions import defs

    DEFINITIONS = defs()
#: A run of the sensor for a trace of yours: its ingest, in the own-trace partition space (cluster_workload_jobs and
#: cluster_capacity follow by automation: tests/defs/test_automation.py).
USER_RUN = {"own_cluster_jobs", "quarantine/own_cluster_jobs_bad_rows", "own_cluster_traces"}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty data home with no mirror (so that no public trace is present unless a test puts its files in raw/)."""
    monkeypatch.setenv("TRACES_MIRROR", str(tmp_path / "no-mirror"))
    monkeypatch.setenv("GPU_ENERGY_HOME", str(tmp_path / "home"))
    (tmp_path / "home" / "raw").mkdir(parents=True)
    return tmp_path / "home"


def tick(instance: dg.DagsterInstance, home: Path):
    """One evaluation of the sensor as the daemon runs it (run requests resolved against its target)."""
    with dg.build_sensor_context(instance_ref=instance.get_ref(), resources={"paths": PathsResource(root=str(home))},
                                 definitions=DEFINITIONS) as context:
        result = cluster_traces_sensor.evaluate_tick(context)
    for request in result.dynamic_partitions_requests or []:  # what the daemon does with them
        if isinstance(request, dg.AddDynamicPartitionsRequest):
            instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
        else:
            assert isinstance(request, dg.DeleteDynamicPartitionsRequest)
            for key in request.partition_keys:
                instance.delete_dynamic_partition(request.partitions_def_name, key)
    return result


def assets_of(request: dg.RunRequest) -> set[str]:
    return {k.to_user_string() for k in request.asset_selection or []}


def test_the_sensor_registers_a_dropped_file_and_requests_its_run_once_per_change(home: Path) -> None:
    clusters = home / "raw" / "clusters"
    clusters.mkdir()
    write_export(clusters / "lab.sacct", 50, seed=2)
    (clusters / "Bad Name.sacct").write_text("JobID|Submit\n")
    (clusters / "notes.txt").write_text("not a trace")
    with dg.instance_for_test() as instance:
        first = tick(instance, home)
        assert [(type(r).__name__, r.partitions_def_name, list(r.partition_keys)) for r in first.dynamic_partitions_requests] == [
            ("AddDynamicPartitionsRequest", "trace", ["lab"]), ("AddDynamicPartitionsRequest", "own_trace", ["lab"])]
        assert [(r.partition_key, assets_of(r), r.job_name) for r in first.run_requests] == [("lab", USER_RUN, "own_trace_ingest")]
        assert [r.tags["gpu_energy/trace"] for r in first.run_requests] == ["lab"]  # namespaced as the code location
        assert [r.tags["gpu_energy/launched_by"] for r in first.run_requests] == ["sensor:cluster_traces_sensor"]
        assert "trace" not in first.run_requests[0].tags
        assert sorted(j.name for j in cluster_traces_sensor.jobs) == ["own_trace_ingest", "trace_ingest"]  # named in the Runs list
        assert instance.get_dynamic_partitions("trace") == ["lab"]  # no empty partitions for absent public traces
        assert instance.get_dynamic_partitions("own_trace") == ["lab"]  # and no public trace among yours
        # Nothing materialized yet: the same request (same run key, so the daemon starts it once), no new partition.
        second = tick(instance, home)
        assert not second.dynamic_partitions_requests
        assert [r.run_key for r in second.run_requests] == [r.run_key for r in first.run_requests]
        # Once cluster_workload_jobs[lab] is materialized the sensor is quiet, until the file changes.
        instance.report_runless_asset_event(dg.AssetMaterialization("cluster_workload_jobs", partition="lab"))
        quiet = tick(instance, home)
        assert not quiet.run_requests
        assert quiet.skip_message == "no new or changed trace: 1 registered (lab), each materialized since its files last changed"
        later = (clusters / "lab.sacct").stat().st_mtime + 60
        os.utime(clusters / "lab.sacct", (later, later))
        changed = tick(instance, home).run_requests
        assert len(changed) == 1 and changed[0].run_key not in {r.run_key for r in first.run_requests}


def test_public_traces_are_partitions_only_when_their_files_are_present(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with dg.instance_for_test() as instance:
        assert not tick(instance, home).dynamic_partitions_requests  # no file, no mirror: nothing
        (home / "raw" / "acme").mkdir()
        (home / "raw" / "acme" / "trace_kalos.csv").write_text("job_id\n")
        result = tick(instance, home)
        assert instance.get_dynamic_partitions("trace") == ["acme"]
        assert [(r.partition_key, assets_of(r)) for r in result.run_requests] == [
            ("acme", {"raw_acme_traces", "acme_jobs", "quarantine/acme_jobs_bad_rows", "cluster_workload_jobs", "cluster_capacity"})]
        monkeypatch.setenv("TRACES_MIRROR", str(tmp_path / "mirror"))
        (tmp_path / "mirror" / "itp").mkdir(parents=True)
        (tmp_path / "mirror" / "itp" / "raw-traces.tar.gz").write_bytes(b"")
        tick(instance, home)
        assert instance.get_dynamic_partitions("trace") == ["acme", "itp"]


@pytest.mark.slow
def test_clusters_add_copies_the_file_and_records_its_sha256_and_options(home: Path, tmp_path: Path) -> None:
    export = tmp_path / "export.txt"
    write_export(export, 30, seed=3)

    def add(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pipelines", "clusters", "add", *args], capture_output=True, text=True, check=False,
                              cwd=tmp_path, env=os.environ)

    done = add("lab", str(export), "--format", "sacct", "--timezone", "Europe/Berlin")
    assert done.returncode == 0, done.stderr
    target = home / "raw" / "clusters" / "lab.sacct"
    assert target.read_bytes() == export.read_bytes()
    options = tomllib.loads((home / "raw" / "clusters" / "lab.toml").read_text())
    assert (options["format"], options["timezone"], options["sha256"], options["source"]) == (
        "sacct", "Europe/Berlin", sha256_of(export), str(export.resolve()))
    again = add("lab", str(export))
    assert again.returncode == 2 and "exists" in again.stderr and "--replace" in again.stderr
    assert add("lab", str(export), "--replace", "--timezone", "UTC").returncode == 0
    assert tomllib.loads((home / "raw" / "clusters" / "lab.toml").read_text())["timezone"] == "UTC"
    bad = add("itp", str(export))
    assert bad.returncode == 2 and "public trace" in bad.stderr
    listed = subprocess.run([sys.executable, "-m", "pipelines", "clusters", "list"], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert "lab: clusters/lab.sacct (sacct, times in UTC)" in listed.stdout


@pytest.mark.slow
def test_a_user_trace_flows_through_the_assets_and_into_the_figures(home: Path, ingested, tmp_path: Path) -> None:
    from pipelines.figures import catalog

    src, _ = ingested
    (home / "assets").mkdir()
    for table in ("zeus_train_runs", "zeus_power_profiles", "itp_jobs", "elasticflow_jobs", "acme_jobs", "alibaba_groups"):
        shutil.copy(src.table(table), home / "assets" / f"{table}.parquet")
    clusters = home / "raw" / "clusters"
    clusters.mkdir()
    truth = write_export(clusters / "lab.sacct", 300, seed=9, timezone="Asia/Tokyo", malformed=2, span_days=3)
    (clusters / "lab.toml").write_text('timezone = "Asia/Tokyo"\n')
    everything = [*DEFINITIONS.assets, *DEFINITIONS.asset_checks]
    resources = {"io_manager": ParquetIOManager(root=str(home)), "paths": PathsResource(root=str(home))}
    jobs_follow = dg.AssetSelection.assets("cluster_workload_jobs")
    with dg.instance_for_test() as instance:
        for table in ("zeus_train_runs", "zeus_power_profiles", "itp_jobs", "elasticflow_jobs", "acme_jobs", "alibaba_groups"):
            instance.report_runless_asset_event(dg.AssetMaterialization(table))  # their files were copied in above
        (request,) = tick(instance, home).run_requests
        before = dg.evaluate_automation_conditions(defs=DEFINITIONS, instance=instance, asset_selection=jobs_follow)
        assert before.total_requested == 0  # lab's jobs wait for lab's ingest
        first = dg.materialize(everything, resources=resources, instance=instance, partition_key=request.partition_key,
                               selection=list(request.asset_selection or []))
        assert first.success
        assert [r.run_key for r in tick(instance, home).run_requests] == [request.run_key]  # the daemon started it once
        # What the automation sensor then runs: lab's jobs follow lab's ingest (its own-trace partition), nothing else.
        follows = dg.evaluate_automation_conditions(defs=DEFINITIONS, instance=instance, asset_selection=jobs_follow,
                                                    cursor=before.cursor)
        assert follows.get_requested_partitions(dg.AssetKey("cluster_workload_jobs")) == {"lab"}
        jobs_run = dg.materialize(everything, resources=resources, instance=instance, partition_key="lab",
                                  selection=["cluster_workload_jobs", "cluster_capacity"])
        assert jobs_run.success
        checks = {e.check_name: e.passed for e in [*first.get_asset_check_evaluations(), *jobs_run.get_asset_check_evaluations()]}
        assert checks == {"every_line_accounted_for": True, "quarantine_share": True, "runtime_ratio_means_one": True,
                          "setting_covers_peak": True, "no_rows_quarantined": False}  # the 2 malformed lines: a warning
        (quarantined,) = [e for e in first.get_asset_check_evaluations() if e.check_name == "no_rows_quarantined"]
        assert quarantined.severity == dg.AssetCheckSeverity.WARN and quarantined.description.startswith("2 rows quarantined; ")
        rest = dg.materialize(everything, resources=resources, instance=instance, partition_key="v100|lab",
                              selection=["zeus_cluster_history", "zeus_cluster_summary", "cluster_power", "cluster_power_summary"])
        assert rest.success
        assert not tick(instance, home).run_requests
    traces = pl.read_parquet(home / "assets" / "own_cluster_traces" / "lab.parquet").row(0, named=True)
    assert (traces["trace"], traces["timezone"], traces["lines"], traces["quarantined"]) == ("lab", "Asia/Tokyo", truth.lines, 2)
    assert pl.read_parquet(home / "assets" / "quarantine" / "own_cluster_jobs_bad_rows" / "lab.parquet").height == 2
    jobs = pl.read_parquet(home / "assets" / "cluster_workload_jobs" / "lab.parquet")
    assert jobs.height == truth.completed_gpu_allocations and set(jobs["trace"]) == {"lab"}
    summary = pl.read_parquet(home / "assets" / "zeus_cluster_summary" / "v100__lab.parquet")
    assert summary["jobs"].sum() == jobs.height
    power = pl.read_parquet(home / "assets" / "cluster_power_summary" / "v100__lab.parquet")
    assert set(power["policy"]) == {"zeus", "default", "grid-search"}

    frames = {t: pl.read_parquet(home / "assets" / (f"{t}/lab.parquet" if t == "own_cluster_jobs" else f"{t}.parquet"))
              for t in catalog.JOB_TABLES}
    durations = {a.key: a for a in catalog.TRACES.assets}["traces_job_duration_cdf"]
    report = catalog.render(durations, frames, tmp_path)
    assert "traces_job_duration_cdf" in report.written
    drawn = pl.read_parquet(tmp_path / "traces_job_duration_cdf.parquet")
    assert "lab" in set(drawn["trace"])
    cluster_frames = {"zeus_cluster_summary": summary}
    report = catalog.render(catalog.CLUSTERS.assets[0], cluster_frames, tmp_path)
    assert set(pl.read_parquet(tmp_path / "clusters_savings_by_trace.parquet")["trace"]) == {"lab"}


def test_both_sensors_run_without_a_click_and_the_replay_follows_eagerly() -> None:
    sensors = {s.name: s for s in DEFINITIONS.sensors}
    assert {name: s.default_status for name, s in sensors.items()} == {
        "cluster_traces_sensor": dg.DefaultSensorStatus.RUNNING, "automation_sensor": dg.DefaultSensorStatus.RUNNING,
        "measured_profiles_sensor": dg.DefaultSensorStatus.RUNNING, "retention_sensor": dg.DefaultSensorStatus.RUNNING}
    graph = DEFINITIONS.resolve_asset_graph()
    eager = {k.to_user_string() for k in graph.get_all_asset_keys() if graph.get(k).automation_condition is not None}
    assert {"zeus_cluster_history", "zeus_cluster_summary", "cluster_power", "cluster_power_summary", "figures/clusters_timeline_power",
            "figures/clusters_savings_by_trace", "figures/traces_job_duration_cdf"} <= eager
    assert "own_cluster_jobs" not in eager  # it runs when the sensor (or materialize) says
    # cluster_workload_jobs follows own_cluster_jobs partition by partition: lab's jobs follow lab's ingest, and a public
    # trace's partition has no own-trace partition to wait for.
    jobs = graph.get(dg.AssetKey("cluster_workload_jobs"))
    assert dg.AssetKey("own_cluster_jobs") in jobs.parent_keys
    assert isinstance(jobs.assets_def.get_partition_mapping(dg.AssetKey("own_cluster_jobs")), dg.IdentityPartitionMapping)
    checks = {(s.name, s.blocking) for a in DEFINITIONS.assets if isinstance(a, dg.AssetsDefinition) for s in a.check_specs
              if s.asset_key == dg.AssetKey("own_cluster_jobs")}
    assert checks == {("every_line_accounted_for", True), ("quarantine_share", False)}


def test_the_sensor_removes_the_partitions_of_traces_gone_or_rejected_and_says_so(home: Path, tmp_path: Path) -> None:
    clusters = home / "raw" / "clusters"
    clusters.mkdir()
    write_export(clusters / "lab.sacct", 20, seed=2)
    write_export(clusters / "old.sacct", 20, seed=3)
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n")
    log = mock.Mock(spec=logging.Logger)  # what the sensor says on its tick's log (in the UI's tick history)
    with dg.instance_for_test() as instance, mock.patch.object(dg.SensorEvaluationContext, "log", new_callable=mock.PropertyMock,
                                                                return_value=log):
        instance.add_dynamic_partitions("trace", ["passwd"])  # registered by an older version that followed the link
        (clusters / "passwd.sacct").symlink_to(secret)
        first = tick(instance, home)
        assert [(type(r).__name__, r.partitions_def_name, list(r.partition_keys)) for r in first.dynamic_partitions_requests] == [
            ("AddDynamicPartitionsRequest", "trace", ["lab", "old"]), ("DeleteDynamicPartitionsRequest", "trace", ["passwd"]),
            ("AddDynamicPartitionsRequest", "own_trace", ["lab", "old"])]
        assert instance.get_dynamic_partitions("trace") == ["lab", "old"]
        (clusters / "old.sacct").unlink()
        second = tick(instance, home)
        assert [(type(r).__name__, r.partitions_def_name, list(r.partition_keys)) for r in second.dynamic_partitions_requests] == [
            ("DeleteDynamicPartitionsRequest", "trace", ["old"]), ("DeleteDynamicPartitionsRequest", "own_trace", ["old"])]
        assert instance.get_dynamic_partitions("trace") == ["lab"]
        assert instance.get_dynamic_partitions("own_trace") == ["lab"]
        assert not tick(instance, home).dynamic_partitions_requests  # nothing piles up, nothing is asked again
    messages = [c.args[0] for c in log.warning.call_args_list]
    assert f"raw/clusters: not used: passwd.sacct: a symbolic link leaving the data home (to {secret}); copy the file in with " \
           "`clusters add`" in messages
    assert "trace old: its files are gone or not usable; its partition is removed (`clusters remove old` removes its stored tables)" in messages
    assert not any("root:x" in m for m in messages) and not log.info.called


@pytest.mark.slow
def test_one_trace_that_cannot_be_read_fails_only_itself(home: Path, ingested) -> None:
    """A file replaced by hand (its sha256 is not its sidecar's) fails its own run; another trace ingests and is summarized."""
    src, _ = ingested
    (home / "assets").mkdir()
    for table in ("zeus_train_runs", "zeus_power_profiles"):
        shutil.copy(src.table(table), home / "assets" / f"{table}.parquet")
    clusters = home / "raw" / "clusters"
    clusters.mkdir()
    truth = write_export(clusters / "lab.sacct", 60, seed=4, span_days=2)
    write_export(clusters / "bad.sacct", 60, seed=5)
    (clusters / "bad.toml").write_text(f'sha256 = "{"0" * 64}"\n')
    everything = [*DEFINITIONS.assets, *DEFINITIONS.asset_checks]
    resources = {"io_manager": ParquetIOManager(root=str(home)), "paths": PathsResource(root=str(home))}
    own = ["own_cluster_jobs", "quarantine/own_cluster_jobs_bad_rows", "own_cluster_traces"]
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("own_trace", ["bad", "lab"])
        assert failed_with(dg.materialize(everything, resources=resources, instance=instance, partition_key="bad", selection=own,
                                          raise_on_error=False)).startswith("ValueError: trace bad: clusters/bad.sacct: not used: its sha256 ")
        assert dg.materialize(everything, resources=resources, instance=instance, partition_key="lab", selection=own).success
        assert not (home / "assets" / "own_cluster_jobs" / "bad.parquet").exists()
        # What reads every partition reads those present: lab's (bad's was never materialized).
        summary = dg.materialize(everything, resources=resources, instance=instance, selection=["own_cluster_summary"])
        assert summary.success
    rows = pl.read_parquet(home / "assets" / "own_cluster_summary.parquet")
    assert set(rows["trace"]) == {"lab"}
    assert pl.read_parquet(home / "assets" / "own_cluster_traces" / "lab.parquet")["lines"].to_list() == [truth.lines]


def failed_with(result: dg.ExecuteInProcessResult) -> str:
    """The one step failure's own error of a failed run (under Dagster's wrapper)."""
    assert not result.success
    (failure,) = [e for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_FAILURE]
    return str(failure.step_failure_data.error.cause.message)


def test_an_own_trace_partition_added_by_hand_without_files_is_refused_in_one_line(home: Path) -> None:
    """The UI's launch dialog lets a user add a partition key by hand: its run fails, saying why in one line, and writes nothing."""
    (home / "raw" / "clusters").mkdir()
    everything = [*DEFINITIONS.assets, *DEFINITIONS.asset_checks]
    resources = {"io_manager": ParquetIOManager(root=str(home)), "paths": PathsResource(root=str(home))}
    own = ["own_cluster_jobs", "quarantine/own_cluster_jobs_bad_rows", "own_cluster_traces"]
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("own_trace", ["itp", "ghost"])
        messages = {key: failed_with(dg.materialize(everything, resources=resources, instance=instance, partition_key=key,
                                                    selection=own, raise_on_error=False)) for key in ("itp", "ghost")}
    clusters = home / "raw" / "clusters"
    assert messages == {
        "itp": "ValueError: own trace itp: a public trace, not one of yours (its tables are ingested from raw/ by the public "
               "traces' assets); this partition has no file to read: delete it\n",
        "ghost": f"ValueError: own trace ghost: no usable file {clusters / 'ghost'}.sacct or .csv (see the 'not used' lines; "
                 "`python -m pipelines clusters add ghost FILE` adds one, `clusters remove` drops the trace)\n"}
    assert not (home / "assets").exists()


def test_no_own_trace_no_partition_of_the_own_trace_tables(home: Path) -> None:
    """With no trace of yours (the state after `make figures`), the own-trace tables have no partition, so none shows as
    missing and "Materialize missing" offers none; a public trace is a partition of the replays only."""
    from pipelines.defs.clusters.partitions import register_trace_partitions

    (home / "raw" / "acme").mkdir()
    (home / "raw" / "acme" / "trace_kalos.csv").write_text("job_id\n")
    graph = DEFINITIONS.resolve_asset_graph()
    with dg.instance_for_test() as instance:
        assert register_trace_partitions(instance, home) == (["acme"], [])
        keys = {k.to_user_string(): graph.get(k).partitions_def.get_partition_keys(dynamic_partitions_store=instance)
                for k in graph.materializable_asset_keys if graph.get(k).partitions_def is not None}
    assert {k: v for k, v in keys.items() if "own_cluster" in k} == {
        "own_cluster_jobs": [], "own_cluster_traces": [], "quarantine/own_cluster_jobs_bad_rows": []}
    assert keys["cluster_workload_jobs"] == ["acme"]


def test_what_reads_every_own_trace_follows_without_waiting_for_partitions_never_materialized(home: Path) -> None:
    """own_cluster_summary, own_cluster_report and the trace figures read every own-trace partition: that of a trace of
    yours that could not be read (never materialized) must not hold them back, or a new trace would never reach them. They
    wait one evaluation after an ingest (the one that requests the trace's jobs, a run of another partitions definition), so
    that they follow once the trace's replays are done, in one run; no replay runs here, so they follow at the next."""
    followers = dg.AssetSelection.assets("own_cluster_summary", "figures/own_cluster_report", "figures/traces_job_duration_cdf")
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("trace", ["broken", "itp", "lab"])
        instance.add_dynamic_partitions("own_trace", ["broken", "lab"])
        for key in ("zeus_train_runs", "zeus_power_profiles", "itp_jobs", "elasticflow_jobs", "acme_jobs", "alibaba_groups"):
            instance.report_runless_asset_event(dg.AssetMaterialization(key))
        first = dg.evaluate_automation_conditions(defs=DEFINITIONS, instance=instance, asset_selection=followers)
        for key in ("own_cluster_jobs", "own_cluster_traces"):
            instance.report_runless_asset_event(dg.AssetMaterialization(key, partition="lab"))
        waiting = dg.evaluate_automation_conditions(defs=DEFINITIONS, instance=instance, asset_selection=followers, cursor=first.cursor)
        assert waiting.total_requested == 0
        after = dg.evaluate_automation_conditions(defs=DEFINITIONS, instance=instance, asset_selection=followers, cursor=waiting.cursor)
    assert {k: after.get_num_requested(dg.AssetKey.from_user_string(k)) for k in
            ("own_cluster_summary", "figures/own_cluster_report", "figures/traces_job_duration_cdf")} == {
                "own_cluster_summary": 1, "figures/own_cluster_report": 1, "figures/traces_job_duration_cdf": 1}
