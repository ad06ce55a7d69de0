"""Cluster power: bins and summary on hand-made histories worked out by hand, and the energy
invariant (plus a brute-force recount of bins) on the real ITP and ElasticFlow replays."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipelines.clusters import power
from pipelines.clusters.capacity import Capacity as capacity_type
from pipelines.contracts.power import ClusterPower, ClusterPowerSummary
from tests.support.figures import assert_figure


def _history(runs: list[tuple[str, float, float, float, int]], trace: str = "t", gpu: str = "g") -> pl.DataFrame:
    """(policy, start s, end s, energy J, num_gpu) -> history rows of one trace and GPU; simulated time_s = end - start."""
    return pl.DataFrame(
        [{"trace": trace, "gpu": gpu, "policy": p, "start_time_s": s, "end_time_s": e, "energy_j": j, "num_gpu": n, "time_s": e - s}
         for p, s, e, j, n in runs],
        schema={"trace": pl.String, "gpu": pl.String, "policy": pl.String, "start_time_s": pl.Float64,
                "end_time_s": pl.Float64, "energy_j": pl.Float64, "num_gpu": pl.Int64, "time_s": pl.Float64},
    )


def _bins(frame: pl.DataFrame, policy: str = "default") -> list[tuple[float, float, float, float]]:
    rows = frame.filter(pl.col("policy") == policy).sort("bin_start_s")
    return list(rows.select("bin_start_s", "bin_end_s", "mean_power_w", "gpus_in_use").iter_rows())


def test_one_run_over_two_bins() -> None:
    # 600 J over [0, 600) s is 1 W; 300 s bins: two bins of 1 W, each with the run's 2 GPUs busy all along.
    bins = power.power_bins(_history([("default", 0.0, 600.0, 600.0, 2)]), bin_s=300.0)
    assert _bins(bins) == [(0.0, 300.0, 1.0, 2.0), (300.0, 600.0, 1.0, 2.0)]


def test_straddling_runs_zero_length_run_and_idle_gap() -> None:
    history = _history([
        ("default", 200.0, 500.0, 900.0, 1),    # 3 W: 100 s in bin 0 (300 J), 200 s in bin 1 (600 J)
        ("default", 100.0, 1000.0, 1800.0, 4),  # 2 W: 200 s in bin 0, full bins 1 and 2, 100 s in bin 3
        ("default", 450.0, 450.0, 300.0, 8),    # zero length: its 300 J go to bin 1 (holding 450 s), no GPU-time
        ("default", 1500.0, 1800.0, 600.0, 1),  # after an idle bin [1200, 1500); ends on the edge 1800: no extra bin
    ])
    got = _bins(power.power_bins(history, bin_s=300.0))
    want = [
        (0.0, 300.0, (300 + 2 * 200) / 300, (1 * 100 + 4 * 200) / 300),
        (300.0, 600.0, (600 + 2 * 300 + 300) / 300, (1 * 200 + 4 * 300) / 300),
        (600.0, 900.0, 2.0, 4.0),
        (900.0, 1200.0, 2 * 100 / 300, 4 * 100 / 300),
        (1200.0, 1500.0, 0.0, 0.0),
        (1500.0, 1800.0, 2.0, 1.0),
    ]
    assert [g[:2] for g in got] == [w[:2] for w in want]
    np.testing.assert_allclose([g[2:] for g in got], [w[2:] for w in want], rtol=1e-12, atol=0)
    total = sum(w[2] * 300 for w in want)
    assert total == pytest.approx(900 + 1800 + 300 + 600, rel=1e-12)


def test_bins_start_at_the_first_run_and_keys_are_apart() -> None:
    # Bins are multiples of bin_s on the trace's clock, from the bin of a key's first start to that of its last end.
    history = pl.concat([
        _history([("zeus", 1000.0, 1100.0, 50.0, 1)]),            # inside bin [900, 1200): 50 J / 300 s
        _history([("zeus", 250.0, 350.0, 100.0, 1)], gpu="h"),    # 1 W: 50 J in each of [0, 300) and [300, 600)
        _history([("zeus", 0.0, 0.0, 30.0, 1)], trace="u"),       # a lone zero-length run: one bin of 0.1 W
    ])
    bins = power.power_bins(history, bin_s=300.0)
    ClusterPower.validate(bins, cast=False)
    rows = bins.select("trace", "gpu", "bin_start_s", "mean_power_w").rows()
    assert rows == [("t", "g", 900.0, pytest.approx(50 / 300)), ("t", "h", 0.0, pytest.approx(50 / 300)),
                    ("t", "h", 300.0, pytest.approx(50 / 300)), ("u", "g", 0.0, pytest.approx(0.1))]
    assert power.energy_mismatches(bins, history) == []


def test_interleaved_keys_get_exactly_their_own_bins() -> None:
    # Runs of 2 traces x 2 GPUs x 2 policies, interleaved (the keys are numbered by their names' ranks, not joined on
    # them): each key's bins equal those of its runs binned alone (up to the rounding residue that the full-bin running
    # sum carries over from the keys before it), and the keys come out sorted.
    rng = np.random.default_rng(7)
    parts = []
    for i in range(400):
        trace, gpu, policy = ("t", "u")[i % 2], ("h", "g")[(i // 2) % 2], ("zeus", "default")[(i // 4) % 2]
        start = float(rng.uniform(0, 5000))
        parts.append(_history([(policy, start, start + float(rng.uniform(0, 2000)), float(rng.uniform(0, 1e5)), 1 + i % 3)],
                              trace=trace, gpu=gpu))
    history = pl.concat(parts)
    bins = power.power_bins(history, bin_s=300.0)
    assert bins.select(power.KEYS).unique(maintain_order=True).rows() == sorted(set(history.select(power.KEYS).rows()))
    for (trace, gpu, policy), alone in history.group_by(power.KEYS, maintain_order=True):
        mine = bins.filter((pl.col("trace") == trace) & (pl.col("gpu") == gpu) & (pl.col("policy") == policy))
        assert_frame_equal(mine, power.power_bins(alone, bin_s=300.0), check_exact=False, rel_tol=1e-12, abs_tol=1e-9)


def test_bin_length_is_configurable_and_the_invariant_check_can_fail() -> None:
    history = _history([("default", 0.0, 600.0, 600.0, 1), ("zeus", 30.0, 90.0, 120.0, 1)])
    bins = power.power_bins(history, bin_s=60.0)
    assert len(_bins(bins)) == 10 and {b[2] for b in _bins(bins)} == {1.0}
    assert [b[2] for b in _bins(bins, "zeus")] == [1.0, 1.0]  # 2 W for 30 s in [0, 60) and in [60, 120)
    assert power.energy_mismatches(bins, history) == []
    short = bins.with_columns(pl.when(pl.col("policy") == "zeus").then(pl.col("mean_power_w") * (1 - 1e-8)).otherwise("mean_power_w"))
    [problem] = power.energy_mismatches(short, history)
    assert problem.startswith("t/g/zeus: binned")
    assert power.energy_mismatches(bins.filter(pl.col("policy") == "default"), history) == ["t/g/zeus: only in the history"]


def test_a_large_keys_compiled_pass_is_numpys_bin_for_bin(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys of ``COMPILED_MIN_RUNS`` runs or more are binned by ``power_kernel``: the same table, bit for bit, as numpy's
    passes, on runs that start on bin edges, stay inside one bin, last no time, draw nothing, and span many bins; the
    carry from key to key included (three keys, in both engines)."""
    rng = np.random.default_rng(7)
    runs = []
    for policy, scale in (("default", 10.0), ("grid-search", 1e4), ("zeus", 1e6)):
        n = 3_000
        start = np.where(rng.random(n) < 0.3, np.round(rng.random(n) * 1e6 / 300) * 300, rng.random(n) * 1e6)
        length = np.where(rng.random(n) < 0.1, 0.0, rng.exponential(scale, n))
        energy = rng.exponential(1e6, n) * (rng.random(n) > 0.05)
        runs += [("t", "g", policy, s, s + t, j, int(g)) for s, t, j, g in zip(start, length, energy, rng.integers(0, 9, n), strict=True)]
    history = pl.DataFrame(runs, schema={"trace": pl.String, "gpu": pl.String, "policy": pl.String, "start_time_s": pl.Float64,
                                         "end_time_s": pl.Float64, "energy_j": pl.Float64, "num_gpu": pl.Int64}, orient="row")
    in_numpy = power.power_bins(history, occupancy="trace")
    monkeypatch.setattr(power, "COMPILED_MIN_RUNS", 1)
    compiled = power.power_bins(history, occupancy="trace")
    assert_frame_equal(compiled, in_numpy, check_exact=True)
    assert in_numpy.height > 3_000 and in_numpy["mean_power_w"].sum() > 0


