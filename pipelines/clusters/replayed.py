"""One row's replay in one whatif draw, as arrays: its jobs in replay order and each policy's runs.

A draw (``pipelines.clusters.samples``) sums its figures over runs. Building a polars history per
row and draw, and joining it back to its jobs, cost most of a whatif (issue 36). So what no draw
changes is built once per row (``RowJobs``: the jobs' replay order, groups, times, GPUs, job ids,
the groups' mean durations), and a draw on the compiled replay goes from it straight to arrays
(``replay_row``): its workload assignment, each job's runtime_ratio, the kernel's runs, each run's
energy for the whole job and the anchoring. A history replayed another way (the reference engine,
a carbon-aware Zeus, a power-limit-only profile) becomes the same arrays (``from_history``).

The numbers are those of ``simulate.simulate_trace`` and ``anchoring.anchor``, bit for bit: each
value comes from the same floating-point operation on the same operands (runtime_ratio by the
same polars expression over the jobs in the same order; a run's energy the kernel's times the
job's GPUs; the anchoring scale summed by ``bincount`` in history order), and the runs keep
the history's order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from pipelines.clusters import analogues, anchoring, mapping
from pipelines.vocabulary import PolicyName
from pipelines.zeus import fast
from pipelines.zeus.traces import WorkloadTable


@dataclass(frozen=True)
class RowJobs:
    """A row's jobs in replay order: groups sorted, each group's jobs by start time, then job id, then table order."""

    order: np.ndarray  # int64 per job: its row in the row's table
    names: list[str]  # the group names, sorted
    group: np.ndarray  # int64 per job: index into names
    bounds: np.ndarray  # int64: each group's first job, then the job count
    start_s: np.ndarray  # float64 per job, s since 1970
    end_s: np.ndarray  # float64 per job
    num_gpu: np.ndarray  # float64 per job
    job: np.ndarray  # int64 per job: its id as an index into the row's distinct job ids, sorted
    #: ``mapping.group_runtimes`` of the jobs: what a draw's workload assignment cuts (None: from a history).
    runtimes: pl.DataFrame | None = None
    #: ``analogues.group_utilisation`` of the jobs: the groups whose workload their utilisation picks (None: from a history).
    utils: pl.DataFrame | None = None
    #: int64 per group: its partition (``mapping.group_partition``), each replayed alone (``replay_row``); None: one.
    partition: np.ndarray | None = None


@dataclass(frozen=True)
class Runs:
    """One policy's runs of a row, in history order: each run's job (an index into ``RowJobs``), start (s), time (s) and energy
    (J, the whole job)."""

    job: np.ndarray
    start_s: np.ndarray
    time_s: np.ndarray
    energy_j: np.ndarray


@dataclass(frozen=True)
class RowRuns:
    """A row's replay in one draw: its jobs, each job's workload (``dataset``, an index into ``datasets``: those the row's jobs
    play, sorted) and each replayed policy's runs, in the history's policy order."""

    jobs: RowJobs
    datasets: list[str]
    dataset: np.ndarray
    runs: dict[str, Runs]


def _groups(group: pl.Series) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(group names sorted, each job's as an index into them, each group's first job then the count) of jobs sorted by group."""
    names = group.unique().sort()
    codes = group.cast(pl.Enum(names)).to_physical().to_numpy().astype(np.int64)
    bounds = np.append(np.flatnonzero(np.diff(codes, prepend=-1)), codes.size).astype(np.int64)
    return names.to_list(), codes, bounds


def _job_codes(job_id: pl.Series) -> np.ndarray:
    return job_id.cast(pl.Enum(job_id.unique().sort())).to_physical().to_numpy().astype(np.int64)


def row_jobs(jobs: pl.DataFrame, partitions: int = 1) -> RowJobs:
    """``RowJobs`` of a row's jobs (``mapping.own_keyed`` columns: group, job_id, start_time_s, end_time_s, num_gpu), in the
    order ``mapping.finish_own`` sorts them and the replay replays them; the groups in ``partitions`` partitions (the kept
    parse's: ``mapping.group_partition``), each replayed alone, where more than one."""
    ordered = jobs.select("group", "job_id", "start_time_s", "end_time_s", "num_gpu").with_row_index("_row").sort(
        "group", "start_time_s", "job_id", maintain_order=True)
    names, group, bounds = _groups(ordered["group"])
    partition = None if partitions <= 1 else pl.select(mapping.group_partition(pl.lit(pl.Series(names, dtype=pl.String)),
                                                                                 partitions)).to_series().to_numpy().astype(np.int64)
    return RowJobs(ordered["_row"].to_numpy().astype(np.int64), names, group, bounds, ordered["start_time_s"].to_numpy(),
                   ordered["end_time_s"].to_numpy(), ordered["num_gpu"].to_numpy().astype(np.float64), _job_codes(ordered["job_id"]),
                   mapping.group_runtimes(jobs), analogues.group_utilisation(jobs), partition)


