"""``power_model_vs_measured``: measured rows from AcmeTrace's curves, simulated fleets worked by hand and checked
against scipy, and Seren's own jobs (from small job CSVs in AcmeTrace's schema, since the real ones are absent here)."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path
from types import ModuleType

import numpy as np
import polars as pl
import pytest

from pipelines.clusters import fleet, mapping, simulate
from pipelines.clusters.distributions import upper_share
from pipelines.clusters.workloads import workloads_by_default_tta
from pipelines.contracts.base import empty
from pipelines.contracts.clusters import ZeusClusterHistory
from pipelines.contracts.fleet import PowerModelVsMeasured
from pipelines.contracts.power import ClusterPowerSummary
from pipelines.ingest import acme
from pipelines.ingest.fleet import file_curves, read_curves
from pipelines.vocabulary import GPU_BY_NAME
from pipelines.zeus.traces import Traces, from_frames


@pytest.fixture(scope="module")
def fleet_cdf(mirror: Path) -> pl.DataFrame:
    return read_curves(mirror).table


def test_measured_rows_and_the_a100_idle_draw_come_from_the_curves(fleet_cdf: pl.DataFrame) -> None:
    table = fleet.compare(fleet_cdf, empty(ZeusClusterHistory), empty(ClusterPowerSummary))
    PowerModelVsMeasured.validate(table, cast=False)
    assert table["occupancy"].to_list() == ["whole", "whole", "busy", "busy"]
    seren, kalos = table.filter(pl.col("occupancy") == "whole").rows(named=True)
    # the data sources: medians about 97 W and 102 W of the A100's 400 W; about half of the GPU-time near idle
    assert seren["median_pct_tdp"] == pytest.approx(97 / 4, abs=0.25) and kalos["median_pct_tdp"] == pytest.approx(102 / 4, abs=0.25)
    assert 45 < seren["share_below_25pct_tdp"] < 60 and 45 < kalos["share_below_25pct_tdp"] < 60
    assert seren["ks_vs_seren"] == 0 and kalos["ks_vs_kalos"] == 0 and seren["ks_vs_kalos"] == kalos["ks_vs_seren"] > 0
    # the registry's A100 idle draw is the curves' low mode, derived in code
    assert fleet.measured_idle_w(fleet_cdf) == GPU_BY_NAME["a100"].idle_w == 63.6


def test_the_measured_busy_share_is_the_util_curves_mass_above_zero(mirror: Path, fleet_cdf: pl.DataFrame) -> None:
    # upstream y is linspace(0, 100, 1000): k points at 0 % utilisation put F(0) at (k - 1) / 999
    for cluster, name in (("seren", "util_gpu_seren"), ("kalos", "util_gpu_kalos")):
        x, _ = file_curves((mirror / f"acme/util_pkl/{name}.pkl").read_bytes(), f"acme/util_pkl/{name}.pkl", None)[0]
        at_zero = int((x == 0).sum())
        assert fleet.measured_busy_share(fleet_cdf, cluster) == pytest.approx(1 - (at_zero - 1) / 999, abs=1e-12)
    # about two thirds of the GPU-time busy on either cluster (315 and 339 of 1,000 points at 0 %)
    assert fleet.measured_busy_share(fleet_cdf, "seren") == pytest.approx(685 / 999, abs=1e-12)
    assert fleet.measured_busy_share(fleet_cdf, "kalos") == pytest.approx(661 / 999, abs=1e-12)


def test_measured_busy_rows_are_the_top_of_the_power_cdf(mirror: Path, fleet_cdf: pl.DataFrame) -> None:
    table = fleet.compare(fleet_cdf, empty(ZeusClusterHistory), empty(ClusterPowerSummary))
    seren, kalos = table.filter(pl.col("occupancy") == "busy").rows(named=True)
    whole = table.filter(pl.col("occupancy") == "whole")
    assert whole["busy_share_pct"].to_list() == [seren["busy_share_pct"], kalos["busy_share_pct"]]
    for row in (seren, kalos):
        # the busy median and p90 are the whole curve's quantiles at idle + 0.5 and 0.9 of the busy share,
        # read here from the raw pickle with numpy's interpolation
        name = f"acme/util_pkl/gpu_power_{row['cluster_or_trace']}.pkl"
        watts, cdf_pct = file_curves((mirror / name).read_bytes(), name, None)[0]
        busy = row["busy_share_pct"] / 100
        for level, column in ((0.5, "median_pct_tdp"), (0.9, "p90_pct_tdp")):
            assert row[column] == pytest.approx(np.interp(100 * (1 - busy + level * busy), cdf_pct, watts) / 4, abs=1e-9)
    # busy GPUs draw more: Seren's median from 24.1 to 34.8 % TDP, Kalos's from 25.4 to 69.2 %; still a third of
    # Seren's busy GPU-time below 25 % TDP (busy share 68.6 %, power below 25 % TDP 53.5 %)
    assert seren["median_pct_tdp"] == pytest.approx(34.83, abs=0.01) and kalos["median_pct_tdp"] == pytest.approx(69.15, abs=0.01)
    assert 100 - seren["busy_share_pct"] < whole["share_below_25pct_tdp"][0]
    assert seren["ks_vs_seren"] == 0 and kalos["ks_vs_kalos"] == 0 and seren["ks_vs_kalos"] == kalos["ks_vs_seren"] > 0
    assert "the top 68.6% of its CDF" in seren["note"]


def test_a_simulated_fleet_by_hand_and_its_ks_against_scipy(scipy_stats: ModuleType, fleet_cdf: pl.DataFrame) -> None:
    # a V100 fleet: 3 h of GPU-time at 200 W (80% TDP), 1 h at 100 W (40%), 6 h idle at 36 W (14.4%)
    history = pl.DataFrame({"trace": ["t"] * 2, "gpu": ["v100"] * 2, "policy": ["default"] * 2, "num_gpu": [3, 1],
                            "time_s": [3600.0, 3600.0], "energy_j": [3 * 200 * 3600.0, 100 * 3600.0]})
    idle_w = GPU_BY_NAME["v100"].idle_w
    summary = pl.DataFrame({"trace": ["t"], "gpu": ["v100"], "policy": ["default"], "cluster_gpus": [10], "gpu_idle_w": [idle_w],
                            "idle_gpu_h": [6.0]})
    table = fleet.compare(fleet_cdf, history, summary)
    row = table.filter(pl.col("source") == "simulated").row(0, named=True)
    assert (row["cluster_or_trace"], row["tdp_w"], row["cluster_gpus"]) == ("t", 250.0, 10)
    assert row["share_below_25pct_tdp"] == pytest.approx(60.0) and row["median_pct_tdp"] == pytest.approx(100 * idle_w / 250)
    assert row["p90_pct_tdp"] == pytest.approx(80.0)
    # the same fleet as a sample of 10 GPU-hours against Seren's curve: scipy's one-sample KS (no atom of Seren's falls on them)
    sample = np.repeat([80.0, 40.0, 100 * idle_w / 250], [3, 1, 6])
    seren = fleet.measured_pct_tdp(fleet_cdf, "seren")
    expected = scipy_stats.kstest(sample, seren.cdf).statistic
    assert row["ks_vs_seren"] == pytest.approx(expected, abs=1e-12)
    assert row["occupancy"] == "whole" and row["busy_share_pct"] == pytest.approx(40.0)
    # its running GPUs only: 3 GPU-hours at 80 %, 1 at 40 %; against Seren's busy GPUs (the top of its power CDF)
    busy = table.filter((pl.col("source") == "simulated") & (pl.col("occupancy") == "busy")).row(0, named=True)
    assert busy["busy_share_pct"] == pytest.approx(40.0) and busy["share_below_25pct_tdp"] == 0
    assert busy["median_pct_tdp"] == pytest.approx(80.0) and busy["p90_pct_tdp"] == pytest.approx(80.0)
    seren_busy = upper_share(seren, fleet.measured_busy_share(fleet_cdf, "seren"))
    expected = scipy_stats.kstest(np.repeat([80.0, 40.0], [3, 1]), seren_busy.cdf).statistic
    assert busy["ks_vs_seren"] == pytest.approx(expected, abs=1e-12) and busy["note"].endswith("running GPUs only")


def test_a_fleet_without_a_run_has_a_whole_row_and_no_busy_row(fleet_cdf: pl.DataFrame) -> None:
    summary = pl.DataFrame({"trace": ["t"], "gpu": ["v100"], "policy": ["default"], "cluster_gpus": [10],
                            "gpu_idle_w": [GPU_BY_NAME["v100"].idle_w], "idle_gpu_h": [6.0]})
    table = fleet.compare(fleet_cdf, empty(ZeusClusterHistory), summary).filter(pl.col("source") == "simulated")
    assert table.select("occupancy", "busy_share_pct", "share_below_25pct_tdp").rows() == [("whole", 0.0, 100.0)]


# ---------------------------------------------------------------------------------------------
# the same cluster: Seren's jobs (fixture CSVs in AcmeTrace's documented schema)

T0 = dt.datetime(2023, 8, 1, 8, 0, tzinfo=dt.UTC)


def _stamp(seconds: float, offset_h: int) -> str:
    local = T0 + dt.timedelta(seconds=seconds)
    return local.astimezone(dt.timezone(dt.timedelta(hours=offset_h))).isoformat(sep=" ")  # 2023-08-01 16:00:00+08:00


def write_acme(folder: Path, seren_jobs: int = 36, kalos_jobs: int = 8) -> tuple[Path, Path]:
    """trace_seren.csv (+08:00) and trace_kalos.csv (+00:00): COMPLETED GPU jobs of a few users, plus a failed and a CPU job."""
    rng = np.random.default_rng(2023)
    seren = [",".join(acme.SEREN_COLUMNS)]
    for i in range(seren_jobs):
        submit = float(rng.integers(0, 3 * 86_400))
        queue, duration, gpus = int(rng.integers(0, 60)), int(rng.integers(600, 20_000)), int(rng.choice([1, 2, 8]))
        state = "FAILED" if i == 0 else "COMPLETED"
        start = submit + queue
        seren.append(f"{1000 + i},u{i % 4},1,{gpus},{16 * gpus},{['SFT', 'Eval', 'Pretrain'][i % 3]},{state},{_stamp(submit, 8)},"
                     f"{_stamp(start, 8)},{_stamp(start + duration, 8)},{duration},{queue},{float(duration * gpus)}")
    seren.append(f"2000,u9,1,0,8,Other,COMPLETED,{_stamp(0, 8)},{_stamp(5, 8)},{_stamp(65, 8)},60,5,0.0")
    kalos = [",".join(acme.KALOS_COLUMNS)]
    for i in range(kalos_jobs):
        submit, queue, duration = float(rng.integers(0, 86_400)), 10, int(rng.integers(1_000, 9_000))
        start = submit + queue
        kalos.append(f"k{i},v{i % 2},8,64,960,1000,100.0,Pretrain,COMPLETED,{_stamp(submit, 0)},{_stamp(start, 0)},"
                     f"{_stamp(start + duration, 0)},,{_stamp(start + duration, 0)},{duration},{float(queue)},{float(duration * 64)}")
    paths = folder / "trace_seren.csv", folder / "trace_kalos.csv"
    for path, lines in zip(paths, (seren, kalos), strict=True):
        path.write_text("\n".join(lines) + "\n")
    return paths


@pytest.fixture(scope="module")
def traces(ingested) -> Traces:
    paths, _ = ingested
    return from_frames(pl.read_parquet(paths.table("zeus_train_runs")), pl.read_parquet(paths.table("zeus_power_profiles")))


@pytest.fixture(scope="module")
def seren(traces: Traces, tmp_path_factory: pytest.TempPathFactory) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(cluster_workload_jobs of trace acme, zeus_cluster_history of its A40 replay) from the fixture CSVs."""
    ingested = acme.read_jobs(*write_acme(tmp_path_factory.mktemp("acme")))
    assert ingested.quarantine.height == 0 and ingested.table.height == 36 + 1 + 8
    jobs = mapping.map_acme(ingested.table, workloads_by_default_tta(traces))
    assert jobs.filter(pl.col("cluster") == "seren").height == 35  # the failed and the CPU-only job are not replayed
    return jobs, simulate.simulate_trace(jobs, traces, "a40")


