"""Cluster sizes: the trace's peak concurrent GPUs, the published sizes with their sources, and the settings that override them."""

from __future__ import annotations

import polars as pl
import pytest

from pipelines.clusters import capacity


def _jobs(slots: list[tuple[float, float, int]]) -> pl.DataFrame:
    return pl.DataFrame(slots, schema={"start_time_s": pl.Float64, "end_time_s": pl.Float64, "num_gpu": pl.Int64}, orient="row")


def test_peak_concurrent_gpus_frees_before_it_takes_at_the_same_instant() -> None:
    # 4 GPUs on [0, 10), 2 on [5, 20), 3 on [10, 12): at 10 the first job's 4 are free before the third's 3 are taken
    assert capacity.peak_concurrent_gpus(_jobs([(0, 10, 4), (5, 20, 2), (10, 12, 3)])) == 6
    assert capacity.peak_concurrent_gpus(_jobs([(0, 10, 4), (9, 20, 2), (9.5, 12, 3)])) == 9
    assert capacity.peak_concurrent_gpus(_jobs([(3, 3, 100), (0, 1, 1)])) == 1  # a zero-length job holds nothing
    assert capacity.peak_concurrent_gpus(_jobs([])) == 0


def test_the_published_sizes_sum_their_clusters_and_name_their_source() -> None:
    assert capacity.PUBLISHED["itp"].gpus == 5 * 512 + 4 * 1024 + 256 == 6912
    assert capacity.PUBLISHED["elasticflow"].gpus == 6912 + 128
    assert capacity.PUBLISHED["acme"].gpus == 2288 + 2416
    assert "run_fig8b.sh" in capacity.PUBLISHED["itp"].source and "NSDI '24" in capacity.PUBLISHED["acme"].source
    assert set(capacity.PUBLISHED) == {"itp", "elasticflow", "acme"}


def test_a_setting_wins_a_published_size_wins_the_peak_and_the_window_is_the_traces() -> None:
    jobs = _jobs([(100, 200, 8), (150, 400, 8)])
    assert capacity.resolve("lab", jobs) == capacity.Capacity(
        "lab", 16, "the trace's peak concurrent GPUs (no published size)", 16, 100.0, 400.0)
    assert capacity.resolve("lab", jobs, 40).cluster_gpus == 40 and capacity.resolve("lab", jobs, 16).source == "set by --cluster-gpus"
    itp = capacity.resolve("itp", jobs)
    assert itp.cluster_gpus == 6912 and itp.source.startswith("published: ") and itp.window_s == 300.0
    # a published size below what the replay holds at once (no queueing) is raised to the peak, and says so
    crowded = capacity.cluster_capacity("elasticflow", "testbed", _jobs([(0, 10, 100), (0, 10, 84)]))
    assert crowded.cluster_gpus == 184 and "above the published 128" in crowded.source
    assert capacity.cluster_capacity("acme", "seren", jobs).cluster_gpus == 2288


def test_a_setting_below_the_peak_or_not_a_count_is_refused_naming_the_option() -> None:
    jobs = _jobs([(0, 10, 4), (5, 20, 2)])
    with pytest.raises(capacity.CapacityError, match=r"^--cluster-gpus 5 is below the trace's peak of 6 concurrent GPUs"):
        capacity.resolve("lab", jobs, 5)
    with pytest.raises(capacity.CapacityError, match=r"raw/clusters/lab.toml cluster_gpus 2 is below"):
        capacity.resolve("lab", jobs, 2, setting_name="raw/clusters/lab.toml cluster_gpus")
    for bad in (0, -3, 2.5, True, "8"):
        with pytest.raises(capacity.CapacityError, match="is not a whole number of GPUs >= 1"):
            capacity.check_setting(bad, "--cluster-gpus")
