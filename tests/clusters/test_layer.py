"""The cluster layer in-process on small inputs: Alibaba and Acme fixtures plus slices of ITP/ElasticFlow."""

import functools
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from pipelines.clusters.simulate import summarize
from pipelines.home.atomic import write_parquet_atomic
from pipelines.home.paths import ProjectPaths
from tests.support.figures import assert_figure
from tests.support.materialize import Homes, Step
from tests.support.zeus_peer import Peer


def _acme_fixture() -> pl.DataFrame:
    t0 = datetime(2023, 3, 1, tzinfo=UTC)
    rows = []
    for i in range(12):
        start = t0 + timedelta(hours=3 * i)
        rows.append({
            "cluster": "seren", "job_id": f"j{i}", "user": f"u{i % 2}", "node_num": 1, "gpu_num": 8 if i % 2 else 1,
            "cpu_num": 16, "mem_per_pod_gb": None, "shared_mem_per_pod": None, "type": "SFT", "state": "COMPLETED" if i < 10 else "FAILED",
            "submit_time": start, "start_time": start, "end_time": start + timedelta(seconds=600 * (i + 1)),
            "fail_time": None, "stop_time": None, "duration": 600 * (i + 1), "queue": 0.0, "gpu_time": 600.0 * (i + 1) * (8 if i % 2 else 1),
        })
    return pl.DataFrame(rows)


TRACES = ("alibaba", "itp", "elasticflow", "acme")
#: The (gpu|trace) partitions replayed.
REPLAYED = ("v100|alibaba", "v100|acme", "a40|itp")


def _small_inputs(src: ProjectPaths, home: ProjectPaths) -> None:
    """The tables the layer reads: Zeus's from the ingested home, slices of ITP/ElasticFlow, Alibaba and Acme fixtures."""
    from pipelines.contracts.base import empty
    from pipelines.contracts.owncluster import OwnClusterJobs

    root = home.root
    (root / "assets").mkdir()
    for table in ("zeus_train_runs", "zeus_power_profiles"):
        shutil.copy(src.table(table), root / "assets" / f"{table}.parquet")
    write_parquet_atomic(pl.read_parquet(src.table("itp_jobs")).filter(pl.col("cluster") == "cluster10"), root / "assets/itp_jobs.parquet")
    write_parquet_atomic(pl.read_parquet(src.table("elasticflow_jobs")).filter(pl.col("cluster") == "testbed"),
                         root / "assets/elasticflow_jobs.parquet")
    alibaba = pl.DataFrame({
        "group": ["g-a"] * 4 + ["g-b"] * 3,
        "start_time": [0.0, 100.0, 100.0, 5000.0, 10.0, 20.0, 30.0],
        "end_time": [900.0, 1000.0, 1300.0, 6000.0, 400.0, 500.0, 700.0],
        "dataset": ["cifar100"] * 4 + ["squad"] * 3,
        "runtime_ratio": [0.9, 0.9, 1.2, 1.0, 0.8, 1.0, 1.2],
    })
    write_parquet_atomic(alibaba, root / "assets/alibaba_groups.parquet")
    write_parquet_atomic(_acme_fixture().cast(pl.read_parquet(src.table("acme_jobs")).schema), root / "assets/acme_jobs.parquet")
    write_parquet_atomic(empty(OwnClusterJobs), root / "assets/own_cluster_jobs.parquet")  # no trace of your own here


@pytest.fixture(scope="module")
def layer(ingested, materialized: Homes):
    src, _ = ingested
    home = materialized(
        *(Step(["cluster_workload_jobs"], trace) for trace in TRACES),
        *(Step(["zeus_cluster_history", "zeus_cluster_summary"], key) for key in REPLAYED),
        prepare=functools.partial(_small_inputs, src), traces=TRACES, name="layer",
    )
    first, replays = home.results[: len(TRACES)], home.results[len(TRACES):]
    return home.root, list(first), dict(zip(REPLAYED, replays, strict=True))


def _workload_jobs(root: Path) -> pl.DataFrame:
    return pl.concat([pl.read_parquet(root / f"assets/cluster_workload_jobs/{trace}.parquet") for trace in TRACES])


