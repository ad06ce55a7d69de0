"""The knob grid at cluster scale: every trace replayed on every GPU for every (eta, beta, seed), per policy.

A *replay* is one whole trace (every recurring group, ``simulate_trace``) on one GPU under one
policy; the grid's table (``ZeusKnobGrid``) has one row per (trace, gpu, eta, beta, seed, policy)
with cluster-wide energy and time and the saving vs Default at the same (trace, gpu, seed).

What a replay depends on (so each distinct replay runs once, and its row is repeated for the
knob values it does not read; the table is exactly what a replay per row would give, which
``tests/clusters/test_sweep.py`` checks):

* Zeus: eta, beta and seed;
* Grid Search: eta (which configuration is cheapest) and seed; it never stops a run early, so
  not beta;
* Default: the seed only: b0 at the maximum limit, no early stopping, and the eta-weighted cost
  only decides among runs that all have that one configuration.

The seed knob gives each group the seed ``group_seed(group, seed)`` (numpy ``SeedSequence``
over the artifact's adler32(group) and the knob): distinct knob values are distinct streams, and
none is the published replay's seeding. Every replay is a pure function of its inputs; totals
are summed with ``math.fsum`` (exactly rounded, so independent of summation order) and the table
is sorted, so the result is bit-identical for any scheduler, worker count or completion order.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import cast

import polars as pl

from pipelines.clusters.simulate import trace_totals, trace_totals_batch
from pipelines.contracts.sweep import ZeusKnobGrid
from pipelines.home.outputs import OutputKind
from pipelines.home.paths import table_files
from pipelines.scaleout.runners import Runner, fan_out
from pipelines.vocabulary import DEFAULT_BETA, DEFAULT_ETA, PUBLISHED_GPUS, REPLAYED_POLICIES, PolicyName
from pipelines.zeus import fast
from pipelines.zeus.errors import SimulationError
from pipelines.zeus.traces import Traces, from_frames

#: Knobs each policy's replay reads (see the module docstring).
POLICY_KNOBS: dict[PolicyName, tuple[str, ...]] = {"zeus": ("eta", "beta"), "grid-search": ("eta",), "default": ()}
#: Columns of cluster_workload_jobs a replay needs (what is sent to the workers).
JOB_COLUMNS: tuple[str, ...] = (
    "trace", "cluster", "group", "job_id", "start_time_s", "end_time_s", "num_gpu", "dataset", "runtime_ratio",
)
KEY: tuple[str, ...] = ("trace", "gpu", "eta", "beta", "seed", "policy")
#: What ``sweep --output`` writes: a Parquet file of the grid's table (an earlier one may be replaced, nothing else).
TABLE = OutputKind.parquet_with_columns("sweep table (Parquet with the sweep's columns)", ZeusKnobGrid.column_names())
#: Values passed for the knobs a policy does not read (they change none of its runs).
_UNREAD_ETA, _UNREAD_BETA = DEFAULT_ETA, DEFAULT_BETA


class SweepError(ValueError):
    """A grid that cannot be swept (unknown GPU, a trace with no jobs, no Default to compare with)."""


@dataclass(frozen=True)
class Grid:
    """The knob values of a sweep; ``traces`` empty means every trace with jobs."""

    etas: tuple[float, ...]
    betas: tuple[float, ...]
    seeds: tuple[int, ...]
    gpus: tuple[str, ...] = PUBLISHED_GPUS
    traces: tuple[str, ...] = ()
    policies: tuple[PolicyName, ...] = REPLAYED_POLICIES

    def __post_init__(self) -> None:
        problems = [f"eta {e} is not in [0, 1]" for e in self.etas if not 0 <= e <= 1]
        problems += [f"beta {b} is not >= 1" for b in self.betas if not b >= 1]
        problems += [f"seed {s} is negative" for s in self.seeds if s < 0]
        problems += [f"unknown policy {p!r} (known: {', '.join(REPLAYED_POLICIES)})" for p in self.policies if p not in REPLAYED_POLICIES]
        if "default" not in self.policies:
            problems.append("the policies must include default (savings are relative to it)")
        for name in ("etas", "betas", "seeds", "gpus", "policies"):
            values = getattr(self, name)
            if not values:
                problems.append(f"no {name}")
            elif len(set(values)) != len(values):
                problems.append(f"{name} repeat a value: {values}")
        if problems:
            raise SweepError("; ".join(problems))

    @property
    def points(self) -> int:
        """Rows per trace: gpus x etas x betas x seeds x policies."""
        return len(self.gpus) * len(self.etas) * len(self.betas) * len(self.seeds) * len(self.policies)


#: ``zeus_knob_grid``'s grid (what ``make figures`` runs): 5 etas x beta 2 x 4 GPUs x 3 seeds, Zeus and Default
#: (what the figure compares; add grid-search with ``--policies``).
DEFAULT_GRID = Grid(etas=(0.0, 0.25, 0.5, 0.75, 1.0), betas=(2.0,), seeds=(1, 2, 3), policies=("zeus", "default"))
#: The paper's grid: eta 0..1 step 0.1 x beta {1.5, 2, 3, 5} x 4 GPUs x seeds 1-5, Zeus, Default and Grid Search.
PAPER_GRID = Grid(etas=tuple(i / 10 for i in range(11)), betas=(1.5, 2.0, 3.0, 5.0), seeds=(1, 2, 3, 4, 5))
GRIDS: dict[str, Grid] = {"default": DEFAULT_GRID, "paper": PAPER_GRID}


@dataclass(frozen=True, order=True)
class Replay:
    """One replay: a trace on a GPU under a policy; eta/beta None where the policy does not read them."""

    trace: str
    gpu: str
    policy: PolicyName
    seed: int
    eta: float | None = field(default=None)
    beta: float | None = field(default=None)


def replays(grid: Grid, traces: tuple[str, ...]) -> list[Replay]:
    """The distinct replays of ``grid`` over ``traces``, Zeus first (the longest), then in a fixed order."""
    wanted: set[Replay] = set()
    for trace in traces:
        for gpu in grid.gpus:
            for policy in grid.policies:
                knobs = POLICY_KNOBS[policy]
                for seed in grid.seeds:
                    for eta in grid.etas if "eta" in knobs else (None,):
                        for beta in grid.betas if "beta" in knobs else (None,):
                            wanted.add(Replay(trace, gpu, policy, seed, eta, beta))
    order = {p: i for i, p in enumerate(("zeus", "grid-search", "default"))}
    return sorted(wanted, key=lambda r: (order[r.policy], r.trace, r.gpu, r.seed, r.eta or 0.0, r.beta or 0.0))


def replay_totals(task: Replay, jobs: dict[str, pl.DataFrame], traces: Traces) -> dict[str, object]:
    """Replay ``task`` (runs on a worker): the trace's jobs, the runs reported, energy (J) and time (s), exactly summed.

    Where the published simulator raises (e.g. Zeus pruning every batch size of a group), the
    totals are null and ``error`` names the group's failure.
    """
    frame = jobs[task.trace]
    try:
        # A sweep replays many times: the compiled replay pays for loading its code on any trace size.
        totals = trace_totals(frame, traces, task.gpu, task.policy, eta=_eta(task), beta=_beta(task), seed=task.seed, engine=fast.batch_engine())
    except SimulationError as exc:
        return _row(task, frame.height, None, str(exc))
    return _row(task, frame.height, totals, None)


def _eta(task: Replay) -> float:
    return task.eta if task.eta is not None else _UNREAD_ETA


def _beta(task: Replay) -> float:
    return task.beta if task.beta is not None else _UNREAD_BETA


def _row(task: Replay, jobs: int, totals: tuple[int, float, float] | None, error: str | None) -> dict[str, object]:
    """One replay's row of totals: runs, energy_j and time_s null where it failed (``error``)."""
    runs, energy, time = totals if totals is not None else (None, None, None)
    return {
        "trace": task.trace, "gpu": task.gpu, "policy": task.policy, "seed": task.seed, "eta": task.eta, "beta": task.beta,
        "jobs": jobs, "runs": runs, "energy_j": energy, "time_s": time, "error": error,
    }  # fmt: skip