def test_without_an_a100_profile_serens_jobs_are_the_a40_fleet_of_serens_size(seren, fleet_cdf: pl.DataFrame) -> None:
    jobs, history = seren
    rows = fleet.same_cluster(jobs, history, None, eta=0.5, beta=2.0)
    assert [(f.trace, f.gpu, f.policy) for f, _ in rows] == [("acme/seren", "a40", p) for p in ("default", "grid-search", "zeus")]
    first, draws = rows[0]
    assert first.cluster_gpus == 2288 and first.tdp_w == 300.0 and first.idle_w == GPU_BY_NAME["a40"].idle_w
    assert "only Ampere GPU among the published profiles" in first.note and "NSDI '24" in first.note
    # only Seren's runs: Kalos's 64-GPU jobs draw on no Seren GPU
    seren_gpu_s = float(history.filter((pl.col("cluster") == "seren") & (pl.col("policy") == "default"))
                        .select((pl.col("num_gpu") * pl.col("time_s")).sum()).item())
    assert float(draws["gpu_s"].sum()) == pytest.approx(seren_gpu_s, rel=1e-12)
    # 2,288 GPUs over Seren's window (rounded out to 300 s bins) less the GPU-seconds of runs inside it
    w0, w1 = jobs.filter(pl.col("cluster") == "seren").select(pl.col("start_time_s").min(), pl.col("end_time_s").max()).row(0)
    w0, w1 = math.floor(w0 / 300) * 300, math.ceil(w1 / 300) * 300
    runs = history.filter((pl.col("cluster") == "seren") & (pl.col("policy") == "default"))
    starts, ends, gpus = runs["start_time_s"].to_numpy(), (runs["start_time_s"] + runs["time_s"]).to_numpy(), runs["num_gpu"].to_numpy()
    inside = float(np.sum(gpus * np.clip(np.minimum(ends, w1) - np.maximum(starts, w0), 0, None)))
    assert first.idle_gpu_s == pytest.approx(2288 * (w1 - w0) - inside, rel=1e-9)
    table = fleet.compare(fleet_cdf, empty(ZeusClusterHistory), empty(ClusterPowerSummary), rows)
    PowerModelVsMeasured.validate(table, cast=False)
    whole = table.filter((pl.col("cluster_or_trace") == "acme/seren") & (pl.col("occupancy") == "whole"))
    assert whole["median_pct_tdp"].to_list() == [pytest.approx(100 * GPU_BY_NAME["a40"].idle_w / 300)] * 3
    # Seren's running GPUs: their share of Seren's GPU-time, and a distribution of the busy draws alone
    busy = table.filter((pl.col("cluster_or_trace") == "acme/seren") & (pl.col("occupancy") == "busy"))
    assert busy["policy"].to_list() == ["default", "grid-search", "zeus"]
    assert busy["busy_share_pct"][0] == pytest.approx(100 * seren_gpu_s / (seren_gpu_s + first.idle_gpu_s), rel=1e-12)
    assert busy["share_below_25pct_tdp"][0] == 0 and busy["median_pct_tdp"][0] > 100 * GPU_BY_NAME["a40"].idle_w / 300


