"""Default, Grid Search and Oracle baselines, checked against numbers computed here from the raw CSVs with pandas."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import polars as pl
import pytest

from pipelines.ingest.simulator_inputs import read_trace_dir
from pipelines.zeus.groups import group_job_spec, replay_groups
from pipelines.zeus.policies import oracle_config
from pipelines.zeus.single import simulate_single
from pipelines.zeus.traces import Traces, WorkloadTable, build_table


@pytest.fixture(scope="module")
def trace_dir(mirror: Path) -> Path:
    return mirror / "zeus"


@pytest.fixture(scope="module")
def traces(trace_dir: Path) -> Traces:
    return read_trace_dir(trace_dir)


def job_rows(trace_dir: Path, table: WorkloadTable) -> pd.DataFrame:
    """The merged train x power rows of the job at its target, with per-epoch energy (J)."""
    s = table.spec
    train = pd.read_csv(trace_dir / "summary_train.csv")
    power = pd.read_csv(trace_dir / f"summary_power_{table.gpu}.csv")
    df = train.merge(power, on=["dataset", "network", "batch_size", "optimizer"])
    df = df[(df.dataset == s.dataset) & (df.network == s.network) & (df.optimizer == s.optimizer) & (df.target_metric == s.target_metric)]
    return df.assign(epe=df.time_per_epoch * df.average_power)


def test_default_runs_b0_at_its_highest_limit_with_trace_energies(traces: Traces, trace_dir: Path) -> None:
    table = build_table(traces, "a40", group_job_spec(traces, "a40", "squad"))
    rows = job_rows(trace_dir, table)
    b0_rows = rows[(rows.batch_size == table.spec.default_bs) & (rows.power_limit == rows[rows.batch_size == table.spec.default_bs].power_limit.max())]
    epochs = b0_rows.target_epoch.fillna(table.spec.max_epochs).clip(upper=table.spec.max_epochs)
    possible = {(e * b0_rows.epe.iloc[0], e * b0_rows.time_per_epoch.iloc[0]) for e in epochs}
    runs = simulate_single(table, 0.5, 2.0, seed=4, num_recurrence=30, policy="default")
    assert {(r.bs, r.pl) for r in runs} == {(32, 300)}
    assert {(r.energy, r.time) for r in runs} <= possible
    assert sum(r.reached for r in runs) == 30 and len({r.energy for r in runs}) > 1


def test_grid_search_tries_every_config_in_order_then_keeps_the_cheapest(traces: Traces, trace_dir: Path) -> None:
    eta = 0.5
    table = build_table(traces, "p100", group_job_spec(traces, "p100", "imagenet"))
    rows = job_rows(trace_dir, table)
    configs = sorted(set(zip(rows.batch_size, rows.power_limit, strict=True)))
    runs = simulate_single(table, eta, 2.0, seed=2, num_recurrence=len(configs) + 10, policy="grid-search")
    assert [(r.bs, r.pl) for r in runs[: len(configs)]] == configs
    max_power = pd.read_csv(trace_dir / "summary_power_p100.csv").power_limit.max()
    costs = {(r.bs, r.pl): eta * r.energy + (1 - eta) * max_power * r.time for r in runs[: len(configs)] if r.reached}
    cheapest = min(costs, key=costs.__getitem__)
    assert {(r.bs, r.pl) for r in runs[len(configs) :]} == {cheapest}


@pytest.mark.parametrize(("gpu", "dataset", "eta"), [("v100", "cifar100", 0.5), ("rtx6000", "librispeech", 0.0), ("a40", "sentiment140", 1.0)])
def test_oracle_is_the_lowest_expected_cost_to_reach_the_target(traces: Traces, trace_dir: Path, gpu: str, dataset: str, eta: float) -> None:
    table = build_table(traces, gpu, group_job_spec(traces, gpu, dataset))
    rows = job_rows(trace_dir, table)
    max_epochs = table.spec.max_epochs
    rows = rows.assign(
        reached=rows.target_epoch.le(max_epochs),
        epochs=rows.target_epoch.where(rows.target_epoch.le(max_epochs), max_epochs),
    )
    max_power = pd.read_csv(trace_dir / f"summary_power_{gpu}.csv").power_limit.max()
    per_config = rows.groupby(["batch_size", "power_limit"]).agg(
        p=("reached", "mean"), energy=("epe", "first"), tpe=("time_per_epoch", "first"), epochs=("epochs", "mean")
    )
    per_config = per_config[per_config.p > 0]
    cost = (eta * per_config.energy + (1 - eta) * max_power * per_config.tpe) * per_config.epochs / per_config.p
    choice = oracle_config(table, eta)
    assert (choice.batch_size, choice.power_limit) == cost.idxmin()
    assert choice.expected_cost == pytest.approx(cost.min(), rel=1e-12)
    b0_cost = cost.loc[(table.spec.default_bs, table.by_batch_size[table.spec.default_bs].max_power_limit)]
    assert choice.expected_cost <= b0_cost  # the Default configuration is never better in expectation


def test_baselines_replay_groups(traces: Traces) -> None:
    groups = pl.DataFrame(
        {
            "group": ["g1"] * 4 + ["g2"] * 3,
            "start_time": [0.0, 10.0, 5000.0, 9000.0, 0.0, 1.0, 2.0],
            "end_time": [3000.0, 3010.0, 8000.0, 12000.0, 100.0, 101.0, 102.0],
            "dataset": ["squad"] * 4 + ["movielens-1m"] * 3,
            "runtime_ratio": [1.0, 0.5, 2.0, 1.0, 1.0, 1.0, 1.0],
        }
    )
    default = replay_groups(groups, traces, "v100", policy="default")
    squad_b0 = group_job_spec(traces, "v100", "squad").default_bs
    assert set(default.filter(pl.col("group") == "g1").select("bs", "pl").iter_rows()) == {(squad_b0, 250)}
    assert default.filter("reached").height == groups.height
    grid = replay_groups(groups, traces, "v100", policy="grid-search")
    table = build_table(traces, "v100", group_job_spec(traces, "v100", "squad"))
    first = grid.filter(pl.col("group") == "g1").row(0, named=True)
    assert (first["bs"], first["pl"]) == table.configs()[0]
    # Concurrent submissions (job 1 starts while job 0 runs) use the best known config: b0 at its top limit.
    second = grid.filter((pl.col("group") == "g1") & (pl.col("job") == 1)).row(0, named=True)
    assert (second["bs"], second["pl"]) == (squad_b0, 250) and second["start_time"] == 10.0