@dataclass(frozen=True)
class Batch:
    """Replays of one trace on one GPU under one policy, run together: one task of a sweep."""

    replays: tuple[Replay, ...]


#: Seconds of compiled replay per trace job and replay (``fast.replay_totals``, 2 cores, bench/bench_sweep.py): what
#: a batch's size is estimated from, so that a task on a worker carries about ``TASK_SECONDS`` of work, not milliseconds.
SECONDS_PER_JOB_REPLAY = 1.5e-7
TASK_SECONDS = 1.0
#: At least this many tasks per worker thread, where the grid has enough replays: a worker that finishes early takes more.
TASKS_PER_WORKER = 4


def batches(tasks: list[Replay], jobs: dict[str, int], workers: int) -> list[Batch]:
    """``tasks`` as batches of one (trace, gpu, policy) each, in ``tasks``' order (``jobs``: each trace's job count).

    A batch holds the replays of about ``TASK_SECONDS`` of work (from ``SECONDS_PER_JOB_REPLAY``), and fewer where
    the grid would otherwise give fewer than ``TASKS_PER_WORKER`` tasks per worker thread; a (trace, gpu, policy)
    is split into batches of equal size (within one).
    """
    runs: dict[tuple[str, str, str], list[Replay]] = {}
    for task in tasks:
        runs.setdefault((task.trace, task.gpu, task.policy), []).append(task)
    balanced = math.ceil(len(tasks) / (TASKS_PER_WORKER * max(1, workers)))
    out: list[Batch] = []
    for (trace, _, _), replays in runs.items():
        worth = math.ceil(TASK_SECONDS / (SECONDS_PER_JOB_REPLAY * max(1, jobs[trace])))
        parts = math.ceil(len(replays) / max(1, min(balanced, worth)))
        size, extra = divmod(len(replays), parts)
        at = 0
        for part in range(parts):
            n = size + (part < extra)
            out.append(Batch(tuple(replays[at : at + n])))
            at += n
    return out