def test_simulated_occupancy_spreads_energy_over_time_s() -> None:
    # 600 J in a [0, 600) slot but a simulated time of 150 s: 4 W over [0, 150) instead of 1 W over the slot.
    history = _history([("zeus", 0.0, 600.0, 600.0, 2)]).with_columns(pl.lit(150.0).alias("time_s"))
    simulated = power.power_bins(history, bin_s=100.0)  # the default
    assert _bins(simulated, "zeus") == [(0.0, 100.0, 4.0, 2.0), (100.0, 200.0, 2.0, 1.0)]
    assert [b[2] for b in _bins(power.power_bins(history, bin_s=100.0, occupancy="trace"), "zeus")] == [1.0] * 6
    with pytest.raises(power.HistoryError, match="time_s"):
        power.power_bins(history.drop("time_s"), occupancy="simulated")


def test_bad_histories_are_refused() -> None:
    with pytest.raises(power.HistoryError, match="end_time_s: before start_time_s"):
        power.power_bins(_history([("zeus", 10.0, 5.0, 1.0, 1)]))
    with pytest.raises(power.HistoryError, match="energy_j: negative"):
        power.power_bins(_history([("zeus", 0.0, 5.0, -1.0, 1)]))
    with pytest.raises(power.HistoryError, match="missing column"):
        power.power_bins(_history([("zeus", 0.0, 5.0, 1.0, 1)]).drop("num_gpu"))
    with pytest.raises(ValueError, match="bin_s"):
        power.power_bins(_history([("zeus", 0.0, 5.0, 1.0, 1)]), bin_s=0.0)
    assert power.power_bins(_history([])).schema == power.POWER_SCHEMA
    assert power.power_summary(power.power_bins(_history([]))).schema == power.SUMMARY_SCHEMA


