"""whatif's draws on a Dask cluster with each draw's replay split into one task per (draw, partition).

A draw (``samples.run_draw``) replays each row's recurring groups by the kept parse's partitions
(``replayed.replay_partitions``); in this process that is one call per partition, one after another. On a Dask runner
(``DaskRunner``) with more than one partition, ``run_draws`` makes each (draw, partition) a task instead: the task
replays only that partition's groups (every row's that the compiled replay runs) and returns their runs; the driver
merges a draw's runs in ascending partition order exactly as ``replay_partitions`` does (``replayed.merged``), so every
figure, interval and the cluster power are those of the in-process run, bit for bit. What is not per partition stays on
the driver, once per draw: the workload assignment drawn from the seed and each workload's mean runtime
(``replayed.draw_workloads``: they read every group of a row), and every figure after the merge (``samples.run_draw``).

A task gets its partition's inputs (each row's groups: names, bounds, start and end times) one of two ways
(``Placement``):

* ``"path"`` (shared path): the driver writes each partition's inputs once to a Parquet file under a new folder of
  ``Placement.folder`` (the data home's ``cache/``, on Slurm a shared file system) and a task reads only its
  partition's file (``read_part``); the folder is removed when the draws end;
* ``"task"`` (task data): each partition's inputs are scattered once to one worker (not broadcast) and passed to its
  tasks, Dask moving them where a task runs;
* ``"auto"``: the driver writes a marker file with a random token into the folder and asks every worker
  (``DaskRunner.workers_read``, ``Client.run``) whether it reads that token there: path where all do, else task data.

Elsewhere (in-process; ``--scheduler auto``, whose local cluster, where it starts one, takes the draws left whole; one
partition; a row the compiled replay does not run: power-limit-only, carbon-aware) the draws run as before, one task per
draw (``samples.run_draws``).
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from pipelines.clusters import replayed, samples
from pipelines.clusters.samples import Plan
from pipelines.home import interrupt
from pipelines.home.atomic import write_parquet_atomic, write_text_atomic
from pipelines.scaleout.runners import DaskRunner, Runner
from pipelines.vocabulary import PolicyName
from pipelines.zeus import fast
from pipelines.zeus.traces import Traces, WorkloadTable

AUTO, PATH, TASK = "auto", "path", "task"
#: How a (draw, partition) task gets its partition's inputs (``--partition-data``).
MODES = (AUTO, PATH, TASK)
#: The folder under ``Placement.folder`` that holds the runs' partition files, one folder per run.
FOLDER = "whatif-partitions"
MARKER = "marker.txt"
_PART_SCHEMA = {"row": pl.Int64, "group": pl.Int64, "name": pl.String, "start_s": pl.Float64, "end_s": pl.Float64}


class PartitionDataError(RuntimeError):
    """A partition's inputs that a task cannot read (a file missing or damaged), or a mode that cannot be used."""


@dataclass(frozen=True)
class Placement:
    """How the partitions' inputs reach the tasks: ``mode`` (``MODES``) and, for ``path``/``auto``, the folder under which
    a run's files are written (None: task data)."""

    mode: str = AUTO
    folder: Path | None = None


@dataclass(frozen=True)
class PartRows:
    """One row's groups in one partition: their indices among the row's groups (``RowJobs.names``, ascending), their names,
    bounds (each group's first job, then the count) and jobs' start and end times (s, replay order)."""

    groups: np.ndarray
    names: list[str]
    bounds: np.ndarray
    start_s: np.ndarray
    end_s: np.ndarray


#: A partition's inputs: its ``PartRows`` by the row's place in the plan (rows without a group there left out).
PartInputs = dict[int, PartRows]


@dataclass(frozen=True)
class PartFile:
    """A partition's inputs written to ``path`` (``write_part``), read by its tasks (``read_part``)."""

    path: str


@dataclass(frozen=True)
class PartTask:
    """One (draw, partition): the draw's seed knob and, by row, its workloads (``replayed.Drawn``) with ``group_dataset``
    of the partition's groups only (``PartRows.groups``' order)."""

    draw: int
    partition: int
    seed: int | None
    drawn: dict[int, replayed.Drawn]