def test_layer_runs_and_checks_pass(layer) -> None:
    root, first, results = layer
    assert all(r.success for r in first) and all(r.success for r in results.values())
    for result in (*first, *results.values()):
        assert all(e.passed for e in result.get_asset_check_evaluations())
    assert all(len(r.get_asset_check_evaluations()) == 1 for r in first)  # runtime_ratio_means_one, per trace partition
    jobs = _workload_jobs(root)
    assert dict(jobs.group_by("trace").len().iter_rows()) == {"alibaba": 7, "acme": 10, "itp": 260, "elasticflow": 195}


def test_alibaba_fixture_history_and_summary(layer, mirror: Path) -> None:
    root, _, _ = layer
    history = pl.read_parquet(root / "assets/zeus_cluster_history/v100__alibaba.parquet")
    summary = pl.read_parquet(root / "assets/zeus_cluster_summary/v100__alibaba.parquet")
    assert set(history["policy"]) == {"zeus", "default", "grid-search"}
    default = history.filter(pl.col("policy") == "default")
    # Default: b0 (cifar100 1024, squad 32) at the V100's maximum limit, once per job (it always reaches).
    assert default.filter(pl.col("dataset") == "cifar100")["batch_size"].unique().to_list() == [1024]
    assert default["power_limit_w"].unique().to_list() == [250]
    assert default.height == 7 and default["reached"].all()
    # Every job of the trace appears under every policy and reaches the target in its last attempt.
    for policy in ("zeus", "default", "grid-search"):
        rows = history.filter(pl.col("policy") == policy)
        assert rows.select(pl.struct("cluster", "job_id").n_unique()).item() == 7
        assert rows.group_by("job_id").agg(pl.col("reached").last())["reached"].all()
    assert summary["jobs"].to_list() == [4, 3]
    # Zeus's totals per workload are those of the published simulator (zeus==0.16.0) replaying the same
    # groups at the layer's knobs (eta 0.5, beta 2); Alibaba jobs run on one GPU, so no scaling.
    jobs = _workload_jobs(root).filter(pl.col("trace") == "alibaba")
    groups = jobs.select("group", start_time="start_time_s", end_time="end_time_s", dataset="dataset", runtime_ratio="runtime_ratio")
    published = {group: runs for group, runs in Peer(mirror / "zeus").groups(groups, "v100", 0.5, 2.0)}
    totals = {group: (sum(r[2] for r in runs), sum(r[3] for r in runs)) for group, runs in published.items()}  # (J, s)
    zeus = summary.select("dataset", "energy_j_zeus", "time_s_zeus").rows()
    assert [row[0] for row in zeus] == ["cifar100", "squad"]  # g-a and g-b
    assert [row[1:] for row in zeus] == [pytest.approx(totals["g-a"], rel=1e-12), pytest.approx(totals["g-b"], rel=1e-12)]
    zeus_runs = history.filter(pl.col("policy") == "zeus").group_by("group").len()
    assert dict(zeus_runs.iter_rows()) == {group: len(runs) for group, runs in published.items()}


