"""Cluster power of a replay split into partitions: the partitions' series added bin by bin are the whole's (issue 56)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipelines.clusters.power import power_bins
from pipelines.clusters.power_sum import sum_power


def history(start: list[float], end: list[float], energy: list[float], gpus: list[int], policy: str = "zeus") -> pl.DataFrame:
    n = len(start)
    return pl.DataFrame({"trace": ["t"] * n, "gpu": ["v100"] * n, "policy": [policy] * n, "start_time_s": start,
                         "end_time_s": end, "energy_j": energy, "num_gpu": gpus})


def test_two_runs_in_two_partitions_by_hand() -> None:
    """Run a: 0..300 s at 3,000 J (10 W, 1 GPU); run b: 150..450 s at 6,000 J (20 W, 2 GPUs); 300 s bins.
    Bin 0: a's 3,000 J + b's half, 3,000 J: 6,000 J / 300 s = 20 W, GPUs (300 + 2 x 150) / 300 = 2.
    Bin 1: b's other half, 3,000 J: 10 W, GPUs 2 x 150 / 300 = 1."""
    a = power_bins(history([0.0], [300.0], [3000.0], [1]), bin_s=300.0, occupancy="trace")
    b = power_bins(history([150.0], [450.0], [6000.0], [2]), bin_s=300.0, occupancy="trace")
    both = sum_power([b, a])
    assert both["bin_start_s"].to_list() == [0.0, 300.0] and both["bin_end_s"].to_list() == [300.0, 600.0]
    assert both["mean_power_w"].to_list() == pytest.approx([20.0, 10.0], rel=1e-12)
    assert both["gpus_in_use"].to_list() == pytest.approx([2.0, 1.0], rel=1e-12)
    assert both["idle_gpus"].null_count() == 2


def test_the_sum_of_partitions_is_the_whole() -> None:
    """Random runs (two policies) split into 4 partitions (one of only the late runs), a gap between partitions' spans included: the summed series is
    the whole's power_bins, bin for bin (idle columns aside: the whole's are null too, no cluster size given)."""
    rng = np.random.default_rng(56)
    frames = []
    for policy in ("default", "zeus"):
        start = rng.uniform(0, 50_000, 400)
        start[:100] += 200_000  # one partition's runs far later: bins between the spans are 0 W
        end = start + rng.uniform(0, 20_000, 400)
        frames.append(history(start.tolist(), end.tolist(), rng.uniform(0, 1e7, 400).tolist(), rng.integers(1, 9, 400).tolist(), policy))
    runs = pl.concat(frames).with_row_index("i")
    whole = power_bins(runs.drop("i"), occupancy="trace")
    late = (pl.col("i") % 400) < 100
    parts = [power_bins(runs.filter(late).drop("i"), occupancy="trace"),  # the late runs alone
             *(power_bins(runs.filter(~late & (pl.col("i") % 3 == p)).drop("i"), occupancy="trace") for p in range(3))]
    summed = sum_power(parts)
    assert summed.height == whole.height > 100
    assert_frame_equal(summed.drop("mean_power_w", "gpus_in_use"), whole.drop("mean_power_w", "gpus_in_use"))
    np.testing.assert_allclose(summed["mean_power_w"].to_numpy(), whole["mean_power_w"].to_numpy(), rtol=1e-9, atol=1e-6)
    np.testing.assert_allclose(summed["gpus_in_use"].to_numpy(), whole["gpus_in_use"].to_numpy(), rtol=1e-9, atol=1e-9)
    # the energy invariant: the summed bins hold every run's energy
    for policy, frame in zip(("default", "zeus"), frames, strict=True):
        energy = summed.filter(pl.col("policy") == policy).select((pl.col("mean_power_w") * 300.0).sum()).item()
        assert energy == pytest.approx(frame["energy_j"].sum(), rel=1e-9)


def test_bins_of_other_lengths_are_refused() -> None:
    a = power_bins(history([0.0], [300.0], [3000.0], [1]), bin_s=300.0, occupancy="trace")
    b = power_bins(history([0.0], [300.0], [3000.0], [1]), bin_s=60.0, occupancy="trace")
    with pytest.raises(ValueError, match="the partitions' bins differ in length"):
        sum_power([a, b])
    assert sum_power([]).height == 0