def batch_totals(batch: Batch, jobs: dict[str, pl.DataFrame], traces: Traces) -> list[dict[str, object]]:
    """``replay_totals`` of each replay of ``batch`` (runs on a worker), in one pass over the trace's jobs where the
    compiled replay runs; a replay the batch stopped at is replayed alone (its error, or its totals)."""
    first = batch.replays[0]
    frame = jobs[first.trace]
    found: list[fast.Totals] = [None] * len(batch.replays)
    if fast.batch_engine() == "fast":
        knobs = [fast.Knobs(_eta(task), _beta(task), task.seed) for task in batch.replays]
        with contextlib.suppress(SimulationError):  # a trace the replay refuses: each replay alone says why
            found = trace_totals_batch(frame, traces, first.gpu, first.policy, knobs)
    return [replay_totals(task, jobs, traces) if totals is None
            else _row(task, frame.height, None, str(totals)) if isinstance(totals, SimulationError)
            else _row(task, frame.height, totals, None)
            for task, totals in zip(batch.replays, found, strict=True)]  # fmt: skip


#: The materialized tables a sweep reads: every trace's jobs and the Zeus traces.
INPUT_TABLES = ("cluster_workload_jobs", "zeus_train_runs", "zeus_power_profiles")


def read_inputs(assets: Path) -> tuple[pl.DataFrame, Traces]:
    """(cluster_workload_jobs, the Zeus traces) as materialized under ``assets``; SweepError names a missing table."""
    tables = {}
    for name in INPUT_TABLES:
        files = table_files(assets, name)  # cluster_workload_jobs: one file per trace partition
        if not files:
            raise SweepError(f"{name} is not materialized in {assets} (no {name}.parquet, no {name}/*.parquet)")
        tables[name] = pl.read_parquet(files)
    return tables["cluster_workload_jobs"], from_frames(tables["zeus_train_runs"], tables["zeus_power_profiles"])


