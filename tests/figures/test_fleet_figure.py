"""The figure ``clusters_fleet_power_cdf``: measured Seren and Kalos beside simulated Default and Zeus, whole fleets and busy GPUs,
the exact points drawn."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pipelines.figures import catalog
from pipelines.figures.errors import NoData
from pipelines.ingest.fleet import read_curves
from pipelines.vocabulary import GPU_BY_NAME
from tests.support.figures import assert_figure


def _frames(mirror: Path) -> dict[str, pl.DataFrame]:
    """Two traces on the V100 and the A40, Default and Zeus: one run each (4 GPUs for 1 h) and some idle GPU-hours."""
    rows, summary = [], []
    for trace in ("itp", "elasticflow"):
        for gpu in ("a40", "v100"):
            for policy, draw in (("default", 200.0), ("zeus", 150.0)):
                rows.append({"trace": trace, "gpu": gpu, "policy": policy, "num_gpu": 4, "time_s": 3600.0, "energy_j": 4 * draw * 3600})
                summary.append({"trace": trace, "gpu": gpu, "policy": policy, "cluster_gpus": 8,
                                "gpu_idle_w": GPU_BY_NAME[gpu].idle_w, "idle_gpu_h": 4.0})
    return {"fleet_power_cdf": read_curves(mirror).table, "zeus_cluster_history": pl.DataFrame(rows),
            "cluster_power_summary": pl.DataFrame(summary)}


def test_the_figure_draws_the_measured_and_simulated_cdfs_of_the_v100(mirror: Path, tmp_path: Path) -> None:
    asset = catalog.FLEET_POWER.assets[0]
    report = catalog.render(asset, _frames(mirror), tmp_path)
    assert list(report.written) == ["clusters_fleet_power_cdf"] and not report.skipped
    data = assert_figure(tmp_path, "clusters_fleet_power_cdf", ["panel", "occupancy", "curve", "source", "gpu", "pct_tdp", "cdf_pct"])
    assert data["panel"].unique(maintain_order=True).to_list() == ["ITP", "ElasticFlow"]
    assert data["occupancy"].unique(maintain_order=True).to_list() == ["whole", "busy"]
    assert set(data.filter(pl.col("source") == "simulated")["gpu"]) == {"v100"}  # the figure's GPU
    # whole fleets, per panel: the two measured curves (1,000 points each) and Default and Zeus as steps: idle half, busy half
    itp = data.filter((pl.col("panel") == "ITP") & (pl.col("occupancy") == "whole"))
    assert itp.filter(pl.col("source") == "measured").height == 2000
    default = itp.filter(pl.col("curve") == "Default (simulated, V100)")
    assert default["pct_tdp"].to_list() == pytest.approx([14.4, 14.4, 80.0, 80.0])
    assert default["cdf_pct"].to_list() == pytest.approx([0.0, 50.0, 50.0, 100.0])
    # busy GPUs: Default's run alone (one atom at 80 %); the measured curves from the point where F crosses the idle
    # share on: Seren's 315 and Kalos's 339 points at 0 % utilisation leave 1,000 - 315 + 1 and 1,000 - 339 + 1 points
    busy = data.filter((pl.col("panel") == "ITP") & (pl.col("occupancy") == "busy"))
    default = busy.filter(pl.col("curve") == "Default (simulated, V100)")
    assert default["pct_tdp"].to_list() == pytest.approx([80.0, 80.0]) and default["cdf_pct"].to_list() == pytest.approx([0.0, 100.0])
    measured = busy.filter(pl.col("source") == "measured").group_by("curve", maintain_order=True).len()
    assert measured.rows() == [("Seren (measured, A100)", 686), ("Kalos (measured, A100)", 662)]


def test_without_a_sized_fleet_there_is_nothing_to_draw(mirror: Path) -> None:
    from pipelines.figures import fleet_power

    frames = _frames(mirror)
    with pytest.raises(NoData, match="no simulated fleet"):
        fleet_power.fleet_power_cdfs(frames["fleet_power_cdf"], frames["zeus_cluster_history"],
                                     frames["cluster_power_summary"].with_columns(pl.lit(None, pl.Int64).alias("cluster_gpus")))