def test_summary_by_hand() -> None:
    # 100 s bins, one run per bin. Default: 1000, 3000, 2000, 500 W on 1, 2, 2, 1 GPUs; Zeus: 800, 1800, 1400, 400 W.
    slots = [(0.0, 100.0, 1), (100.0, 200.0, 2), (200.0, 300.0, 2), (300.0, 400.0, 1)]
    runs = [("default", s, e, w * 100, n) for (s, e, n), w in zip(slots, (1000, 3000, 2000, 500), strict=True)]
    runs += [("zeus", s, e, w * 100, n) for (s, e, n), w in zip(slots, (800, 1800, 1400, 400), strict=True)]
    history = pl.concat([_history(runs), _history([("zeus", 0.0, 100.0, 1e4, 1)], gpu="no-default")])
    summary = power.power_summary(power.power_bins(history, bin_s=100.0))
    ClusterPowerSummary.validate(summary, cast=False)
    rows = {(r["gpu"], r["policy"]): r for r in summary.iter_rows(named=True)}
    default, zeus, alone = rows["g", "default"], rows["g", "zeus"], rows["no-default", "zeus"]
    # p99 of 4 equal bins, linear interpolation: sorted[2] + 0.97 x (sorted[3] - sorted[2]) (position 0.99 x 3)
    assert default["p99_kw"] == pytest.approx((2000 + 0.97 * 1000) / 1000, rel=1e-12)
    assert zeus["p99_kw"] == pytest.approx((1400 + 0.97 * 400) / 1000, rel=1e-12)
    assert default["peak_kw"] == pytest.approx(3.0, rel=1e-15) and zeus["peak_kw"] == pytest.approx(1.8, rel=1e-15)
    assert default["mean_kw"] == pytest.approx(6.5 / 4) and zeus["mean_kw"] == pytest.approx(4.4 / 4)
    assert default["energy_j"] == pytest.approx(6.5e5) and default["bins"] == 4 and default["bin_s"] == 100.0
    assert default["default_peak_kw"] == zeus["default_peak_kw"] == default["peak_kw"]
    assert zeus["peak_vs_default_pct"] == pytest.approx(40.0) and default["peak_vs_default_pct"] == 0.0
    # only Default's 3000 W bin exceeds 0.9 x 3000 W
    assert (default["time_above_90pct_default_peak_s"], zeus["time_above_90pct_default_peak_s"]) == (100.0, 0.0)
    assert default["peak_gpus_in_use"] == zeus["peak_gpus_in_use"] == 2.0
    # Per-busy-GPU draw, weighted by GPU-seconds (100, 200, 200, 100 of 600): Default 1000, 1500, 1000, 500 W,
    # Zeus 800, 900, 700, 400 W. The lowest draw whose weighted CDF reaches 0.99 x 600 = 594 GPU-s is the top one.
    assert default["gpu_p99_w"] == pytest.approx(1500.0) and zeus["gpu_p99_w"] == pytest.approx(900.0)
    # headroom = floor((Default peak - p99) / gpu_p99): Default floor(30 / 1500) = 0, Zeus floor(1212 / 900) = 1
    assert default["headroom_gpus"] == 0 and zeus["headroom_gpus"] == 1
    for column in ("default_peak_kw", "peak_vs_default_pct", "time_above_90pct_default_peak_s", "headroom_gpus"):
        assert alone[column] is None
    assert alone["peak_kw"] == pytest.approx(0.1) and alone["gpu_p99_w"] == pytest.approx(100.0)


