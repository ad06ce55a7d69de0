"""Replay of recurring-job groups from a cluster trace (the published ``simulate_one_alibaba_group``).

A group table has one row per job (contract ``pipelines.contracts.zeus.ZeusGroups``): group,
start_time, end_time (s), dataset (one of the six Zeus workloads; one per group) and
runtime_ratio (this job's runtime over the mean runtime of its dataset's jobs). Groups replay in
sorted order, each with its own optimizer state and seed adler32(group id) (``group_seed``; a
sweep's seed knob derives a different per-group seed from it, see there); the jobs of a group in
start_time order, ties in table order.

One group replays as ``pipelines.zeus.reference.replay_group`` specifies; ``replay_groups`` runs the
reference or the compiled replay (``pipelines.zeus.fast``) over a whole table, with identical results.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import polars as pl
from tqdm import tqdm

from pipelines.vocabulary import DEFAULT_BETA, DEFAULT_ETA, WORKLOAD_BY_DATASET, Job, PolicyName
from pipelines.zeus import fast
from pipelines.zeus.reference import group_seed, iter_group_values, iter_groups, replay_group
from pipelines.zeus.traces import TraceError, Traces, WorkloadTable, build_table, workload_columns

#: The columns a group table must have, and their types (the contract ``ZeusGroups`` validates the values).
GROUP_SCHEMA = pl.Schema({"group": pl.String, "start_time": pl.Float64, "end_time": pl.Float64, "dataset": pl.String,
                          "runtime_ratio": pl.Float64})
#: The reported runs of a group replay, in replay order; ``bs``, ``pl`` (power limit, W), ``energy`` (J), ``time``
#: (s) and ``reached`` keep the names of the artifact's output. ``job`` indexes the group's trace jobs by start.
RUN_SCHEMA = pl.Schema({"group": pl.String, "job": pl.Int64, "start_time": pl.Float64, "end_time": pl.Float64, "bs": pl.Int64,
                        "pl": pl.Int64, "energy": pl.Float64, "time": pl.Float64, "reached": pl.Boolean})


class GroupTableError(ValueError):
    """A group table that cannot be replayed."""


def group_job_spec(traces: Traces, gpu: str, dataset: str) -> Job:
    """The artifact's job for ``dataset`` on ``gpu``: b0 = min(default, largest batch size profiled)."""
    defaults = WORKLOAD_BY_DATASET.get(dataset)
    if defaults is None:
        raise GroupTableError(f"unknown dataset {dataset!r}; expected one of {', '.join(WORKLOAD_BY_DATASET)}")
    sizes = [bs for (ds, _, _), rows in workload_columns(traces, gpu).items() if ds == dataset for bs in rows["batch_size"]]
    if not sizes:
        raise TraceError(f"power trace of {gpu!r} has no rows for dataset {dataset!r}")
    return replace(defaults, default_bs=min(defaults.default_bs, max(sizes)))


def group_frame(groups: pl.DataFrame) -> pl.DataFrame:
    """``groups``' columns of ``GROUP_SCHEMA``, cast (numbers to float); ``GroupTableError`` for a missing column or an empty table."""
    missing = [c for c in GROUP_SCHEMA if c not in groups.columns]
    if missing:
        raise GroupTableError(f"group table: column {missing[0]!r} is missing (has {', '.join(groups.columns)})")
    if groups.height == 0:
        raise GroupTableError("group table: no jobs")
    return groups.select([pl.col(c).cast(t) for c, t in GROUP_SCHEMA.items()])


def workload_tables(groups: pl.DataFrame, traces: Traces, gpu: str) -> dict[str, WorkloadTable]:
    """The lookup table of each dataset of ``groups`` (conformed) on ``gpu``, in dataset order: the artifact's job specs."""
    return {ds: build_table(traces, gpu, group_job_spec(traces, gpu, ds)) for ds in sorted(groups["dataset"].unique().to_list())}


def replay_groups(
    groups: pl.DataFrame,
    traces: Traces,
    gpu: str,
    eta: float = DEFAULT_ETA,
    beta: float = DEFAULT_BETA,
    policy: PolicyName = "zeus",
    progress: bool = False,
    seed: int | None = None,
    desc: str | None = None,
    engine: str | None = None,
    job_eta: np.ndarray | None = None,
) -> pl.DataFrame:
    """Replay every group of ``groups`` on ``gpu``; one row per reported run.

    ``groups`` has the columns of ``GROUP_SCHEMA`` (extra ones are ignored) and satisfies the group
    contract (``pipelines.contracts.zeus.ZeusGroups``; ``pipelines.ingest.simulator_inputs.conform_groups``
    checks a table from a file): every value known, end not before start, runtime_ratio > 0, one dataset per group.

    ``seed``: None replays each group with the artifact's seed; an int is the seed knob of a sweep
    (``group_seed(group, seed)`` per group). ``progress`` shows a bar of groups on stderr, labelled ``desc``.
    ``engine``: ``fast`` (compiled, ``pipelines.zeus.fast``), ``reference`` (the Python loop below)
    or ``auto``; None reads ``$GPU_ENERGY_REPLAY``, else ``auto`` (see ``fast.resolve_engine``).
    Both give the same table, bit for bit, and raise the same errors. ``job_eta``: an energy weight per
    row of ``groups`` that picks each job's power limit (a carbon-aware Zeus, ``reference.replay_group``;
    the reference engine only).

    Columns (``RUN_SCHEMA``): group, job (index of the trace job in its group, by start),
    start_time/end_time (s, of this run: a retry starts when the run before it ended), bs, pl (W),
    energy (J) and time (s) scaled by runtime_ratio, reached. Rows are in replay order.
    """
    result_schema = RUN_SCHEMA
    groups = group_frame(groups)
    tables = workload_tables(groups, traces, gpu)
    if job_eta is None and fast.resolve_engine(engine, groups.height) == "fast":
        arrays = fast.group_arrays(groups)
        return fast.runs_frame(arrays, fast.replay(arrays, tables, eta, beta, seed, policy, progress, desc), result_schema)
    n_groups = groups["group"].n_unique()
    columns: dict[str, list] = {c: [] for c in result_schema}
    etas = iter_group_values(groups, job_eta) if job_eta is not None else None
    for group, dataset, start, end, ratio in tqdm(iter_groups(groups), total=n_groups, disable=not progress, unit="group", desc=desc):
        runs = replay_group(tables[dataset], start, end, ratio, eta, beta, group_seed(group, seed), policy,
                            None if etas is None else next(etas))
        columns["group"].extend([group] * len(runs))
        if runs:
            for name, values in zip(list(result_schema)[1:], zip(*runs, strict=True), strict=True):
                columns[name].extend(values)
    return pl.DataFrame(columns, schema=result_schema)