def test_summary_totals_and_savings_by_hand() -> None:
    """A history with round numbers: totals, MWh and savings worked out by hand below."""
    rows = [  # (dataset, policy, cluster, job_id, attempt, energy J, time s, reached)
        ("cifar100", "zeus", "c1", "j1", 0, 100.0, 10.0, False),  # a miss, retried
        ("cifar100", "zeus", "c1", "j1", 1, 200.0, 20.0, True),
        ("cifar100", "zeus", "c2", "j1", 0, 300.0, 30.0, True),  # same job id in another cluster: another job
        ("cifar100", "default", "c1", "j1", 0, 400.0, 20.0, True),
        ("cifar100", "default", "c2", "j1", 0, 800.0, 40.0, True),
        ("cifar100", "grid-search", "c1", "j1", 0, 500.0, 50.0, True),
        ("cifar100", "grid-search", "c2", "j1", 0, 700.0, 30.0, True),
        ("squad", "zeus", "c1", "j2", 0, 90.0, 9.0, True),
        ("squad", "default", "c1", "j2", 0, 60.0, 12.0, True),  # no Grid Search run for squad
    ]
    history = pl.DataFrame(
        [{"trace": "t", "gpu": "v100", "policy": p, "cluster": c, "group": f"{c}/{d}", "job_id": j, "dataset": d, "num_gpu": 1,
          "attempt": a, "start_time_s": 0.0, "end_time_s": 1.0, "batch_size": 32, "power_limit_w": 250, "energy_j": e, "time_s": t,
          "reached": r} for d, p, c, j, a, e, t, r in rows]
    )  # fmt: skip
    summary = {row["dataset"]: row for row in summarize(history).iter_rows(named=True)}
    cifar, squad = summary["cifar100"], summary["squad"]
    # cifar100: Zeus 100 + 200 + 300 = 600 J over 10 + 20 + 30 = 60 s; Default 400 + 800 = 1200 J, 20 + 40 = 60 s;
    # Grid Search 500 + 700 = 1200 J, 50 + 30 = 80 s. Savings: 1 - 600/1200 = 50 %, 1 - 60/60 = 0 %, 1 - 60/80 = 25 %.
    assert (cifar["jobs"], cifar["energy_j_zeus"], cifar["energy_j_default"], cifar["energy_j_grid_search"]) == (2, 600.0, 1200.0, 1200.0)
    assert (cifar["time_s_zeus"], cifar["time_s_default"], cifar["time_s_grid_search"]) == (60.0, 60.0, 80.0)
    assert cifar["energy_mwh_default"] == pytest.approx(1200 / 3.6e9, rel=1e-15)  # 1 MWh = 3.6e9 J
    assert cifar["energy_savings_vs_default_pct"] == pytest.approx(50.0) and cifar["time_savings_vs_default_pct"] == pytest.approx(0.0)
    assert cifar["energy_savings_vs_grid_search_pct"] == pytest.approx(50.0)
    assert cifar["time_savings_vs_grid_search_pct"] == pytest.approx(25.0)
    # squad: Zeus used more energy than Default (90 J vs 60 J: -50 %) and less time (9 s vs 12 s: 25 %); no Grid Search.
    assert (squad["jobs"], squad["energy_savings_vs_default_pct"]) == (1, pytest.approx(-50.0))
    assert squad["time_savings_vs_default_pct"] == pytest.approx(25.0)
    assert squad["energy_j_grid_search"] is None and squad["energy_savings_vs_grid_search_pct"] is None


def test_acme_fixture_scales_energy_by_gpus(layer) -> None:
    root, _, _ = layer
    history = pl.read_parquet(root / "assets/zeus_cluster_history/v100__acme.parquet")
    assert history.select(pl.struct("cluster", "job_id").n_unique()).item() == 10  # FAILED jobs are left out
    default = history.filter(pl.col("policy") == "default")
    # Default runs one config per workload, so energy / (time x num_gpu) is that config's average power per GPU,
    # the same for 1- and 8-GPU jobs: energy is scaled by num_gpu, time is not.
    power = default.group_by("dataset").agg((pl.col("energy_j") / pl.col("time_s") / pl.col("num_gpu")).alias("w"))
    for watts in power["w"]:
        assert max(watts) == pytest.approx(min(watts), rel=1e-12)
    assert set(default["num_gpu"]) == {1, 8}


def test_itp_partition_covers_cluster10(layer) -> None:
    root, _, _ = layer
    summary = pl.read_parquet(root / "assets/zeus_cluster_summary/a40__itp.parquet")
    assert summary["jobs"].sum() == 260 and summary["gpu"].unique().to_list() == ["a40"]
    assert (summary["energy_j_zeus"] > 0).all()


