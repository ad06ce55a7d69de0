"""The partitions as Dask tasks (issue 56 item 2): each draw's replay one task per (draw, partition) on a LocalCluster, the
partitions' inputs read from files under a shared path or sent as task data, and the report and cluster power those of
the in-process run; the cluster power of the whole is the sum of the partitions' power, bin by bin."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from pipelines.clusters import kept, partition_tasks, power, replayed, samples, whatif
from pipelines.clusters.profiles import Profiles, profiles_of
from pipelines.ingest.simulator_inputs import read_trace_dir
from pipelines.scaleout.runners import DaskRunner, Runner
from pipelines.zeus import fast
from pipelines.zeus.groups import group_job_spec
from pipelines.zeus.traces import build_table
from tests.support.sacct_export import write_export

TZ = "Europe/Berlin"
PARTITIONS = 5
SAMPLES = 2
pytestmark = pytest.mark.skipif(not fast.available(), reason="the compiled replay (numba) is not installed")


@pytest.fixture(scope="module")
def ready(tmp_path_factory: pytest.TempPathFactory, mirror: Path) -> tuple[whatif.Replayable, Profiles]:
    """A small export (600 allocations) planned for 2 draws, its groups in ``PARTITIONS`` partitions, on the compiled replay."""
    path = tmp_path_factory.mktemp("partition-tasks") / "lab.sacct"
    write_export(path, 600, seed=5, timezone=TZ)
    how = kept.reading(whatif.trace_name_for(path), "sacct", TZ, None, "|", whatif.REPORT_COLUMNS, None)
    result, _ = kept.read(path, how, source_file=str(path), root=None)
    profiles = profiles_of(read_trace_dir(mirror / "zeus"))
    prepared = whatif.replayable(result, profiles, whatif.Options(samples=SAMPLES, timezone_source="given"))
    return replace(prepared, plan=replace(prepared.plan, engine="fast", partitions=PARTITIONS)), profiles


@pytest.fixture(scope="module")
def runner() -> Iterator[DaskRunner]:
    """A LocalCluster of 2 workers in this process (threads: the file system and a monkeypatch are this process's)."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, Client(cluster) as client:
        yield DaskRunner(client, "test cluster")


def _report(ready: tuple[whatif.Replayable, Profiles], runner: Runner | None = None,
            placement: partition_tasks.Placement | None = None) -> tuple[str, str]:
    """(the report with draw 0's cluster power as JSON text, its runner line aside; the runner line)."""
    report, cluster_power = whatif.run(ready[0], ready[1], runner=runner, keep_power=True, placement=placement)
    assert cluster_power.height > 0
    return json.dumps({**report, "runner": "", "power": cluster_power.to_dicts()}, sort_keys=True, default=str), report["runner"]


@pytest.fixture(scope="module")
def in_process(ready: tuple[whatif.Replayable, Profiles]) -> str:
    report, line = _report(ready)
    assert "partitions" not in line  # in this process: one draw after another, as before
    return report


def _parts_folder(home: Path) -> Path:
    return home / partition_tasks.FOLDER


def test_task_data_gives_the_in_process_report_and_power(ready, runner: DaskRunner, in_process: str, tmp_path: Path) -> None:
    report, line = _report(ready, runner, partition_tasks.Placement(partition_tasks.TASK, tmp_path))
    assert report == in_process
    assert f"{PARTITIONS} partitions a draw as tasks" in line and "task data" in line
    assert not _parts_folder(tmp_path).exists()  # nothing written


def test_shared_path_gives_the_in_process_report_and_power(ready, runner: DaskRunner, in_process: str, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Each task reads its own partition's file, which exists under the folder while the draws run; the run's folder is
    removed after them."""
    log = tmp_path / "read.jsonl"  # the task is serialized to the worker (by value: a local function), so it logs to a file
    real = partition_tasks.replay_part

    def recorded(task: partition_tasks.PartTask, **kwargs: Any) -> Any:
        part = kwargs["part"]
        with log.open("a") as out:
            out.write(json.dumps([task.draw, task.partition, getattr(part, "path", None), Path(getattr(part, "path", "")).is_file()]) + "\n")
        return real(task, **kwargs)

    monkeypatch.setattr(partition_tasks, "replay_part", recorded)
    report, line = _report(ready, runner, partition_tasks.Placement(partition_tasks.PATH, tmp_path))
    read = [tuple(json.loads(r)) for r in log.read_text().splitlines()]
    assert report == in_process
    assert "shared path" in line and str(_parts_folder(tmp_path)) in line
    assert sorted((d, p) for d, p, _, _ in read) == [(d, p) for d in range(SAMPLES) for p in range(PARTITIONS)]
    for _, p, path, existed in read:
        assert existed and isinstance(path, str) and Path(path).name == f"part-{p:05d}.parquet" and Path(path).parent.parent == _parts_folder(tmp_path)
    assert list(_parts_folder(tmp_path).iterdir()) == []


def test_auto_reads_by_path_where_the_workers_see_the_folder(ready, runner: DaskRunner, in_process: str, tmp_path: Path) -> None:
    report, line = _report(ready, runner, partition_tasks.Placement(partition_tasks.AUTO, tmp_path))
    assert report == in_process and "shared path" in line


def test_auto_falls_back_to_task_data_where_the_marker_differs(ready, runner: DaskRunner, in_process: str, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The workers read another token than the driver's (another file system behind the same path): task data."""
    real = partition_tasks.write_text_atomic
    monkeypatch.setattr(partition_tasks, "write_text_atomic", lambda text, target: real(text + "-elsewhere", target))
    report, line = _report(ready, runner, partition_tasks.Placement(partition_tasks.AUTO, tmp_path))
    assert report == in_process and "task data" in line
    assert list(_parts_folder(tmp_path).iterdir()) == []


def test_a_missing_partition_file_fails_naming_it(ready, runner: DaskRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = partition_tasks.write_part

    def lost(inputs: partition_tasks.PartInputs, path: Path) -> None:
        real(inputs, path)
        if path.name == "part-00002.parquet":
            path.unlink()

    monkeypatch.setattr(partition_tasks, "write_part", lost)
    with pytest.raises(partition_tasks.PartitionDataError, match=r"part-00002\.parquet: this partition's inputs cannot be read"):
        _report(ready, runner, partition_tasks.Placement(partition_tasks.PATH, tmp_path))
    assert list(_parts_folder(tmp_path).iterdir()) == []  # removed on the failure too


def test_the_marker_is_read_as_written(tmp_path: Path) -> None:
    (tmp_path / partition_tasks.MARKER).write_text("abc")
    assert partition_tasks.folder_seen(str(tmp_path), "abc")
    assert not partition_tasks.folder_seen(str(tmp_path), "abd")
    assert not partition_tasks.folder_seen(str(tmp_path / "absent"), "abc")


def test_one_partition_or_in_process_runs_the_draws_whole(ready, runner: DaskRunner, in_process: str) -> None:
    """One partition: the draws are the tasks, as before (the runner line says nothing of partitions)."""
    one = (replace(ready[0], plan=replace(ready[0].plan, partitions=1)), ready[1])
    report, line = _report(one, runner, partition_tasks.Placement(partition_tasks.TASK))
    assert report == in_process and "partitions" not in line


def test_the_cluster_power_is_the_sum_of_the_partitions_power_bin_by_bin(ready) -> None:
    """The invariant ``samples._power`` states: each job's runs lie in one partition, so the power of all the runs is the
    sum over partitions of each partition's runs' power, bin by bin. The sums differ from the whole's in float order
    (each series accumulates its own runs' rates), hence a tolerance of 1e-9 of the peak."""
    prepared, profiles = ready
    row = max(prepared.plan.rows, key=lambda r: r.jobs.height)
    jobs = replayed.row_jobs(row.jobs, PARTITIONS)
    assert jobs.partition is not None
    tables = {w: build_table(profiles.traces, row.gpu, group_job_spec(profiles.traces, row.gpu, w)) for w in row.workloads}
    runs = replayed.replay_row(row.jobs, jobs, row.workloads, tables, eta=0.5, beta=2.0, seed=None, policies=samples.POLICIES,
                               shuffle=None, anchored=True, by_util=row.analogues)

    def bins(keep: np.ndarray | None) -> pl.DataFrame:
        keys, key_runs = [], []
        for policy, r in runs.runs.items():
            mask = np.ones(r.job.size, dtype=bool) if keep is None else keep[r.job]
            if mask.any():
                start = r.start_s[mask]
                keys.append(("t", row.gpu, policy))
                key_runs.append(power.KeyRuns(start, start + r.time_s[mask], r.energy_j[mask], jobs.num_gpu[r.job[mask]]))
        return power.key_power_bins(keys, key_runs).select("policy", "bin_start_s", "mean_power_w", "gpus_in_use")

    of_job = jobs.partition[jobs.group]
    parts = [bins(of_job == p) for p in range(PARTITIONS)]
    assert all(p.height for p in parts)
    summed = pl.concat(parts).group_by("policy", "bin_start_s").agg(pl.col("mean_power_w").sum(), pl.col("gpus_in_use").sum())
    whole = bins(None)
    joined = whole.join(summed, on=["policy", "bin_start_s"], how="full", coalesce=True, suffix="_parts").fill_null(0.0)
    assert joined.height == whole.height  # no bin of a partition outside the whole's span
    peak = float(whole["mean_power_w"].max())  # type: ignore[arg-type]
    assert peak > 0
    assert np.allclose(joined["mean_power_w_parts"], joined["mean_power_w"], rtol=0, atol=1e-9 * peak)
    assert np.allclose(joined["gpus_in_use_parts"], joined["gpus_in_use"], rtol=0, atol=1e-9 * float(whole["gpus_in_use"].max()))  # type: ignore[arg-type]
    # the partitions are not trivial: no one of them holds the peak bin's power alone
    assert max(float(p["mean_power_w"].max()) for p in parts) < peak  # type: ignore[arg-type]
