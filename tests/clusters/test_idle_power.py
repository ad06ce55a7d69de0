"""Idle GPUs in cluster power: the idle columns and fleet energy worked out by hand, and the job-energy invariant left whole."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from pipelines.clusters import power
from pipelines.clusters.capacity import Capacity
from pipelines.contracts.power import ClusterPower, ClusterPowerSummary
from pipelines.vocabulary import GPU_BY_NAME

V100_IDLE = GPU_BY_NAME["v100"].idle_w


def _history(runs: list[tuple[str, float, float, float, int]], trace: str = "t", gpu: str = "v100") -> pl.DataFrame:
    """(policy, start s, simulated time s, per-GPU draw W, num_gpu) -> history rows; energy = draw x time x num_gpu."""
    return pl.DataFrame(
        [{"trace": trace, "gpu": gpu, "policy": p, "start_time_s": s, "end_time_s": s + t, "energy_j": w * t * n, "num_gpu": n,
          "time_s": t} for p, s, t, w, n in runs],
        schema={"trace": pl.String, "gpu": pl.String, "policy": pl.String, "start_time_s": pl.Float64, "end_time_s": pl.Float64,
                "energy_j": pl.Float64, "num_gpu": pl.Int64, "time_s": pl.Float64},
    )


def _size(gpus: int, start: float, end: float, trace: str = "t") -> dict[str, Capacity]:
    return {trace: Capacity(trace, gpus, "test", 0, start, end)}


def test_idle_columns_and_fleet_energy_by_hand() -> None:
    # 5 GPUs, window [10, 890) -> bins [0, 900). Default: 2 GPUs at 200 W for 600 s; Zeus: 2 GPUs at 150 W for 900 s.
    history = _history([("default", 0, 600, 200, 2), ("zeus", 0, 900, 150, 2)])
    size = _size(5, 10, 890)
    bins = power.power_bins(history, bin_s=300, capacity=size)
    ClusterPower.validate(bins, cast=False)
    default = bins.filter(pl.col("policy") == "default")
    assert default.select("cluster_gpus", "idle_gpus", "idle_power_w").rows() == [(5, 3.0, 3 * V100_IDLE)] * 2
    assert power.energy_mismatches(bins, history) == []  # the job column alone holds the jobs' energy
    summary = power.power_summary(bins, size)
    ClusterPowerSummary.validate(summary, cast=False)
    d, z = (summary.filter(pl.col("policy") == p).row(0, named=True) for p in ("default", "zeus"))
    # Default: 3 idle GPUs for 600 s in its bins + all 5 for the 300 s of the window after them
    assert d["window_s"] == 900 and d["idle_gpu_h"] == pytest.approx((3 * 600 + 5 * 300) / 3600)
    assert d["idle_energy_j"] == pytest.approx(3300 * V100_IDLE) and d["fleet_energy_j"] == pytest.approx(240_000 + 3300 * V100_IDLE)
    assert z["idle_energy_j"] == pytest.approx(2700 * V100_IDLE) and z["busy_gpu_h"] == pytest.approx(0.5)
    assert z["energy_saved_pct"] == pytest.approx(100 * (1 - 270_000 / 240_000))
    assert z["fleet_energy_saved_pct"] == pytest.approx(100 * (1 - (270_000 + 2700 * V100_IDLE) / (240_000 + 3300 * V100_IDLE)))
    assert d["fleet_peak_kw"] == pytest.approx((400 + 3 * V100_IDLE) / 1000)
    assert d["fleet_mean_kw"] == pytest.approx((240_000 + 3300 * V100_IDLE) / 900 / 1000)
    assert d["gpu_idle_w"] == V100_IDLE and d["over_capacity_gpu_h"] == 0


def test_bins_outside_the_window_idle_nothing_and_a_crowded_bin_counts_over_capacity() -> None:
    # window [0, 300): the run's second bin lies outside it; 1 GPU in a cluster of 1 holding 2
    history = _history([("default", 0, 600, 100, 2)])
    size = _size(1, 0, 300)
    bins = power.power_bins(history, bin_s=300, capacity=size)
    assert bins.select("idle_gpus", "idle_power_w").rows() == [(0.0, 0.0), (0.0, 0.0)]
    row = power.power_summary(bins, size).row(0, named=True)
    assert row["over_capacity_gpu_h"] == pytest.approx(600 / 3600) and row["idle_energy_j"] == 0.0
    assert row["window_s"] == 300 and row["fleet_energy_j"] == row["energy_j"]
    # the window rounds out to whole bins: [10, 290) is the bin [0, 300)
    assert power.power_summary(power.power_bins(history, 300, capacity=_size(3, 10, 290)), _size(3, 10, 290))["window_s"][0] == 300


def test_without_a_cluster_size_the_fleet_columns_are_null_and_the_rest_unchanged() -> None:
    history = _history([("default", 0, 600, 200, 2), ("zeus", 100, 700, 150, 2)])
    plain, sized = power.power_bins(history, 300), power.power_bins(history, 300, capacity=_size(8, 0, 800))
    assert plain["idle_power_w"].null_count() == plain.height
    assert plain.drop("cluster_gpus", "idle_gpus", "idle_power_w").equals(sized.drop("cluster_gpus", "idle_gpus", "idle_power_w"))
    summary = power.power_summary(plain)
    assert summary["fleet_energy_j"].null_count() == 2 and summary["energy_saved_pct"].to_list() == [0.0, pytest.approx(100 * (1 - 210_000 / 240_000))]
    with pytest.raises(ValueError, match="no cluster size for trace"):
        power.power_bins(history, 300, capacity=_size(8, 0, 800, trace="other"))
    with pytest.raises(ValueError, match="made without it"):
        power.power_summary(plain, _size(8, 0, 800))
    with pytest.raises(ValueError, match="GPU 'h100' has no idle draw"):
        power.power_bins(_history([("zeus", 0, 10, 100, 1)], gpu="h100"), 300, capacity=_size(8, 0, 800))


def test_idle_gpu_time_is_the_clusters_gpu_time_less_the_jobs_on_a_random_history() -> None:
    rng = np.random.default_rng(24)
    n = 400
    starts, times = rng.uniform(0, 50_000, n), rng.exponential(3000, n)
    history = _history([(p, float(s), float(t), float(w), int(g)) for p in ("default", "zeus")
                        for s, t, w, g in zip(starts, times, rng.uniform(50, 250, n), rng.integers(1, 9, n), strict=True)])
    ends = starts + times
    size = _size(2000, float(starts.min()), float(ends.max()))  # large enough never to be crowded
    bins = power.power_bins(history, 300, capacity=size)
    assert power.energy_mismatches(bins, history) == []
    summary = power.power_summary(bins, size)
    for row in summary.iter_rows(named=True):
        busy_gpu_s = float((history.filter(pl.col("policy") == row["policy"])
                            .select((pl.col("num_gpu") * pl.col("time_s")).sum())).item())
        assert row["over_capacity_gpu_h"] == 0
        # every run of this history lies inside the window, so: idle = cluster x window - busy
        assert row["idle_gpu_h"] * 3600 == pytest.approx(2000 * row["window_s"] - busy_gpu_s, rel=1e-9)
        assert row["idle_energy_j"] == pytest.approx(row["idle_gpu_h"] * 3600 * V100_IDLE, rel=1e-12)