def test_cluster_figures_from_the_layer(layer, tmp_path: Path) -> None:
    from pipelines.clusters.carbon import co2e_by_region
    from pipelines.figures import catalog, clusters
    from pipelines.ingest.grid import region_table

    root, _, _ = layer
    frames = {name: pl.concat([pl.read_parquet(p) for p in sorted((root / "assets" / name).glob("*.parquet"))])
              for name in ("zeus_cluster_summary", "zeus_cluster_history")}
    frames["zeus_cluster_co2e"] = co2e_by_region(frames["zeus_cluster_summary"], region_table(), ["FR", "DE"])
    for asset in catalog.CLUSTERS.assets:
        report = catalog.render(asset, frames, tmp_path)
        assert not report.skipped and len(report.written) == 1, report
    summary = frames["zeus_cluster_summary"]
    savings = assert_figure(tmp_path, "clusters_savings_by_trace",
                            ["trace", "dataset", "gpu", "jobs", "energy_mwh_zeus", "energy_mwh_default",
                             "energy_savings_vs_default_pct", "time_savings_vs_default_pct"], rows=summary.height)
    assert savings["jobs"].sum() == 7 + 10 + 260
    co2e = assert_figure(tmp_path, "clusters_co2e_by_region", list(frames["zeus_cluster_co2e"].columns), rows=frames["zeus_cluster_co2e"].height)
    saved_kwh = (summary["energy_j_default"].sum() - summary["energy_j_zeus"].sum()) / 3.6e6
    assert co2e.filter(pl.col("region") == "DE")["co2e_saved_kg"].sum() == pytest.approx(saved_kwh * 0.38095, rel=1e-9)
    timeline = assert_figure(tmp_path, "clusters_timeline_energy", ["trace", "gpu", "policy", "day", "cumulative_energy_mwh"])
    # three (trace, GPU) partitions x three policies, each line non-decreasing from day 0 and ending on the policy's exact total
    history = frames["zeus_cluster_history"]
    totals = history.group_by("trace", "gpu", "policy").agg((pl.col("energy_j").sum() / 3.6e9).alias("total"))
    lines = timeline.group_by("trace", "gpu", "policy", maintain_order=True).agg(
        pl.col("day").first().alias("first_day"), pl.col("cumulative_energy_mwh").last().alias("last"),
        pl.col("cumulative_energy_mwh").diff().min().alias("min_step"), pl.len().alias("points"))
    joined = lines.join(totals, on=["trace", "gpu", "policy"])
    assert joined.height == 9 and (joined["first_day"] == 0.0).all() and (joined["min_step"] >= 0).all()
    assert joined["last"].to_list() == pytest.approx(joined["total"].to_list(), rel=1e-12)
    assert joined["points"].max() <= clusters.TIMELINE_POINTS + 1
    with pytest.raises(clusters.NoData):
        clusters.savings_by_trace(summary.clear())


def test_a_run_over_every_trace_records_each_partitions_own_rows(layer, materialized: Homes, tmp_path: Path) -> None:
    """One run over the 4 trace partitions (as `materialize` and a backfill run it), on an instance stored on disk:
    each partition's materialization holds its own row count, file and preview, not the run's total."""
    import dagster as dg

    from tests.support.materialize import resources

    root, _, _ = layer
    home = tmp_path / "home"
    shutil.copytree(root / "assets", home / "assets", ignore=shutil.ignore_patterns("cluster_*", "zeus_cluster_*"))
    definitions = materialized.definitions()
    tags = {"dagster/asset_partition_range_start": TRACES[0], "dagster/asset_partition_range_end": TRACES[-1]}
    with dg.DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions("trace", list(TRACES))
        result = dg.materialize([*(definitions.assets or []), *(definitions.asset_checks or [])], instance=instance, tags=tags,
                                selection=dg.AssetSelection.assets("cluster_workload_jobs"), resources=resources(home))
        assert result.success
        events = {trace: instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=dg.AssetKey("cluster_workload_jobs"),
                                                                               asset_partitions=[trace]), limit=1).records
                  for trace in TRACES}
    rows = {}
    for trace in TRACES:
        (record,) = events[trace]
        meta = record.asset_materialization.metadata
        path = home / f"assets/cluster_workload_jobs/{trace}.parquet"
        rows[trace] = pl.read_parquet(path).height
        assert meta["dagster/row_count"].value == rows[trace] and meta["path"].value == str(path)
        assert meta["preview"].value.count(f"| {trace} |") == min(rows[trace], 10)
    assert len(set(rows.values())) > 1 and all(rows.values())  # distinct counts, so a run total would have shown