@dataclass(frozen=True)
class Drawn:
    """A row's workloads in one draw: the workloads its groups play (``datasets``, sorted), each group's (``group_dataset``,
    an index into them) and the mean runtime (s) of each workload's jobs (``mean_s``, per ``datasets``): what a partition's
    replay needs of the whole row (a job's runtime_ratio is its runtime over its workload's mean, a mean over every group)."""

    datasets: list[str]
    group_dataset: np.ndarray  # int64 per group of RowJobs.names
    mean_s: np.ndarray  # float64 per dataset


def draw_workloads(jobs: pl.DataFrame, prepared: RowJobs, workloads: Sequence[str], shuffle: np.random.Generator | None,
                   by_util: analogues.Analogues | None = None) -> Drawn:
    """A draw's workload assignment of a row (``analogues.group_datasets``: by the groups' utilisation on ``by_util``, else
    ``mapping.assign_by_runtime``, ``shuffle`` as there) and each workload's mean runtime, the mean that
    ``mapping.finish_own``'s runtime_ratio divides by (the same polars expression over the jobs in table order)."""
    assert prepared.runtimes is not None, "row_jobs builds the jobs a draw replays"
    assigned = analogues.group_datasets(prepared.runtimes, prepared.utils, workloads, by_util, shuffle)
    of_group = dict(assigned.iter_rows())
    datasets = sorted(set(of_group.values()))
    group_dataset = np.array([datasets.index(of_group[g]) for g in prepared.names], dtype=np.int64)
    in_table = np.empty(prepared.order.size, dtype=np.int64)
    in_table[prepared.order] = group_dataset[prepared.group]
    runtime = pl.col("end_time_s") - pl.col("start_time_s")
    means = jobs.select("start_time_s", "end_time_s").with_columns(
        pl.Series("dataset", datasets, dtype=pl.String).gather(in_table)).select(runtime.mean().over("dataset"))
    first = np.unique(in_table, return_index=True)[1]  # a job of each workload, by index into datasets
    mean_s = np.asarray(means.to_series().to_numpy()[first], dtype=np.float64)
    return Drawn(datasets, group_dataset, mean_s)


def runtime_ratio(start_s: np.ndarray, end_s: np.ndarray, dataset: np.ndarray, mean_s: np.ndarray) -> np.ndarray:
    """Each job's runtime_ratio (``mapping.finish_own``): its runtime over its workload's mean runtime, the same float64
    operations on the same operands as that polars expression, so the same values bit for bit."""
    return np.asarray((end_s - start_s) / mean_s[dataset], dtype=np.float64)


def group_arrays(names: list[str], bounds: np.ndarray, start_s: np.ndarray, end_s: np.ndarray, drawn: Drawn) -> fast.GroupArrays:
    """``fast.GroupArrays`` of groups ``names`` (each's jobs ``bounds[g]:bounds[g + 1]`` of ``start_s``/``end_s``, in replay
    order) playing ``drawn.group_dataset`` (per group, an index into ``drawn.datasets``)."""
    dataset = np.repeat(drawn.group_dataset, np.diff(bounds))
    return fast.GroupArrays(names, drawn.datasets, drawn.group_dataset, bounds, start_s.copy(), end_s.copy(),
                            runtime_ratio(start_s, end_s, dataset, drawn.mean_s))


def replay_row(jobs: pl.DataFrame, prepared: RowJobs, workloads: Sequence[str], tables: dict[str, WorkloadTable], *, eta: float,
               beta: float, seed: int | None, policies: Sequence[PolicyName], shuffle: np.random.Generator | None,
               anchored: bool, by_util: analogues.Analogues | None = None) -> RowRuns:
    """One draw of a row on the compiled replay: its workloads assigned (``draw_workloads``), runtime_ratio per workload
    (``runtime_ratio``), each policy replayed (``fast.replay``: ``simulate_trace``'s runs; each of ``prepared.partition``'s
    partitions alone, ``replay_partitions``) and, when ``anchored``, each job's runs scaled to its elapsed time
    (``anchoring.anchor``). The assignment and runtime_ratio read every group of the row (a rank of all the groups' mean
    durations, a mean over all the jobs of a workload): they are made here for the whole row, and only the groups'
    replays run by partition.

    ``jobs``: the row's table, of which ``prepared`` is ``row_jobs``; ``tables``: the workload table of every workload
    the row may play, on its GPU."""
    drawn = draw_workloads(jobs, prepared, workloads, shuffle, by_util)
    arrays = group_arrays(prepared.names, prepared.bounds, prepared.start_s, prepared.end_s, drawn)
    done = {policy: replay_partitions(arrays, prepared.partition, tables, eta=eta, beta=beta, seed=seed, policy=policy)
            for policy in policies}
    return row_runs(prepared, drawn, done, anchored)