def test_load_duration_sorts_power_descending() -> None:
    bins = power.power_bins(_history([("default", 0.0, 100.0, 1e5, 1), ("default", 100.0, 200.0, 3e5, 1),
                                      ("default", 300.0, 400.0, 2e5, 1)]), bin_s=100.0)
    curve = power.load_duration(bins)
    assert curve.select("hours", "power_kw").rows() == [(100 / 3600, 3.0), (200 / 3600, 2.0), (300 / 3600, 1.0), (400 / 3600, 0.0)]


# ---------------------------------------------------------------------------------------------
# the real replays: ITP and ElasticFlow on the V100, every policy


@pytest.fixture(scope="module")
def real(ingested) -> dict[str, tuple[pl.DataFrame, pl.DataFrame]]:
    """trace -> (zeus_cluster_history, cluster_power) of the V100 replay, built from the mirror as the assets do (idle GPUs included)."""
    from pipelines.clusters import capacity, mapping, simulate
    from pipelines.clusters.workloads import workloads_by_default_tta
    from pipelines.defs.clusters.assets import BETA, ETA
    from pipelines.zeus.traces import from_frames

    paths, _ = ingested
    tables = {t: pl.read_parquet(paths.table(t)) for t in ("zeus_train_runs", "zeus_power_profiles", "itp_jobs", "elasticflow_jobs")}
    traces = from_frames(tables["zeus_train_runs"], tables["zeus_power_profiles"])
    jobs = {"itp": mapping.map_itp(tables["itp_jobs"], workloads_by_default_tta(traces)),
            "elasticflow": mapping.map_elasticflow(tables["elasticflow_jobs"])}
    out = {}
    for trace, rows in jobs.items():
        history = simulate.simulate_trace(rows, traces, "v100", eta=ETA, beta=BETA)
        REAL_SIZES[trace] = capacity.resolve(trace, rows)
        out[trace] = (history, power.power_bins(history, capacity=REAL_SIZES))
    return out


#: trace -> its cluster (published size and window), filled by the fixture ``real``.
REAL_SIZES: dict[str, capacity_type] = {}


def test_energy_invariant_and_gpu_time_on_real_partitions(real) -> None:
    for trace, (history, bins) in real.items():
        assert set(bins["policy"]) == {"zeus", "default", "grid-search"}, trace
        ClusterPower.validate(bins, cast=False)
        assert power.energy_mismatches(bins, history) == [], trace
        # the same spreading conserves GPU-seconds: sum(gpus_in_use x bin) = sum(num_gpu x simulated time_s)
        busy = bins.group_by("policy").agg((pl.col("gpus_in_use") * power.BIN_S).sum().alias("binned"))
        runs = history.group_by("policy").agg((pl.col("num_gpu") * pl.col("time_s")).sum().alias("runs"))
        joined = busy.join(runs, on="policy")
        np.testing.assert_allclose(joined["binned"], joined["runs"], rtol=1e-9)
        # the idle GPUs have columns of their own: inside the window, cluster GPUs - busy ones, never below 0
        size = REAL_SIZES[trace]
        assert (bins["cluster_gpus"] == size.cluster_gpus).all() and bins["idle_power_w"].min() >= 0
        inside = bins.filter((pl.col("bin_end_s") > size.window_start_s) & (pl.col("bin_start_s") < size.window_end_s))
        np.testing.assert_allclose(inside["idle_gpus"], (size.cluster_gpus - inside["gpus_in_use"]).clip(lower_bound=0), rtol=1e-12)


