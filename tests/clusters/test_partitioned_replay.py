"""Replays by partition (issue 56 item 2): each partition of a row's recurring groups replayed alone, the runs merged back,
the same runs bit for bit as one replay of the whole row, and so the same report."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from pipelines.clusters import kept, mapping, replayed, samples, whatif
from pipelines.clusters.profiles import Profiles, profiles_of
from pipelines.home import cache
from pipelines.ingest.own_cluster import OwnTraceResult
from pipelines.ingest.simulator_inputs import read_trace_dir
from pipelines.scaleout.runners import Runner
from pipelines.scaleout.schedulers import connect
from pipelines.zeus import fast
from pipelines.zeus.groups import group_job_spec
from pipelines.zeus.traces import build_table
from tests.support.sacct_export import write_export

TZ = "Europe/Berlin"
#: The plan made ready (its engine the compiled replay), the profiles, the read export.
Ready = tuple[whatif.Replayable, Profiles, OwnTraceResult]
pytestmark = pytest.mark.skipif(not fast.available(), reason="the compiled replay (numba) is not installed")


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("partitioned") / "lab.sacct"
    write_export(path, 1500, seed=5, timezone=TZ)
    return path


@pytest.fixture(scope="module")
def ready(export: Path, mirror: Path) -> Ready:
    """The export read and planned (3 draws, on the compiled replay whatever the size), with the published profiles."""
    how = kept.reading(whatif.trace_name_for(export), "sacct", TZ, None, "|", whatif.REPORT_COLUMNS, None)
    result, _ = kept.read(export, how, source_file=str(export), root=None)
    profiles = profiles_of(read_trace_dir(mirror / "zeus"))
    prepared = whatif.replayable(result, profiles, whatif.Options(samples=3, timezone_source="given"))
    assert prepared.plan.partitions == 1  # 1,500 allocations: one partition by default (kept.partitions_for)
    return replace(prepared, plan=replace(prepared.plan, engine="fast")), profiles, result


def _runs(row: samples.Row, jobs: replayed.RowJobs, profiles: Profiles, draw: int) -> replayed.RowRuns:
    tables = {w: build_table(profiles.traces, row.gpu, group_job_spec(profiles.traces, row.gpu, w)) for w in row.workloads}
    shuffle = None if draw == 0 else np.random.default_rng(np.random.SeedSequence([0, draw, 0, 1]))
    return replayed.replay_row(row.jobs, jobs, row.workloads, tables, eta=0.5, beta=2.0, seed=samples.seed_knob(0, draw),
                               policies=samples.POLICIES, shuffle=shuffle, anchored=True, by_util=row.analogues)


@pytest.mark.parametrize("partitions", [2, 3, 7])
@pytest.mark.parametrize("draw", [0, 2])
def test_each_partition_replayed_alone_gives_the_whole_rows_runs_bit_for_bit(ready: Ready, partitions: int, draw: int,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    prepared, profiles, _ = ready
    row = max(prepared.plan.rows, key=lambda r: r.jobs.height)
    whole = _runs(row, replayed.row_jobs(row.jobs), profiles, draw)
    split_jobs = replayed.row_jobs(row.jobs, partitions)
    assert split_jobs.partition is not None and set(split_jobs.partition.tolist()) == set(range(partitions))
    sizes: list[int] = []
    real = fast.replay

    def counted(arrays: fast.GroupArrays, *args: Any, **kwargs: Any) -> fast.RunArrays:
        sizes.append(len(arrays.names))
        return real(arrays, *args, **kwargs)

    monkeypatch.setattr(fast, "replay", counted)
    split = _runs(row, split_jobs, profiles, draw)
    # each partition replayed alone: one replay per partition and policy, each of that partition's groups only
    per_partition = np.bincount(split_jobs.partition, minlength=partitions).tolist()
    assert sizes == per_partition * len(samples.POLICIES)
    assert sum(per_partition) == len(whole.jobs.names) > 3 * partitions
    assert split.datasets == whole.datasets and np.array_equal(split.dataset, whole.dataset)
    assert list(split.runs) == list(whole.runs)
    for policy, runs in whole.runs.items():
        for name in ("job", "start_s", "time_s", "energy_j"):
            mine, theirs = getattr(split.runs[policy], name), getattr(runs, name)
            assert mine.dtype == theirs.dtype and mine.tobytes() == theirs.tobytes(), (policy, name)


def test_the_replays_partitions_are_the_kept_parses(ready: Ready, export: Path, tmp_path: Path) -> None:
    """A group's replay partition is the partition its rows are kept in (``kept.partition``)."""
    prepared, _, result = ready
    how = kept.reading(whatif.trace_name_for(export), "sacct", TZ, None, "|", whatif.REPORT_COLUMNS, None)
    kept.read(export, how, source_file=str(export), root=tmp_path, partitions=4)
    (folder,) = (tmp_path / "whatif").iterdir()
    entry = cache.load(folder)
    assert entry is not None
    kept_groups: dict[str, int] = {}
    for index in range(4):
        rows = kept.partition(entry, index)
        for name in rows.select(mapping.own_group(rows)).to_series().unique().to_list():
            assert kept_groups.setdefault(name, index) == index
    checked = 0
    for row in prepared.plan.rows:
        jobs = replayed.row_jobs(row.jobs, 4)
        assert jobs.partition is not None
        for name, index in zip(jobs.names, jobs.partition.tolist(), strict=True):
            assert kept_groups[name] == index
            checked += 1
    assert checked > 50


def _report(prepared: whatif.Replayable, profiles: Profiles, partitions: int, runner: Runner | None = None) -> str:
    report, power = whatif.run(replace(prepared, plan=replace(prepared.plan, partitions=partitions)), profiles, runner=runner,
                               keep_power=True)
    return json.dumps({**report, "runner": "", "power": power.to_dicts()}, sort_keys=True, default=str)


def test_the_report_and_cluster_power_of_partitions_are_the_whole_rows(ready: Ready) -> None:
    """Item 4 on a small export: every figure, interval, top group and draw 0's cluster power, with the groups replayed in 5
    partitions, equal the whole replay's (the JSON compared as text)."""
    prepared, profiles, _ = ready
    whole = _report(prepared, profiles, 1)
    assert _report(prepared, profiles, 5) == whole
    assert json.loads(whole)["power"] and json.loads(whole)["top_groups"]


@pytest.mark.slow
def test_partitions_on_a_local_cluster_give_the_whole_rows_report_in_process(ready: Ready) -> None:
    """The draws, each replaying 5 partitions, on a LocalCluster's worker (the plan sent as task data): the in-process
    report of the whole replay, but the runner line."""
    prepared, profiles, _ = ready
    whole = _report(prepared, profiles, 1)
    with connect("local", workers=1) as runner:
        assert _report(prepared, profiles, 5, runner) == whole


def test_the_partition_of_a_group_is_its_names_hash() -> None:
    """``mapping.group_partition``: the group's name hashed (polars, seed 0) mod the count; the same for a column as for
    the names alone, and every partition index in range."""
    names = pl.Series("group", [f"u{i}/job{i % 7}/1gpu" for i in range(200)])
    by_expr = pl.select(mapping.group_partition(pl.lit(names), 6)).to_series().to_list()
    by_hash = [int(h % 6) for h in names.hash(seed=0).to_list()]
    assert by_expr == by_hash and set(by_expr) == set(range(6))