def part_inputs(shared: samples.DrawShared, partitions: int) -> list[PartInputs]:
    """Each partition's inputs (``partitions`` of them, some maybe empty) from the rows' jobs (``shared.rows``)."""
    parts: list[PartInputs] = [{} for _ in range(partitions)]
    for i, jobs in enumerate(shared.rows):
        if jobs is None or jobs.partition is None:
            continue
        for p in range(partitions):
            groups = np.flatnonzero(jobs.partition == p)
            if groups.size:
                bounds, at = replayed.group_jobs(jobs.bounds, groups)
                parts[p][i] = PartRows(groups, [jobs.names[g] for g in groups.tolist()], bounds, jobs.start_s[at], jobs.end_s[at])
    return parts


def write_part(inputs: PartInputs, path: Path) -> None:
    """``inputs`` as one Parquet file (a row per job: its row, group index and name, start and end), atomically."""
    frames = [pl.DataFrame({"row": np.full(r.start_s.size, i, dtype=np.int64), "group": np.repeat(r.groups, np.diff(r.bounds)),
                            "name": np.repeat(np.array(r.names, dtype=object), np.diff(r.bounds)).tolist(), "start_s": r.start_s,
                            "end_s": r.end_s}, schema=_PART_SCHEMA) for i, r in inputs.items()]
    write_parquet_atomic(pl.concat(frames) if frames else pl.DataFrame(schema=_PART_SCHEMA), path)


def read_part(path: str) -> PartInputs:
    """The inputs ``write_part`` wrote to ``path``. ``PartitionDataError`` naming the file where it is missing or unreadable."""
    try:
        table = pl.read_parquet(path, columns=list(_PART_SCHEMA))
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise PartitionDataError(f"{path}: this partition's inputs cannot be read on this worker ({type(exc).__name__}: {exc}); "
                                 "--partition-data task sends them as task data") from exc
    out: PartInputs = {}
    for (i,), rows in table.group_by("row", maintain_order=True):
        group = rows["group"].to_numpy()
        starts = np.flatnonzero(np.diff(group, prepend=-1) != 0)
        out[int(i)] = PartRows(group[starts].astype(np.int64), rows["name"].gather(starts).to_list(),
                               np.append(starts, group.size).astype(np.int64), rows["start_s"].to_numpy(), rows["end_s"].to_numpy())
    return out


def folder_seen(folder: str, token: str) -> bool:
    """Whether this process reads ``token`` in ``folder``'s marker file (run on each worker by ``DaskRunner.workers_read``)."""
    try:
        return (Path(folder) / MARKER).read_text() == token
    except OSError:
        return False


def replay_part(task: PartTask, *, part: PartInputs | PartFile, tables: dict[int, dict[str, WorkloadTable]], eta: float,
                beta: float, policies: Sequence[PolicyName]) -> dict[int, dict[str, fast.RunArrays]]:
    """A (draw, partition) task: each row's groups of the partition replayed alone under each policy (``fast.replay``, as
    ``replayed.replay_partitions`` replays one partition), by row and policy. ``tables``: each row's workload tables."""
    inputs = read_part(part.path) if isinstance(part, PartFile) else part
    out: dict[int, dict[str, fast.RunArrays]] = {}
    for i, rows in inputs.items():
        drawn = task.drawn[i]
        arrays = replayed.group_arrays(rows.names, rows.bounds, rows.start_s, rows.end_s, drawn)
        out[i] = {p: fast.replay(arrays, tables[i], eta, beta, task.seed, p) for p in policies}
    return out


def by_partition(plan: Plan, runner: Runner) -> bool:
    """Whether the draws run as (draw, partition) tasks: a Dask runner, more than one partition, and every row with jobs on
    the compiled replay (``samples.compiled``)."""
    return (isinstance(runner, DaskRunner) and plan.partitions > 1
            and all(samples.compiled(plan, row) for row in plan.rows if row.jobs.height))


def run_draws(plan: Plan, traces: Traces, count: int, base_seed: int, runner: Runner, placement: Placement | None = None, *,
              progress: bool = False) -> tuple[list[dict[str, Any]], str | None]:
    """``samples.run_draws``, by (draw, partition) where ``by_partition``; with a line saying how the partitions reached the
    tasks (None where they did not run so: then exactly ``samples.run_draws``, nothing more done)."""
    placement = placement or Placement()
    plan = replace(plan, engine=samples.engine_for(plan, count)) if plan.engine is None else plan
    if not by_partition(plan, runner):
        return samples.run_draws(plan, traces, count, base_seed, runner, progress=progress), None
    assert isinstance(runner, DaskRunner)
    lean = Traces(traces.train, traces.power)
    shared = samples.shared_by_draws(plan, lean)
    inputs = part_inputs(shared, plan.partitions)
    held = [p for p, part in enumerate(inputs) if part]
    run_folder = _run_folder(placement, runner)
    with contextlib.ExitStack() as stack:
        if run_folder is not None:
            stack.enter_context(interrupt.removed_on_abort(run_folder))
            stack.callback(shutil.rmtree, run_folder, ignore_errors=True)
            for p in held:
                write_part(inputs[p], run_folder / f"part-{p:05d}.parquet")
            parts: list[object] = [PartFile(str(run_folder / f"part-{p:05d}.parquet")) for p in range(len(inputs))]
            how = f"each reading its partition's file under {run_folder.parent} (shared path)"
        else:
            parts = list(inputs)
            how = "each partition's inputs sent once as task data"
        del inputs
        draws = _draws(plan, lean, shared, count, base_seed, runner, parts, held, progress)
    return draws, f"{len(held)} partitions a draw as tasks, {how}"


