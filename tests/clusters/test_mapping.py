"""cluster_workload_jobs: deterministic mapping, runtime_ratio semantics, clear errors."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from pipelines.clusters import mapping
from pipelines.vocabulary import ZEUS_DATASETS

ORDER = ["cifar100", "movielens-1m", "sentiment140", "squad", "librispeech", "imagenet"]


@pytest.fixture(scope="module")
def itp_jobs(ingested) -> pl.DataFrame:
    paths, _ = ingested
    return pl.read_parquet(paths.table("itp_jobs"))


def test_itp_mapping_is_deterministic_and_ratio_averages_one(itp_jobs: pl.DataFrame) -> None:
    a = mapping.map_itp(itp_jobs, ORDER)
    b = mapping.map_itp(itp_jobs.sample(fraction=1.0, shuffle=True, seed=7), ORDER)
    assert a.equals(b)
    assert a.height == 69_351 and set(a["dataset"]) == set(ZEUS_DATASETS)
    means = a.group_by("dataset").agg(pl.col("runtime_ratio").mean())["runtime_ratio"]
    assert means.to_list() == pytest.approx([1.0] * 6, abs=1e-12)
    # Slices follow the order: mean duration grows from cifar100 to imagenet.
    dur = a.group_by("dataset").agg((pl.col("end_time_s") - pl.col("start_time_s")).mean().alias("d"))
    d = dict(dur.iter_rows())
    assert [d[w] for w in ORDER] == sorted(d[w] for w in ORDER)


def test_elasticflow_uses_its_labels(ingested) -> None:
    paths, _ = ingested
    jobs = mapping.map_elasticflow(pl.read_parquet(paths.table("elasticflow_jobs")))
    assert jobs.height == 69_546
    # The testbed's 195 jobs reuse ITP job ids (this one is also in cluster02): job_id is unique per cluster only.
    row = jobs.filter((pl.col("job_id") == "bdd640fb-0667-1ad1-1c80-317fa3b1799d") & (pl.col("cluster") == "testbed")).row(0, named=True)
    assert row["dataset"] == "librispeech" and row["group"] == "testbed/deepspeech2/bs32/1gpu"
    assert row["end_time_s"] - row["start_time_s"] == 1075.0
    assert jobs.group_by("dataset").agg(pl.col("runtime_ratio").mean())["runtime_ratio"].to_list() == pytest.approx([1.0] * 5)


def test_alibaba_as_published_and_unknown_dataset_names_the_group() -> None:
    groups = pl.DataFrame(
        {"group": ["g1", "g1", "g2"], "start_time": [10.0, 0.0, 5.0], "end_time": [30.0, 10.0, 35.0],
         "dataset": ["squad", "squad", "imagenet"], "runtime_ratio": [1.0, 0.5, 1.0]}
    )
    jobs = mapping.map_alibaba(groups)
    assert jobs["job_id"].to_list() == ["g1#0", "g1#1", "g2#0"]
    assert jobs["runtime_ratio"].to_list() == pytest.approx([10 / 15, 20 / 15, 1.0])
    bad = groups.with_columns(pl.when(pl.col("group") == "g2").then(pl.lit("mnist")).otherwise("dataset").alias("dataset"))
    with pytest.raises(mapping.MappingError, match="group 'g2' has dataset 'mnist'"):
        mapping.map_alibaba(bad)


def test_acme_completed_gpu_jobs_only() -> None:
    t0 = datetime(2023, 3, 1, tzinfo=UTC)
    rows = []
    for i, (state, gpus, secs) in enumerate([("COMPLETED", 8, 100), ("FAILED", 8, 100), ("COMPLETED", 0, 50),
                                              ("COMPLETED", 8, 300), ("COMPLETED", 1, 7000)]):
        rows.append({"cluster": "seren", "job_id": str(i), "user": "u1", "type": "SFT", "gpu_num": gpus, "state": state,
                     "start_time": t0 + timedelta(seconds=i), "end_time": t0 + timedelta(seconds=i + secs)})
    jobs = mapping.map_acme(pl.DataFrame(rows), ORDER)
    assert jobs["job_id"].to_list() == ["4", "0", "3"]  # by group, then start time
    assert jobs["num_gpu"].to_list() == [1, 8, 8]
    assert jobs.filter(pl.col("group") == "seren/u1/SFT/8gpu").height == 2
    assert jobs["start_time_s"][1] == t0.timestamp()
