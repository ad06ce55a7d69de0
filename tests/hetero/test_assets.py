"""The hetero layer in Dagster: the allocations table, its check and its figures (catalog family HETERO), from the profiles asset."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from pipelines.figures.catalog import HETERO
from pipelines.hetero.allocations import SCHEMA
from tests.support.materialize import INGEST, Homes, Step


@pytest.fixture(scope="module")
def hetero_home(materialized: Homes) -> tuple[Path, dg.ExecuteInProcessResult]:
    """hetero_allocations, its check and the HETERO figures, materialized on a copy of the ingested home (its hetero_gpu_profiles)."""
    home = materialized(Step(["hetero_allocations", *(f"figures/{a.key}" for a in HETERO.assets)]), base=materialized(INGEST), name="hetero")
    return home.root, home.result


def test_allocations_table(hetero_home: tuple[Path, dg.ExecuteInProcessResult]) -> None:
    root, result = hetero_home
    assert result.success
    table = pl.read_parquet(root / "assets" / "hetero_allocations.parquet")
    assert table.schema == pl.Schema(SCHEMA)
    assert table.group_by("workload", maintain_order=True).len().rows() == [("cifar100", 7), ("imagenet", 7)]
    brute = table.filter((pl.col("method") == "brute") & (pl.col("model") == "published"))
    assert brute.select("workload", "batch_split", "power_limits").rows() == [
        ("cifar100", [1874, 2222], [100, 60]),
        ("imagenet", [1661, 2435], [100, 60]),
    ]
    # each model's brute force is the lowest cost of that model, and the sync optimum is the lowest sync cost of all rows
    for (workload, model), rows in table.filter(pl.col("method") != "baseline_as_written").group_by("workload", "model"):
        assert rows.filter(pl.col("method") == "brute")["cost"][0] == rows["cost"].min(), (workload, model)
    for _, rows in table.group_by("workload"):
        assert rows.filter((pl.col("model") == "sync") & (pl.col("method") == "brute"))["cost"][0] == rows["sync_cost"].min()
    checks = result.get_asset_check_evaluations()
    assert sorted((c.check_name, c.passed) for c in checks) == [("brute_force_is_lowest", True), ("drew_something", True),
                                                                ("drew_something", True)]  # and the two figures drew


def test_figures_and_their_data(hetero_home: tuple[Path, dg.ExecuteInProcessResult]) -> None:
    root, _ = hetero_home
    for name in ("hetero_cost_split", "hetero_methods"):
        for suffix in ("png", "pdf", "parquet"):
            assert (root / "figures" / f"{name}.{suffix}").stat().st_size > 1000, (name, suffix)
    curves = pl.read_parquet(root / "figures" / "hetero_cost_split.parquet")
    # 2 workloads x 2 models x 5 x 3 limit pairs x 4095 splits
    assert curves.height == 2 * 2 * 15 * 4095
    table = pl.read_parquet(root / "assets" / "hetero_allocations.parquet")
    for row in table.filter(pl.col("method") != "baseline_as_written").iter_rows(named=True):
        on_curve = curves.filter(
            (pl.col("workload") == row["workload"]) & (pl.col("model") == row["model"]) & (pl.col("batch_1") == row["batch_split"][0])
            & (pl.col("power_limit_1") == row["power_limits"][0]) & (pl.col("power_limit_2") == row["power_limits"][1])
        )  # fmt: skip
        assert on_curve["cost"].to_list() == [row["cost"]]  # the marked optimum lies on its curve, bit for bit
    bars = pl.read_parquet(root / "figures" / "hetero_methods.parquet")
    assert bars.select("workload", "bar").rows() == [
        (w, b) for b in ("baseline", "heuristic", "brute force", "sync optimum") for w in ("cifar100", "imagenet")
    ]
