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

from pipelines.figures.energy_data import WORKLOADS

POLICY_LABELS: dict[str, str] = {"zeus": "Zeus", "default": "Default", "grid-search": "Grid Search", "oracle": "Oracle"}

RECURRENCE_COLUMNS: dict[str, pl.DataType] = {
    "gpu": pl.String(),
    "dataset": pl.String(),
    "policy": pl.String(),
    "recurrence": pl.Int64(),  # 0-based
    "runs": pl.UInt32(),  # runs in this recurrence (1 + retries)
    "energy_j": pl.Float64(),
    "time_s": pl.Float64(),
    "cost_j": pl.Float64(),  # eta x energy + (1 - eta) x MaxPower x time
    "cum_energy_j": pl.Float64(),
    "cum_time_s": pl.Float64(),
    "cum_cost_j": pl.Float64(),
    "energy_regret_j": pl.Float64(),  # cum_energy_j - (recurrence + 1) x Oracle's expected energy
    "time_regret_s": pl.Float64(),
    "cost_regret_j": pl.Float64(),
    "energy_vs_oracle": pl.Float64(),  # cum_energy_j / ((recurrence + 1) x Oracle's expected energy) = 1 + regret / that
    "time_vs_oracle": pl.Float64(),
}


def simulate_recurrences(
    train: pl.DataFrame,
    power: pl.DataFrame,
    gpus: Sequence[str] | None = None,
    eta: float = 0.5,
    beta: float = 2.0,
    seed: int = 1,
    policies: Sequence[str] = tuple(POLICY_LABELS),
) -> tuple[pl.DataFrame, list[str]]:
    """Per (gpu, dataset, policy, recurrence) the columns of ``RECURRENCE_COLUMNS``, and notes on what failed.

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
                    runs = runs_frame(simulate_single(table, eta, beta, seed, policy=policy))  # type: ignore[arg-type]
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
        return pl.DataFrame(schema=RECURRENCE_COLUMNS), notes
    frame = pl.concat(parts, how="diagonal").select([pl.col(c).cast(t) for c, t in RECURRENCE_COLUMNS.items()])
    return frame, notes