def _run_folder(placement: Placement, runner: DaskRunner) -> Path | None:
    """A new folder for this run's partition files where they go by path (``Placement``), else None (task data)."""
    if placement.mode not in MODES:
        raise ValueError(f"partition data {placement.mode!r}: one of {', '.join(MODES)}")
    if placement.mode == TASK or (placement.mode == AUTO and placement.folder is None):
        return None
    if placement.folder is None:
        raise PartitionDataError("partition data by path needs a folder the workers read (the data home's cache/)")
    folder = placement.folder / FOLDER / secrets.token_hex(8)
    folder.mkdir(parents=True)
    token = secrets.token_hex(16)
    with interrupt.removed_on_abort(folder):
        write_text_atomic(token, folder / MARKER)
        if placement.mode == PATH or runner.workers_read(folder_seen, str(folder), token):
            return folder
    shutil.rmtree(folder, ignore_errors=True)
    return None


def _draws(plan: Plan, lean: Traces, shared: samples.DrawShared, count: int, base_seed: int, runner: DaskRunner,
           parts: list[object], held: list[int], progress: bool) -> list[dict[str, Any]]:
    """The draws, their partitions as tasks (submitted draw by draw); each draw merged and summed on the driver as soon as its
    partitions are all back, its runs then dropped."""
    rows = {i: jobs for i, jobs in enumerate(shared.rows) if jobs is not None}
    drawn = [{i: replayed.draw_workloads(plan.rows[i].jobs, jobs, plan.rows[i].workloads, samples.draw_shuffle(base_seed, d, i),
                                         plan.rows[i].analogues) for i, jobs in rows.items()} for d in range(count)]
    groups = {p: {i: np.flatnonzero(jobs.partition == p) for i, jobs in rows.items() if jobs.partition is not None} for p in held}
    tasks = [(p, PartTask(d, p, samples.seed_knob(base_seed, d),
                          {i: replace(w, group_dataset=w.group_dataset[groups[p][i]]) for i, w in drawn[d].items() if groups[p][i].size}))
             for d in range(count) for p in held]
    common = {"tables": {i: shared.tables[plan.rows[i].gpu] for i in rows}, "eta": plan.options.eta, "beta": plan.options.beta,
              "policies": samples.POLICIES}
    back: dict[int, dict[int, dict[int, dict[str, fast.RunArrays]]]] = {}
    draws: list[dict[str, Any]] = [{} for _ in range(count)]

    def finish(d: int) -> None:
        got = back.pop(d)
        replays = {}
        for i, jobs in rows.items():
            done = {policy: replayed.merged([(groups[p][i], got[p][i][policy]) for p in held if i in got[p]])
                    for policy in samples.POLICIES}
            replays[i] = replayed.row_runs(jobs, drawn[d][i], done, plan.anchored)
        draws[d] = samples.run_draw(d, plan=plan, traces=lean, base_seed=base_seed, shared=shared, ran=replays)

    bar = _bar(len(tasks)) if progress else None

    def on_result(k: int, result: dict[int, dict[str, fast.RunArrays]]) -> None:
        d, p = tasks[k][1].draw, tasks[k][0]
        back.setdefault(d, {})[p] = result
        if len(back[d]) == len(held):
            finish(d)
        if bar is not None:
            bar.update(1)

    try:
        # a worker's runs wait in its memory until the driver takes them: as many tasks ahead as keep every worker busy
        # while the driver merges a draw (a draw's partitions, plus one a worker)
        runner.map_parts(replay_part, tasks, parts, common, on_result, window=len(held) + runner.workers)
    finally:
        if bar is not None:
            bar.close()
    return draws


def _bar(total: int) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, unit="task", desc="partitions", dynamic_ncols=True)