def test_a_measured_a100_profile_is_simulated_instead_with_the_a100s_tdp_and_idle_draw(seren, ingested) -> None:
    jobs, history = seren
    paths, _ = ingested
    profiles = pl.read_parquet(paths.table("zeus_power_profiles"))
    a100 = profiles.filter(pl.col("gpu") == "a40").with_columns(pl.lit("a100-test").alias("gpu"))  # stands in for a measured CSV
    traces = from_frames(pl.read_parquet(paths.table("zeus_train_runs")), pl.concat([profiles, a100]))
    assert fleet.a100_stand_in(traces.gpus()) == ("a100-test", True)
    rows = fleet.same_cluster(jobs, history, traces, eta=0.5, beta=2.0)
    first, draws = rows[0]
    assert (first.gpu, first.tdp_w, first.idle_w) == ("a100-test", 400.0, 63.6) and "measured A100 profile 'a100-test'" in first.note
    # the same configurations as the A40's (the profile is a copy), replayed again: the same per-GPU draws
    a40 = fleet.busy_draws(history.filter((pl.col("cluster") == "seren") & (pl.col("policy") == "default")))
    assert sorted(draws["draw_w"].to_list()) == pytest.approx(sorted(a40["draw_w"].to_list()))


def test_the_busy_share_and_draws_do_not_depend_on_the_order_of_the_rows() -> None:
    """power_model_vs_measured's busy_share_pct varied in its last bits from one `make figures` to the next: the group-by's rows
    came in another order and were summed in it. One 1e6 GPU-second run and ten of 0.1 s: a plain sum rounds differently when the
    large one comes first than when the small ones do."""
    history = pl.DataFrame({"trace": "t", "gpu": "v100", "policy": "zeus", "num_gpu": 1, "time_s": [1e6] + [0.1] * 10,
                            "energy_j": [2.5e8] + [10.0 + i for i in range(10)]})
    fleet_ = fleet.Fleet("t", "v100", "zeus", 300.0, 50.0, 8, 3.3e5, "test")
    shares = set()
    for seed in range(20):
        draws = fleet.busy_draws(history.sample(fraction=1.0, shuffle=True, seed=seed))
        assert draws.equals(fleet.busy_draws(history))  # sorted by (trace, gpu, policy, draw_w)
        shares.add(fleet.simulated_busy_share(draws.sample(fraction=1.0, shuffle=True, seed=seed), fleet_))
    assert shares == {math.fsum([1e6, *[0.1] * 10]) / (math.fsum([1e6, *[0.1] * 10]) + 3.3e5)}
