"""One recurring job, run back to back ``num_recurrence`` times (the published ``simulate_one_job``).

Each recurrence runs the job until it reaches the target, at most ``max_tries`` runs (20 for
Zeus). The cost bound of early stopping is beta x the lowest cost of a whole recurrence so far
(the sum of its runs' costs). A run that could not afford one epoch is not recorded; Zeus's
optimizer sees it as a miss costing 100 x beta x that lowest cost.
"""

from __future__ import annotations

import math

import polars as pl

from pipelines.vocabulary import DEFAULT_BETA, DEFAULT_ETA, PolicyName
from pipelines.zeus.cost import zeus_cost
from pipelines.zeus.errors import SimulationError
from pipelines.zeus.job_runs import JobRun, RunSampler
from pipelines.zeus.policies import make_policy
from pipelines.zeus.traces import WorkloadTable


def simulate_single(
    table: WorkloadTable,
    eta: float = DEFAULT_ETA,
    beta: float = DEFAULT_BETA,
    seed: int = 1,
    num_recurrence: int | None = None,
    policy: PolicyName = "zeus",
) -> list[JobRun]:
    """The runs of ``table.spec`` recurring on ``table.gpu``; ``num_recurrence`` defaults to 2 x |B| x |P|.

    Raises ``SimulationError`` where the published simulator raises (b0 misses the target in
    the first recurrence, or a recurrence misses it ``max_tries`` times).
    """
    pol = make_policy(policy, table, eta, seed, concurrency=False)
    sampler = RunSampler(table, eta, seed)
    beta = beta if pol.early_stopping else math.inf
    max_power = table.max_power
    recurrences = table.default_recurrences if num_recurrence is None else num_recurrence
    min_cost = math.inf
    history: list[JobRun] = []
    for i in range(recurrences):
        cost_acc = 0.0
        for _ in range(pol.max_tries):
            bs, limit, profile = pol.choose()
            energy, time, reached = sampler.run(bs, limit, profile, beta * min_cost)
            if energy == 0 and time == 0 and not reached:
                pol.observe(bs, limit, 100 * beta * min_cost, False)
                continue
            cost = zeus_cost(eta, energy, max_power, time)
            cost_acc += cost
            pol.observe(bs, limit, cost, reached)
            history.append(JobRun(i, bs, limit, energy, time, reached))
            if reached:
                min_cost = min(min_cost, cost_acc)
                break
            if i == 0 and pol.first_must_reach:
                raise SimulationError(f"The default batch size {table.spec.default_bs} did not converge.")
        else:
            raise SimulationError(f"Job did not reach the target metric in {pol.max_tries} tries.")
    return history


def runs_frame(runs: list[JobRun]) -> pl.DataFrame:
    """Job runs as a frame: job (i64), bs (i64), pl (i64), energy (f64, J), time (f64, s), reached (bool)."""
    return pl.DataFrame(
        {
            "job": [r.job for r in runs],
            "bs": [r.bs for r in runs],
            "pl": [r.pl for r in runs],
            "energy": [r.energy for r in runs],
            "time": [r.time for r in runs],
            "reached": [r.reached for r in runs],
        },
        schema={"job": pl.Int64, "bs": pl.Int64, "pl": pl.Int64, "energy": pl.Float64, "time": pl.Float64, "reached": pl.Boolean},
    )