def test_real_bins_recounted_by_brute_force(real) -> None:
    """Each sampled bin's energy = sum over every run of power x overlap, recomputed run by run (no sweep)."""
    rng = np.random.default_rng(18)
    for trace, (history, bins) in real.items():
        for policy in ("zeus", "default"):
            runs = history.filter(pl.col("policy") == policy)
            b = bins.filter(pl.col("policy") == policy)
            s, d, j = (runs[c].to_numpy() for c in ("start_time_s", "time_s", "energy_j"))
            e = s + d  # a run occupies its simulated time from its start
            rate = j / d  # no zero-length run in these replays
            peak = float(b["mean_power_w"].max())
            picks = np.unique(np.append(rng.choice(b.height, 40, replace=False), b["mean_power_w"].arg_max()))
            for lo, hi, mean_w in b[picks].select("bin_start_s", "bin_end_s", "mean_power_w").iter_rows():
                overlap = np.clip(np.minimum(e, hi) - np.maximum(s, lo), 0.0, None)
                # The running sum of the full-bin powers carries rounding of order 1e-16 x the cluster's power per bin
                # it passes: 1e-9 x the peak (about 1 mW here) bounds it over the whole trace.
                assert mean_w == pytest.approx(float(np.sum(rate * overlap)) / (hi - lo), rel=1e-9, abs=1e-9 * peak), (trace, policy, lo)


def test_real_summary_and_figures(real, tmp_path: Path) -> None:
    from pipelines.figures import catalog

    bins = pl.concat([b for _, b in real.values()])
    summary = power.power_summary(bins, REAL_SIZES)
    ClusterPowerSummary.validate(summary, cast=False)
    assert summary.height == 6 and summary["default_peak_kw"].null_count() == 0
    default = summary.filter(pl.col("policy") == "default")
    assert (default["peak_vs_default_pct"] == 0.0).all()
    assert (default["time_above_90pct_default_peak_s"] >= power.BIN_S).all()  # Default's own peak bin is above 90% of it
    # fleet energy: the jobs plus the cluster's GPUs without a job over the trace's window (the same for every policy)
    for row in summary.iter_rows(named=True):
        size = REAL_SIZES[row["trace"]]
        mine = bins.filter((pl.col("trace") == row["trace"]) & (pl.col("policy") == row["policy"]))
        inside = mine.filter((pl.col("bin_end_s") > size.window_start_s) & (pl.col("bin_start_s") < size.window_end_s))
        busy_inside = float((inside["gpus_in_use"].clip(upper_bound=size.cluster_gpus) * power.BIN_S).sum())
        assert row["idle_gpu_h"] * 3600 == pytest.approx(size.cluster_gpus * row["window_s"] - busy_inside, rel=1e-9)
        assert row["fleet_energy_j"] == pytest.approx(row["energy_j"] + row["idle_gpu_h"] * 3600 * row["gpu_idle_w"], rel=1e-12)
        assert size.window_s <= row["window_s"] < size.window_s + 2 * power.BIN_S
    for asset in catalog.CLUSTER_POWER.assets:
        report = catalog.render(asset, {"cluster_power": bins}, tmp_path)
        assert not report.skipped and list(report.written) == [asset.key], report
    timeline = assert_figure(tmp_path, "clusters_timeline_power", ["trace", "gpu", "policy", "day", "power_kw"],
                             rows=bins.filter(pl.col("policy") != "grid-search").height)
    peaks = timeline.group_by("trace", "policy").agg(pl.col("power_kw").max()).join(
        summary.select("trace", "policy", "peak_kw"), on=["trace", "policy"])
    np.testing.assert_allclose(peaks["power_kw"], peaks["peak_kw"], rtol=1e-12)
    curve = assert_figure(tmp_path, "clusters_power_load_duration", ["trace", "gpu", "policy", "hours", "power_kw"],
                          rows=timeline.height)
    assert curve.group_by("trace", "policy").agg(pl.col("power_kw").diff().max())["power_kw"].max() <= 0