def present_traces(jobs: pl.DataFrame) -> tuple[str, ...]:
    """Traces with at least one job, sorted."""
    return tuple(sorted(jobs.filter(pl.col("trace").is_not_null())["trace"].unique().to_list()))


def check_inputs(jobs: pl.DataFrame, traces: Traces, grid: Grid) -> tuple[str, ...]:
    """The traces to sweep (``grid.traces`` or all present); ``SweepError`` for a GPU or trace that is not there."""
    present = present_traces(jobs)
    chosen = grid.traces or present
    missing = [t for t in chosen if t not in present]
    if missing:
        raise SweepError(
            f"no jobs for trace(s) {', '.join(missing)} in cluster_workload_jobs (present: {', '.join(present) or 'none'}); "
            "an optional source may be missing (docs: Cluster traces and replay)"
        )
    known = traces.gpus()
    unknown = [g for g in grid.gpus if g not in known]
    if unknown:
        raise SweepError(f"unknown GPU(s) {', '.join(unknown)}: the power trace has {', '.join(known)}")
    return tuple(chosen)


def sweep(jobs: pl.DataFrame, traces: Traces, grid: Grid, runner: Runner, *, progress: bool = False) -> pl.DataFrame:
    """The grid's table (``ZeusKnobGrid``), sorted by trace, gpu, eta, beta, seed, policy.

    ``jobs`` is ``cluster_workload_jobs``; the replays run on ``runner`` (see ``pipelines.scaleout``).
    """
    chosen = check_inputs(jobs, traces, grid)
    by_trace = {t: jobs.filter(pl.col("trace") == t).select(JOB_COLUMNS) for t in chosen}
    planned = replays(grid, chosen)
    runner.expect(sum(by_trace[r.trace].height for r in planned) * SECONDS_PER_JOB_REPLAY)
    tasks = batches(planned, {t: frame.height for t, frame in by_trace.items()}, runner.workers)
    shared = {"jobs": by_trace, "traces": Traces(traces.train, traces.power)}  # no memoized lookups on the wire
    totals = [row for rows in fan_out(runner, batch_totals, tasks, shared, progress=progress, label="batches") for row in rows]
    return expand(totals, replace(grid, traces=chosen))


def expand(totals: list[dict[str, object]], grid: Grid) -> pl.DataFrame:
    """One row per grid point from the distinct replays' totals, with savings vs Default; validated and sorted."""
    if not grid.traces:
        return ZeusKnobGrid.create_empty()
    found = {(t["trace"], t["gpu"], t["policy"], t["seed"], t["eta"], t["beta"]): t for t in totals}
    rows = []
    for trace in grid.traces:
        for gpu in grid.gpus:
            for eta in grid.etas:
                for beta in grid.betas:
                    for seed in grid.seeds:
                        for policy in grid.policies:
                            knobs = POLICY_KNOBS[policy]
                            t = found[(trace, gpu, policy, seed, eta if "eta" in knobs else None, beta if "beta" in knobs else None)]
                            rows.append({**t, "eta": eta, "beta": beta})
    frame = pl.DataFrame(rows, schema={c: d for c, d in ZeusKnobGrid.create_empty().schema.items() if c in rows[0]})
    default = frame.filter(pl.col("policy") == "default").select(
        "trace", "gpu", "eta", "beta", "seed", pl.col("energy_j").alias("_e0"), pl.col("time_s").alias("_t0")
    )
    out = (
        frame.join(default, on=["trace", "gpu", "eta", "beta", "seed"], how="left")
        .with_columns(
            (100 * (1 - pl.col("energy_j") / pl.col("_e0"))).alias("energy_savings_vs_default_pct"),
            (100 * (1 - pl.col("time_s") / pl.col("_t0"))).alias("time_savings_vs_default_pct"),
        )
        .select(ZeusKnobGrid.column_names())
        .sort(KEY)
    )
    return cast(pl.DataFrame, ZeusKnobGrid.validate(out, cast=True))
