"""The bundled carbon-intensity table as an asset, and the public traces' replay in CO2e per region (``zeus_cluster_co2e``)."""

from __future__ import annotations

import polars as pl
import pytest

from pipelines.clusters import carbon
from pipelines.contracts.base import empty, validate
from pipelines.contracts.clusters import ZeusClusterSummary
from pipelines.contracts.grid import GridIntensity, ZeusClusterCo2e
from pipelines.defs.clusters.co2e import Co2eConfig, zeus_cluster_co2e
from pipelines.defs.grid.assets import grid_intensity
from pipelines.figures.clusters import co2e_by_region


def summary() -> pl.DataFrame:
    """Two workloads of itp on the V100, one of elasticflow on the A40, and a user trace (left out: not public)."""
    rows = [("itp", "imagenet", "v100", 10, 7.2e9, 9.0e9), ("itp", "cifar100", "v100", 5, 1.8e9, 3.6e9),
            ("elasticflow", "squad", "a40", 4, 3.6e9, 7.2e9), ("lab", "squad", "v100", 3, 1e9, 2e9)]
    frame = pl.DataFrame(rows, schema={"trace": pl.String, "dataset": pl.String, "gpu": pl.String, "jobs": pl.Int64,
                                       "energy_j_zeus": pl.Float64, "energy_j_default": pl.Float64}, orient="row")
    return pl.concat([empty(ZeusClusterSummary), frame], how="diagonal_relaxed")


def test_the_table_asset_is_the_bundled_table_and_follows_its_contract() -> None:
    table = validate(grid_intensity().value, GridIntensity, name="grid_intensity")
    assert table.height == 274 and table.filter(pl.col("region") == "DE").row(0, named=True)["gco2_per_kwh"] == 380.95


def test_co2e_per_public_trace_gpu_and_region_is_the_replays_kwh_at_each_intensity(tmp_path) -> None:
    table = grid_intensity().value
    out = zeus_cluster_co2e(Co2eConfig(regions=["de", "SE3"]), zeus_cluster_summary=summary(), grid_intensity=table).value
    out = validate(out, ZeusClusterCo2e, name="zeus_cluster_co2e")
    assert out.select("trace", "gpu", "region").rows() == [("elasticflow", "a40", "DE"), ("elasticflow", "a40", "SE3"),
                                                          ("itp", "v100", "DE"), ("itp", "v100", "SE3")]  # no user trace
    itp_de = out.filter((pl.col("trace") == "itp") & (pl.col("region") == "DE")).row(0, named=True)
    assert (itp_de["jobs"], itp_de["default_kwh"], itp_de["zeus_kwh"]) == (15, pytest.approx(3500.0), pytest.approx(2500.0))
    assert itp_de["co2e_saved_kg"] == pytest.approx(1000.0 * 0.38095)  # 1,000 kWh saved at 380.95 g/kWh
    assert itp_de["co2e_saved_pct"] == pytest.approx(100 * (1 - 2500 / 3500))
    with pytest.raises(ValueError, match=r"regions \['XX'\] are not in grid_intensity"):
        zeus_cluster_co2e(Co2eConfig(regions=["XX"]), zeus_cluster_summary=summary(), grid_intensity=table)
    fig, data = co2e_by_region(out)
    assert data.height == 4 and [ax.get_ylabel() for ax in fig.axes] == ["CO2e saved vs Default (kg)"] * 2


def test_rows_follow_trace_gpu_and_the_regions_asked_and_a_zero_default_has_no_percentage() -> None:
    """By hand: 1,000 kWh (Default) and 500 kWh (Zeus) of itp on the V100, nothing on its A40, 1 kWh and 0.5 kWh of elasticflow
    on the V100; SE3 at 40 g/kWh and DE at 400, asked in that order. A kWh at 40 g is 0.04 kg: a percentage all the same."""
    rows = [("itp", "imagenet", "v100", 2, 1.8e9, 3.6e9), ("itp", "squad", "a40", 1, 0.0, 0.0),
            ("elasticflow", "squad", "v100", 1, 1.8e6, 3.6e6)]
    frame = pl.DataFrame(rows, schema={"trace": pl.String, "dataset": pl.String, "gpu": pl.String, "jobs": pl.Int64,
                                       "energy_j_zeus": pl.Float64, "energy_j_default": pl.Float64}, orient="row")
    intensity = pl.DataFrame({"region": ["DE", "SE3", "FR"], "gco2_per_kwh": [400.0, 40.0, 50.0], "year": [2023, 2023, 2023]})
    out = carbon.co2e_by_region(pl.concat([empty(ZeusClusterSummary), frame], how="diagonal_relaxed"), intensity, ["SE3", "de"])
    assert out.select("trace", "gpu", "region", "default_co2e_kg", "zeus_co2e_kg", "co2e_saved_pct").rows() == [
        ("elasticflow", "v100", "SE3", pytest.approx(0.04), pytest.approx(0.02), pytest.approx(50.0)),
        ("elasticflow", "v100", "DE", pytest.approx(0.4), pytest.approx(0.2), pytest.approx(50.0)),
        ("itp", "a40", "SE3", 0.0, 0.0, None),
        ("itp", "a40", "DE", 0.0, 0.0, None),
        ("itp", "v100", "SE3", pytest.approx(40.0), pytest.approx(20.0), pytest.approx(50.0)),
        ("itp", "v100", "DE", pytest.approx(400.0), pytest.approx(200.0), pytest.approx(50.0)),
    ]
