"""Energy anchored to what the cluster did, and the saving once Zeus has converged.

**Anchored energy.** The replay scales a Zeus workload's run by ``runtime_ratio``, normalised per
workload (as in the Zeus artifact), so an export's own durations divide out: six jobs that ran 1 h
each and the same six that ran 100 h each replay to the same kWh. Anchoring ties the size of the
answer to the export instead. Each replayed job's Default GPU-time is its own elapsed time x its
GPUs; its energies come from the replay's per-run power for that workload and GPU:

* scale_j = elapsed_j / T_default_j (T_default_j: the replay's Default time of job j, s);
* anchored Default energy_j = E_default_j x scale_j = (E_default_j / (T_default_j x GPUs_j)) x
  elapsed_j x GPUs_j: the replay's mean power per GPU times the export's GPU-seconds;
* anchored Zeus energy_j = E_zeus_j x scale_j = anchored Default_j x (E_zeus_j / E_default_j), and
  every run's time likewise, so Default's time is the job's elapsed time.

Then kWh, cost and CO2e scale with the export's GPU-hours, mean power per GPU lies between the
profile GPU's idle draw and its TDP (the traces' average draw at a power limit), and each job's
saving is the replay's. The artifact's mode (``runtime-ratio``) leaves the history as replayed.

**Steady state.** Over an export's own period Zeus pays for exploration in each group's first
recurrences, so the saving grows with the jobs per group. Once a group's optimizer has converged
it runs the batch size of lowest expected cost at the power limit its just-in-time profiling
chose for it (``converged_ratio``); the steady-state saving of a row is that asymptote per
workload, weighted by the row's Default energy per workload.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import polars as pl

from pipelines.zeus.cost import zeus_cost
from pipelines.zeus.groups import group_job_spec
from pipelines.zeus.policies import expected_to_target
from pipelines.zeus.traces import Traces, build_table

#: How the energies of a replay are sized: to the export's GPU-hours (``anchored``), or as the Zeus artifact (``runtime-ratio``).
EnergyModel = Literal["anchored", "runtime-ratio"]
ANCHORED: EnergyModel = "anchored"
RUNTIME_RATIO: EnergyModel = "runtime-ratio"
ENERGY_MODELS: tuple[EnergyModel, ...] = (ANCHORED, RUNTIME_RATIO)


class AnchoringError(RuntimeError):
    """A history that anchoring cannot size: a job named twice, or a run of a job that was not replayed (a broken invariant)."""


def job_index(history: pl.DataFrame, jobs: pl.DataFrame) -> tuple[pl.DataFrame, np.ndarray]:
    """(``jobs`` in replay order, groups sorted and jobs by start, with their index ``_job``; each run's job as that index).

    A job is its group and id; ``AnchoringError`` for an id twice in a group or a run of no job of ``jobs``.
    """
    keys = jobs.with_row_index("_row").sort("group", "start_time_s", "_row").drop("_row").with_row_index("_job")
    if keys.select(pl.struct("group", "job_id").is_duplicated().any()).item():
        raise AnchoringError("a job id appears twice in one recurring group: its runs cannot be told apart")
    job = history.select("group", "job_id").join(keys.select("group", "job_id", "_job"), on=["group", "job_id"], how="left",
                                                 maintain_order="left")["_job"]
    if job.null_count():
        raise AnchoringError("the history has runs of a job that was not replayed")
    return keys, job.to_numpy()


def anchor(history: pl.DataFrame, jobs: pl.DataFrame) -> pl.DataFrame:
    """``history`` (``simulate_trace`` of ``jobs``) with each job's runs scaled so that its Default time is its elapsed time.

    ``jobs``: the ``cluster_workload_jobs`` rows replayed (group, job_id, start_time_s, end_time_s;
    a job is its group and id). Every policy's runs of a job are scaled by elapsed / Default time
    (see the module docstring); energy_j and time_s change, nothing else. Each job's Default time
    is summed over its runs in history order (numpy), so the result is the same bit for bit
    wherever it runs.
    """
    if history.height == 0:
        return history
    keys, index = job_index(history, jobs)
    is_default = (history["policy"] == "default").to_numpy()
    scale = job_scale(index[is_default], history["time_s"].to_numpy()[is_default],
                      (keys["end_time_s"] - keys["start_time_s"]).to_numpy())[index]
    return history.with_columns(pl.col("energy_j") * scale, pl.col("time_s") * scale)


def job_scale(default_job: np.ndarray, default_s: np.ndarray, elapsed_s: np.ndarray) -> np.ndarray:
    """Each job's anchoring scale, elapsed / Default time (``anchor``): ``default_job``, ``default_s``: the Default runs' jobs
    (indices into ``elapsed_s``) and times (s), in history order (a job's time summed in that order)."""
    if default_job.size == 0:
        raise AnchoringError("anchoring needs the Default policy's runs")
    return elapsed_s / np.bincount(default_job, weights=default_s, minlength=elapsed_s.size)


def converged_ratio(traces: Traces, gpu: str, dataset: str, eta: float) -> float:
    """Zeus's converged energy over Default's for one workload on ``gpu`` (expected energy to reach the target, retries counted).

    Default: b0 at its maximum power limit. Zeus, converged: over the batch sizes that reach the
    target, the one of lowest expected cost eta x E + (1 - eta) x MaxPower x T, each at the limit
    its just-in-time profiling picks (``best_power_limit``).
    """
    table = build_table(traces, gpu, group_job_spec(traces, gpu, dataset))
    max_epochs = table.spec.max_epochs
    b0 = table.by_batch_size[table.spec.default_bs]
    default = expected_to_target(b0, b0.max_power_limit, max_epochs)
    if default is None:
        raise ValueError(f"{dataset} on {gpu}: the default configuration never reaches the target")
    best: tuple[float, float] | None = None  # (cost, energy)
    for bs in table.batch_sizes:
        row = table.by_batch_size[bs]
        found = expected_to_target(row, row.best_power_limit(eta), max_epochs)
        if found is None:
            continue
        cost = zeus_cost(eta, found[1], table.max_power, found[2])
        if best is None or cost < best[0]:
            best = (cost, found[1])
    assert best is not None  # b0 reaches the target
    return best[1] / default[1]


def converged_ratios(traces: Traces, gpu: str, workloads: tuple[str, ...], eta: float) -> dict[str, float]:
    """``converged_ratio`` of each of ``workloads`` on ``gpu``."""
    return {w: converged_ratio(traces, gpu, w, eta) for w in workloads}


def steady_state_totals(default_j: np.ndarray, dataset: np.ndarray, datasets: list[str], ratios: dict[str, float]) -> tuple[float, float]:
    """(Default energy J, the same jobs' energy once Zeus has converged J) of one row: ``default_j``, its Default runs' energies in
    history order, ``dataset`` each run's workload (an index into ``datasets``); ``ratios`` per workload."""
    default_total = converged_j = 0.0
    for name in sorted(ratios):
        part = float(np.sum(default_j[dataset == datasets.index(name)])) if name in datasets else 0.0
        default_total += part
        converged_j += part * ratios[name]
    return default_total, converged_j


def horizon_totals(policy_j: dict[str, tuple[np.ndarray, np.ndarray]], bounds: np.ndarray, group_ratio: np.ndarray, period_s: float,
                   horizon_s: float) -> tuple[float, float]:
    """(Default energy J, Zeus energy J) of one row projected over ``horizon_s`` at the export's recurrence rate.

    ``policy_j``: Default's and Zeus's runs, each (its jobs: indices in replay order, groups sorted and jobs by start;
    its energies J), in history order; ``bounds``: each group's first job in that order, then the job count;
    ``group_ratio``: each group's converged ratio (its workload's).

    Each recurring group g recurs n_g times over the export's ``period_s``, so N_g = n_g x horizon /
    period times over the horizon (Zeus deployed at its start). Its first min(N_g, n_g) jobs cost
    what the replay says (a job cut by the horizon counts in part); every recurrence beyond the
    export's costs the group's mean Default energy per job, and under Zeus that times the
    workload's converged ratio (``converged_ratio``): the optimizer has seen n_g jobs by then.
    """
    n = int(bounds[-1])
    if n == 0 or period_s <= 0:
        return 0.0, 0.0
    per_policy = {name: np.bincount(job, weights=energy, minlength=n) for name, (job, energy) in policy_j.items()}
    starts = bounds[:-1]
    sizes = np.diff(bounds)
    position = np.arange(n) - np.repeat(starts, sizes)  # a job's place in its group, from 0
    recurrences = sizes * (horizon_s / period_s)  # N_g per group
    weight = np.clip(np.repeat(recurrences, sizes) - position, 0.0, 1.0)
    beyond = np.maximum(recurrences - sizes, 0.0)
    mean_default = np.add.reduceat(per_policy["default"], starts) / sizes
    default_j = float(np.sum(weight * per_policy["default"])) + float(np.sum(beyond * mean_default))
    zeus_j = float(np.sum(weight * per_policy["zeus"])) + float(np.sum(beyond * mean_default * group_ratio))
    return default_j, zeus_j
