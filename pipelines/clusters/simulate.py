"""Zeus vs Default vs Grid Search over every recurring group of a cluster trace, on one GPU.

Energy of a multi-GPU job: the traces profile one GPU, so a job on ``num_gpu`` GPUs is taken as
``num_gpu`` GPUs each running the simulated configuration for the same wall time (data-parallel,
every GPU at the same batch size per GPU and power limit): job energy = per-GPU energy x num_gpu,
job time = per-GPU time. The optimizer itself sees the per-GPU cost, as in the Zeus artifact.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import polars as pl

from pipelines.contracts.base import conform, empty, polars_schema
from pipelines.contracts.clusters import ZeusClusterHistory, ZeusSingleJobSweep
from pipelines.ingest.simulator_inputs import conform_groups
from pipelines.vocabulary import DEFAULT_BETA, DEFAULT_ETA, POLICIES, REPLAYED_POLICIES, PolicyName
from pipelines.vocabulary.units import J_PER_MWH
from pipelines.zeus import fast
from pipelines.zeus.cost import zeus_cost
from pipelines.zeus.errors import SimulationError
from pipelines.zeus.groups import group_job_spec, replay_groups, workload_tables
from pipelines.zeus.policies import oracle_config
from pipelines.zeus.single import simulate_single
from pipelines.zeus.traces import Traces, WorkloadTable, build_table

#: The policies replayed over every group: the Zeus optimizer and the two baselines.
GROUP_POLICIES = REPLAYED_POLICIES


def simulate_trace(
    jobs: pl.DataFrame,
    traces: Traces,
    gpu: str,
    *,
    eta: float = DEFAULT_ETA,
    beta: float = DEFAULT_BETA,
    policies: tuple[PolicyName, ...] = GROUP_POLICIES,
    log: Callable[[str], None] | None = None,
    seed: int | None = None,
    progress: bool = False,
    engine: str | None = None,
    job_eta: str | None = None,
) -> pl.DataFrame:
    """Replay every group of one trace's ``cluster_workload_jobs`` rows on ``gpu`` under each policy.

    ``progress`` shows a bar per policy on stderr (tqdm). ``engine``: ``replay_groups``'s (None: auto,
    decided on jobs x policies: the compiled replay for large traces; the same table either way).

    One row per reported run (retries are extra rows with ``attempt`` > 0), energy in J for the
    whole job (x num_gpu), time in s, scaled by the job's runtime_ratio as in the Zeus artifact.
    ``seed``: None is the artifact's per-group seeding; an int is a sweep's seed knob (``group_seed``).
    ``job_eta``: a column of ``jobs`` holding each job's energy weight, instead of ``eta`` (a carbon-aware Zeus).
    """
    if jobs.height == 0:
        return empty(ZeusClusterHistory)
    groups = _group_table(jobs)
    # Job index within its group, in the replay's order (start time, ties in table order).
    meta = (
        _replay_order(jobs)
        .with_columns(pl.int_range(pl.len()).over("group").alias("job"))
        .select("group", "job", "trace", "cluster", "job_id", "dataset", "num_gpu")
    )
    frames = []
    engine = fast.resolve_engine(engine, jobs.height * len(policies))  # auto weighs every policy's replay
    for policy in policies:
        runs = replay_groups(
            groups, traces, gpu, eta=eta, beta=beta, policy=policy, seed=seed, progress=progress, desc=f"{gpu} {policy}", engine=engine,
            job_eta=None if job_eta is None else jobs[job_eta].to_numpy(),
        )
        if log:
            log(f"{gpu}/{policy}: {runs.height} runs of {jobs.height} jobs in {groups['group'].n_unique()} groups")
        frames.append(
            runs.with_columns(pl.lit(policy).alias("policy"), pl.int_range(pl.len()).over("group", "job").alias("attempt"))
            .join(meta, on=["group", "job"], how="left")
            .select(
                pl.col("trace"), pl.lit(gpu).alias("gpu"), "policy", "cluster", "group", "job_id", "dataset", "num_gpu", "attempt",
                pl.col("start_time").alias("start_time_s"), pl.col("end_time").alias("end_time_s"),
                pl.col("bs").alias("batch_size"), pl.col("pl").alias("power_limit_w"),
                (pl.col("energy") * pl.col("num_gpu")).alias("energy_j"), pl.col("time").alias("time_s"), "reached",
            )
        )
    return pl.concat(frames).cast(polars_schema(ZeusClusterHistory))


def _group_table(jobs: pl.DataFrame) -> pl.DataFrame:
    """``cluster_workload_jobs`` rows as the group table the replay reads (its contract's column names)."""
    return jobs.select(
        "group", pl.col("start_time_s").alias("start_time"), pl.col("end_time_s").alias("end_time"), "dataset", "runtime_ratio"
    )


def _job_names(jobs: pl.DataFrame) -> pl.Series:
    """Each job as a refusal names it: ``line <n>, job <id> of <cluster>`` (a user trace's file line), else ``job <id> of <cluster>``."""
    job = pl.format("job {} of {}", "job_id", "cluster")
    if "line" not in jobs.columns:
        return jobs.select(job).to_series()
    return jobs.select(pl.when(pl.col("line").is_not_null()).then(pl.format("line {}, {}", "line", job)).otherwise(job)).to_series()


def _replay_order(jobs: pl.DataFrame) -> pl.DataFrame:
    """``jobs`` in the replay's order: groups sorted, each group's jobs by start time, ties in table order."""
    return jobs.with_row_index("_row").sort("group", "start_time_s", "_row")


def trace_totals(
    jobs: pl.DataFrame,
    traces: Traces,
    gpu: str,
    policy: PolicyName,
    *,
    eta: float = DEFAULT_ETA,
    beta: float = DEFAULT_BETA,
    seed: int | None = None,
    engine: str | None = None,
) -> tuple[int, float, float]:
    """(runs, energy J, time s) of ``simulate_trace`` under one policy, summed exactly (``math.fsum``).

    The same numbers as summing ``simulate_trace``'s ``energy_j`` and ``time_s``. On the fast path
    the history table is never built, and the validated, sorted jobs and the workload tables are
    kept for the next call with the same ``jobs`` and ``traces`` objects (a sweep replays one
    trace many times). Raises what ``simulate_trace`` raises.
    """
    if jobs.height == 0:
        return 0, 0.0, 0.0
    if fast.resolve_engine(engine, jobs.height) == "reference":
        history = simulate_trace(jobs, traces, gpu, eta=eta, beta=beta, policies=(policy,), seed=seed, engine="reference")
        return history.height, math.fsum(history["energy_j"].to_list()), math.fsum(history["time_s"].to_list())
    arrays, tables, num_gpu = _prepared(jobs, traces, gpu)
    runs = fast.replay(arrays, tables, eta, beta, seed, policy)
    # A run's job in the replay order: the job-th of its group's jobs, which start at bounds[group].
    energy = runs.energy * num_gpu[arrays.bounds[runs.group] + runs.job]
    return runs.size, math.fsum(energy.tolist()), math.fsum(runs.time.tolist())


def trace_totals_batch(jobs: pl.DataFrame, traces: Traces, gpu: str, policy: PolicyName, knobs: list[fast.Knobs]) -> list[fast.Totals]:
    """``trace_totals`` of many replays of one trace on ``gpu`` under ``policy``, one per (eta, beta, seed) of ``knobs``,
    in one pass of the compiled replay over the jobs (``fast.replay_totals``): the same numbers, bit for bit.

    Where ``simulate_trace`` raises ``SimulationError``, that error (the reference's, at the same group); None for a
    replay the batch set aside (a total that is not finite, buffers too small): ``trace_totals`` of that replay alone
    sums it. Needs numba (``fast.available``).
    """
    if jobs.height == 0:
        return [(0, 0.0, 0.0) for _ in knobs]
    arrays, tables, num_gpu = _prepared(jobs, traces, gpu)
    return fast.replay_totals(arrays, tables, num_gpu, policy, knobs)


#: ``_prepared``'s memo: (jobs, traces, gpu) by object identity -> (jobs, traces, prepared). The frames are held,
#: so their ids cannot be reused while they are in here; ``is`` guards every hit.
_PREPARED: dict[tuple[int, int, str], tuple[pl.DataFrame, Traces, tuple[fast.GroupArrays, dict[str, WorkloadTable], np.ndarray]]] = {}
_PREPARED_MAX = 16


def _prepared(jobs: pl.DataFrame, traces: Traces, gpu: str) -> tuple[fast.GroupArrays, dict[str, WorkloadTable], np.ndarray]:
    """(group arrays, workload tables, num_gpu in replay order) of one trace on ``gpu``; validated once per (jobs, traces, gpu)."""
    key = (id(jobs), id(traces), gpu)
    hit = _PREPARED.get(key)
    if hit is not None and hit[0] is jobs and hit[1] is traces:
        return hit[2]
    groups = conform_groups(_group_table(jobs), f"trace {jobs['trace'][0]}", rows=_job_names(jobs))
    prepared = (fast.group_arrays(groups), workload_tables(groups, traces, gpu), _replay_order(jobs)["num_gpu"].to_numpy())
    if len(_PREPARED) >= _PREPARED_MAX:
        _PREPARED.clear()
    _PREPARED[key] = (jobs, traces, prepared)
    return prepared


def summarize(history: pl.DataFrame) -> pl.DataFrame:
    """Per trace, dataset and GPU: energy (J, MWh) and time (s) of each policy and Zeus's savings (%).

    Savings are relative: 100 x (1 - Zeus / baseline); positive means Zeus used less.
    """
    per_policy = history.group_by("trace", "dataset", "gpu", "policy").agg(
        pl.struct("cluster", "job_id").n_unique().alias("jobs"),  # job ids are unique per cluster only
        pl.len().alias("runs"),
        pl.col("energy_j").sum().alias("energy_j"),
        pl.col("time_s").sum().alias("time_s"),
    )
    wide = per_policy.pivot(on="policy", index=["trace", "dataset", "gpu"], values=["energy_j", "time_s", "runs", "jobs"])
    rename = {f"{m}_{p}": f"{m}_{p.replace('-', '_')}" for m in ("energy_j", "time_s", "runs", "jobs") for p in GROUP_POLICIES}
    wide = wide.rename({k: v for k, v in rename.items() if k in wide.columns})
    for p in ("zeus", "default", "grid_search"):
        if f"energy_j_{p}" not in wide.columns:
            wide = wide.with_columns(pl.lit(None, pl.Float64).alias(f"energy_j_{p}"), pl.lit(None, pl.Float64).alias(f"time_s_{p}"))
    return (
        wide.with_columns(
            pl.coalesce("jobs_zeus", "jobs_default").alias("jobs") if "jobs_zeus" in wide.columns else pl.lit(0).alias("jobs"),
            *[(pl.col(f"energy_j_{p}") / J_PER_MWH).alias(f"energy_mwh_{p}") for p in ("zeus", "default", "grid_search")],
            (100 * (1 - pl.col("energy_j_zeus") / pl.col("energy_j_default"))).alias("energy_savings_vs_default_pct"),
            (100 * (1 - pl.col("time_s_zeus") / pl.col("time_s_default"))).alias("time_savings_vs_default_pct"),
            (100 * (1 - pl.col("energy_j_zeus") / pl.col("energy_j_grid_search"))).alias("energy_savings_vs_grid_search_pct"),
            (100 * (1 - pl.col("time_s_zeus") / pl.col("time_s_grid_search"))).alias("time_savings_vs_grid_search_pct"),
        )
        .select(
            "trace", "dataset", "gpu", pl.col("jobs").cast(pl.Int64),
            "energy_j_zeus", "energy_j_default", "energy_j_grid_search",
            "energy_mwh_zeus", "energy_mwh_default", "energy_mwh_grid_search",
            "time_s_zeus", "time_s_default", "time_s_grid_search",
            "energy_savings_vs_default_pct", "time_savings_vs_default_pct",
            "energy_savings_vs_grid_search_pct", "time_savings_vs_grid_search_pct",
        )
        .sort("trace", "dataset", "gpu")
    )


def summary_mismatches(summary: pl.DataFrame, history: pl.DataFrame) -> list[str]:
    """Policies whose summary energy or time total differs from the history's sum (beyond 1e-9 relative)."""
    problems = []
    for policy, energy, time in history.group_by("policy").agg(pl.col("energy_j").sum(), pl.col("time_s").sum()).iter_rows():
        col = policy.replace("-", "_")
        for name, total in ((f"energy_j_{col}", energy), (f"time_s_{col}", time)):
            got = float(summary[name].sum())
            if abs(got - total) > 1e-9 * max(1.0, abs(total)):
                problems.append(f"{name}: summary {got!r} != history {total!r}")
    return problems


#: The Oracle's expected values per recurrence, a column each of ``single_job_sweep``'s table.
_ORACLE = ("oracle_energy_j", "oracle_time_s", "oracle_cost")


def single_job_sweep(
    traces: Traces,
    gpus: list[str],
    datasets: list[str],
    etas: tuple[float, ...],
    betas: tuple[float, ...],
    seeds: tuple[int, ...],
    policies: tuple[PolicyName, ...] = POLICIES,
) -> tuple[pl.DataFrame, list[str]]:
    """Every (GPU, workload, eta, beta, seed, policy) single-job simulation, one row per recurrence.

    The job is the artifact's job of each workload (``group_job_spec``: b0 capped per GPU), run
    ``2 x |B| x |P|`` times back to back. A recurrence's energy/time/cost sum its runs (retries
    included); ``batch_size``/``power_limit_w`` are those of its last run. Against the Oracle (the
    hindsight-best configuration's expected energy, time and cost per recurrence, ``oracle_config``)
    after k recurrences: regret = cumulative value - k x the Oracle's, and the ratio cumulative value /
    (k x the Oracle's), in energy, time and cost: computed here once, for the asset and its figure.
    Returns (rows, errors): combinations where the published simulator would raise are listed in
    ``errors`` instead.
    """
    runs_of: dict[str, list[int | float]] = {c: [] for c in ("combination", "recurrence", "batch_size", "power_limit_w", "energy_j", "time_s", "cost")}
    combinations: dict[str, list[object]] = {c: [] for c in ("gpu", "dataset", "policy", "eta", "beta", "seed", *_ORACLE)}
    errors: list[str] = []
    for gpu in gpus:
        for dataset in datasets:
            table = build_table(traces, gpu, group_job_spec(traces, gpu, dataset))
            for eta in etas:
                oracle = oracle_config(table, eta)
                for beta in betas:
                    for seed in seeds:
                        for policy in policies:
                            try:
                                runs = simulate_single(table, eta=eta, beta=beta, seed=seed, policy=policy)
                            except SimulationError as exc:
                                errors.append(f"{gpu}/{dataset}/eta={eta}/beta={beta}/seed={seed}/{policy}: {exc}")
                                continue
                            combination = len(combinations["gpu"])
                            for column, value in zip(combinations, (gpu, dataset, policy, eta, beta, seed, oracle.expected_energy,
                                                                    oracle.expected_time, oracle.expected_cost), strict=True):
                                combinations[column].append(value)
                            for r in runs:
                                for column, value in zip(runs_of, (combination, r.job, r.bs, r.pl, r.energy, r.time,
                                                                   zeus_cost(eta, r.energy, table.max_power, r.time)), strict=True):
                                    runs_of[column].append(value)
    if not combinations["gpu"]:
        return empty(ZeusSingleJobSweep), errors
    return conform(_recurrences(pl.DataFrame(runs_of), pl.DataFrame(combinations)), ZeusSingleJobSweep), errors


def _recurrences(runs: pl.DataFrame, combinations: pl.DataFrame) -> pl.DataFrame:
    """One row per recurrence of each simulated combination (``runs.combination``: a row of ``combinations``), in the
    order of the runs: the recurrence's runs summed, the cumulative sums, and the comparison with the Oracle."""
    per = runs.group_by("combination", "recurrence", maintain_order=True).agg(
        pl.len().alias("tries"), pl.col("batch_size").last(), pl.col("power_limit_w").last(),
        pl.col("energy_j").sum(), pl.col("time_s").sum(), pl.col("cost").sum(),
    )
    k = pl.col("recurrence") + 1
    return per.with_columns(
        pl.col("energy_j").cum_sum().over("combination").alias("cum_energy_j"),
        pl.col("time_s").cum_sum().over("combination").alias("cum_time_s"),
        pl.col("cost").cum_sum().over("combination").alias("cum_cost"),
    ).join(combinations.with_row_index("combination").with_columns(pl.col("combination").cast(pl.Int64)), on="combination",
           how="left", maintain_order="left").with_columns(
        (pl.col("cum_energy_j") - k * pl.col("oracle_energy_j")).alias("energy_regret_j"),
        (pl.col("cum_time_s") - k * pl.col("oracle_time_s")).alias("time_regret_s"),
        (pl.col("cum_cost") - k * pl.col("oracle_cost")).alias("cumulative_regret"),
        (pl.col("cum_energy_j") / (k * pl.col("oracle_energy_j"))).alias("energy_vs_oracle"),
        (pl.col("cum_time_s") / (k * pl.col("oracle_time_s"))).alias("time_vs_oracle"),
    ).drop("combination")
