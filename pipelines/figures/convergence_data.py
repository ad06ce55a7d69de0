"""Zeus vs the baselines over a job's recurrences, from the simulator in ``pipelines.zeus``.

Plain polars. For each GPU and workload (the artifact's job spec, b0 capped per GPU), each policy
(Zeus, Default, Grid Search, Oracle) runs the job ``2 x |B| x |P|`` times back to back
(``pipelines.zeus.single.simulate_single``, eta and beta as given, one seed). Per recurrence we
sum the energy (J) and time (s) of all its runs (retries and early-stopped runs included), and
compare the running totals with the Oracle's expectation: regret after k recurrences =
cumulative value - k x the hindsight-best configuration's expected value per recurrence
(``pipelines.zeus.policies.oracle_config``), in energy, time and cost; and the same as a ratio,
cumulative value / (k x Oracle's expected value) = 1 + regret / (k x Oracle's expected value).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from pipelines.contracts.base import conform, empty, polars_schema
from pipelines.contracts.figures import ConvergenceRecurrences
from pipelines.zeus.names import POLICIES, PolicyName
from pipelines.zeus.workloads import WORKLOADS

POLICY_LABELS: dict[str, str] = {"zeus": "Zeus", "default": "Default", "grid-search": "Grid Search", "oracle": "Oracle"}

#: Columns, types and units of the recurrences frame: the contract ``ConvergenceRecurrences``.
RECURRENCE_COLUMNS = polars_schema(ConvergenceRecurrences)


def simulate_recurrences(
    train: pl.DataFrame,
    power: pl.DataFrame,
    gpus: Sequence[str] | None = None,
    eta: float = 0.5,
    beta: float = 2.0,
    seed: int = 1,
    policies: Sequence[PolicyName] = POLICIES,
) -> tuple[pl.DataFrame, list[str]]:
    """Per (gpu, dataset, policy, recurrence) the columns of ``ConvergenceRecurrences``, and notes on what failed.

    A (gpu, dataset) the simulator cannot run (no rows, or b0 never reaches the target) is left
    out and named in the notes.
    """
    from pipelines.zeus.errors import SimulationError
    from pipelines.zeus.groups import group_job_spec
    from pipelines.zeus.policies import oracle_config
    from pipelines.zeus.single import runs_frame, simulate_single
    from pipelines.zeus.traces import TraceError, build_table, from_frames

    traces = from_frames(train, power)
    parts: list[pl.DataFrame] = []
    notes: list[str] = []
    for gpu in gpus if gpus is not None else sorted(power["gpu"].unique().to_list()):
        for w in WORKLOADS:
            try:
                table = build_table(traces, gpu, group_job_spec(traces, gpu, w.dataset))
                best = oracle_config(table, eta)
            except (TraceError, ValueError) as exc:
                notes.append(f"{gpu}/{w.dataset}: not simulated ({exc})")
                continue
            for policy in policies:
                try:
                    runs = runs_frame(simulate_single(table, eta, beta, seed, policy=policy))
                except SimulationError as exc:
                    notes.append(f"{gpu}/{w.dataset}/{policy}: {exc}")
                    continue
                k = pl.col("recurrence") + 1
                parts.append(
                    runs.group_by("job", maintain_order=True)
                    .agg(pl.len().alias("runs"), pl.col("energy").sum().alias("energy_j"), pl.col("time").sum().alias("time_s"))
                    .rename({"job": "recurrence"})
                    .with_columns(
                        pl.lit(gpu).alias("gpu"), pl.lit(w.dataset).alias("dataset"), pl.lit(policy).alias("policy"),
                        (eta * pl.col("energy_j") + (1 - eta) * table.max_power * pl.col("time_s")).alias("cost_j"),
                    )
                    .with_columns(
                        pl.col("energy_j").cum_sum().alias("cum_energy_j"),
                        pl.col("time_s").cum_sum().alias("cum_time_s"),
                        pl.col("cost_j").cum_sum().alias("cum_cost_j"),
                    )
                    .with_columns(
                        (pl.col("cum_energy_j") - k * best.expected_energy).alias("energy_regret_j"),
                        (pl.col("cum_time_s") - k * best.expected_time).alias("time_regret_s"),
                        (pl.col("cum_cost_j") - k * best.expected_cost).alias("cost_regret_j"),
                        (pl.col("cum_energy_j") / (k * best.expected_energy)).alias("energy_vs_oracle"),
                        (pl.col("cum_time_s") / (k * best.expected_time)).alias("time_vs_oracle"),
                    )
                )
    if not parts:
        return empty(ConvergenceRecurrences), notes
    return conform(pl.concat(parts, how="diagonal"), ConvergenceRecurrences), notes