def row_runs(prepared: RowJobs, drawn: Drawn, done: Mapping[PolicyName, fast.RunArrays], anchored: bool) -> RowRuns:
    """``RowRuns`` of a row's replay: ``done``, each policy's runs of the whole row (one replay's order, as
    ``replay_partitions`` merges them), each run's energy for the whole job; anchored where ``anchored``."""
    runs: dict[str, Runs] = {}
    for policy, ran in done.items():
        job = prepared.bounds[ran.group] + ran.job  # the job-th of its group's jobs, in replay order
        runs[policy] = Runs(job, ran.start_time, ran.time, ran.energy * prepared.num_gpu[job])
    if anchored:
        runs = anchor(runs, prepared)
    return RowRuns(prepared, drawn.datasets, drawn.group_dataset[prepared.group], runs)


def replay_partitions(arrays: fast.GroupArrays, partition: np.ndarray | None, tables: dict[str, WorkloadTable], *, eta: float,
                      beta: float, seed: int | None, policy: PolicyName) -> fast.RunArrays:
    """``fast.replay(arrays, ...)``: with ``partition`` (each group's), each partition's groups replayed alone, one partition
    after another, and their runs merged back into the whole replay's order (groups in order, each group's runs as it ran).

    Invariant: the runs are those of one replay of every group, bit for bit (a test checks it), because a group's replay
    reads only its own jobs, workload, tables and seed (the seed from the group's name, ``reference.group_seed``), never
    another group's."""
    if partition is None:
        return fast.replay(arrays, tables, eta, beta, seed, policy)
    parts = []
    for p in np.unique(partition).tolist():
        groups = np.flatnonzero(partition == p)
        parts.append((groups, fast.replay(_subset(arrays, groups), tables, eta, beta, seed, policy)))
    return merged(parts)


def group_jobs(bounds: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the bounds of groups ``groups`` (indices, ascending) alone, the indices of their jobs in the whole's job arrays)."""
    lengths = bounds[groups + 1] - bounds[groups]
    alone = np.append(0, np.cumsum(lengths)).astype(np.int64)
    return alone, np.repeat(bounds[groups] - alone[:-1], lengths) + np.arange(alone[-1], dtype=np.int64)


def _subset(arrays: fast.GroupArrays, groups: np.ndarray) -> fast.GroupArrays:
    """The groups ``groups`` (indices, ascending) of ``arrays`` alone."""
    bounds, jobs = group_jobs(arrays.bounds, groups)
    return fast.GroupArrays([arrays.names[g] for g in groups.tolist()], arrays.datasets, arrays.dataset[groups], bounds,
                            arrays.start[jobs], arrays.end[jobs], arrays.ratio[jobs])


def merged(parts: Sequence[tuple[np.ndarray, fast.RunArrays]]) -> fast.RunArrays:
    """The runs of each (groups, their replay) as one replay's: each run's group mapped back to the whole's index, the runs
    put in group order by a stable sort (a group's runs keep their order). ``parts`` in ascending partition order, as
    ``replay_partitions`` and the partitions' Dask tasks (``partition_tasks``) give them."""
    group = np.concatenate([groups[runs.group] for groups, runs in parts])
    order = np.argsort(group, kind="stable")

    def field(name: str) -> np.ndarray:
        return np.concatenate([getattr(runs, name) for _, runs in parts])[order]

    return fast.RunArrays(group[order], field("job"), field("start_time"), field("end_time"), field("bs"), field("pl"), field("energy"),
                          field("time"), field("reached"))


def anchor(runs: dict[str, Runs], jobs: RowJobs) -> dict[str, Runs]:
    """``runs`` with each job's energies and times scaled so that its Default time is its elapsed time (``anchoring.anchor``)."""
    if "default" not in runs:
        raise anchoring.AnchoringError("anchoring needs the Default policy's runs")
    scale = anchoring.job_scale(runs["default"].job, runs["default"].time_s, jobs.end_s - jobs.start_s)
    return {p: Runs(r.job, r.start_s, r.time_s * scale[r.job], r.energy_j * scale[r.job]) for p, r in runs.items()}


def from_history(history: pl.DataFrame, jobs: pl.DataFrame) -> RowRuns:
    """A row's history (``simulate_trace``'s columns, of ``jobs``: group, job_id, start and end, num_gpu, dataset) as arrays."""
    keys, index = anchoring.job_index(history, jobs)
    names, group, bounds = _groups(keys["group"])
    prepared = RowJobs(np.arange(keys.height, dtype=np.int64), names, group, bounds, keys["start_time_s"].to_numpy(),
                       keys["end_time_s"].to_numpy(), keys["num_gpu"].to_numpy().astype(np.float64), _job_codes(keys["job_id"]))
    datasets = keys["dataset"].unique().sort().to_list()
    dataset = keys["dataset"].cast(pl.Enum(datasets)).to_physical().to_numpy().astype(np.int64)
    policy = history["policy"]
    start, time, energy = (history[c].to_numpy() for c in ("start_time_s", "time_s", "energy_j"))
    runs = {}
    for name in policy.unique(maintain_order=True).to_list():
        mask = (policy == name).to_numpy()
        runs[name] = Runs(index[mask], start[mask], time[mask], energy[mask])
    return RowRuns(prepared, datasets, dataset, runs)
