"""``whatif``'s answer anchored to what the cluster did: energy that follows the export's GPU-hours, idle allocations at the
idle draw, the steady state beside the export's period, the meter per GPU type, honest intervals, the clock and units."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from pipelines.clusters import anchoring, tracefiles, whatif
from pipelines.clusters.profiles import profiles_of
from pipelines.home.paths import REPO_ROOT
from pipelines.ingest.own_cluster import OwnTraceResult
from pipelines.ingest.simulator_inputs import read_trace_dir
from pipelines.ingest.slurm import EXPORT_COMMAND
from pipelines.report.text import co2e_text, plural, render
from pipelines.vocabulary import GPU_BY_NAME
from pipelines.zeus.traces import Traces
from tests.support import anchoring_peer
from tests.support.sacct_export import write_export

START = datetime(2024, 3, 1)


@pytest.fixture(scope="module")
def traces(mirror: Path) -> Traces:
    return read_trace_dir(mirror / "zeus")


def job_log(path: Path, jobs: list[dict[str, object]]) -> Path:
    """A job-log CSV (``pipelines.ingest.joblog``) of ``jobs``: hours (duration), gpus, util (optional), name, gpu_type, day (start)."""
    columns = ["job_id", "submit_time", "start_time", "end_time", "num_gpus", "state", "user", "name", "gpu_type", "gpu_util_pct"]
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(columns)
        for k, job in enumerate(jobs):
            start = START + timedelta(days=float(job.get("day", k)))  # type: ignore[arg-type]
            end = start + timedelta(hours=float(job["hours"]))  # type: ignore[arg-type]
            util = job.get("util")
            out.writerow([f"j{k}", start.isoformat(), start.isoformat(), end.isoformat(), job.get("gpus", 1), "COMPLETED", "alice",
                          job.get("name", "train"), job.get("gpu_type", "v100"), "" if util is None else util])
    return path


def read(path: Path) -> OwnTraceResult:
    return tracefiles.read_trace(path, whatif.trace_name_for(path), tracefiles.format_of(path, None), "UTC", source_file=path.name)


def run(path: Path, traces: Traces, **options: object) -> dict:
    return whatif.run(read(path), profiles_of(traces), whatif.Options(**options))[0]  # type: ignore[arg-type]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pipelines", "whatif", *args], capture_output=True, text=True, check=False, cwd=REPO_ROOT)


def test_energy_follows_the_exported_gpu_hours(tmp_path: Path, traces: Traces) -> None:
    """Six 1-GPU V100 jobs of one group that ran 1 h each, and the same six that ran 100 h each: the anchored energy is 100 times
    larger (the artifact's runtime_ratio sizing gives the same kWh for both: the durations divide out), the saving the same."""
    # the same group (it seeds the optimizer), a month apart (no run, retries included, overlaps the next job): the same replay
    (tmp_path / "1h").mkdir(), (tmp_path / "100h").mkdir()
    short = job_log(tmp_path / "1h" / "lab.csv", [{"hours": 1, "day": 30 * k} for k in range(6)])
    long = job_log(tmp_path / "100h" / "lab.csv", [{"hours": 100, "day": 30 * k} for k in range(6)])
    one, hundred = (run(p, traces, samples=1)["gpus"]["v100"] for p in (short, long))
    assert (one["gpu_hours"], hundred["gpu_hours"]) == (pytest.approx(6.0), pytest.approx(600.0))
    for name in ("default_kwh", "zeus_kwh", "energy_saved_kwh"):
        assert hundred[name] == pytest.approx(100 * one[name], rel=1e-9), name
    assert hundred["energy_saved_pct"] == pytest.approx(one["energy_saved_pct"], rel=1e-9)
    # the Default run of each job lasts its elapsed time, at the replay's power: between the V100's idle draw and its TDP
    v100 = GPU_BY_NAME["v100"]
    for row in (one, hundred):
        assert row["default_hours"] == pytest.approx(row["gpu_hours"], rel=1e-9)
        assert v100.idle_w < 1000 * row["default_kwh"] / row["gpu_hours"] < v100.tdp_w
    artifact = [run(p, traces, samples=1, energy_model=anchoring.RUNTIME_RATIO)["gpus"]["v100"] for p in (short, long)]
    assert artifact[0]["default_kwh"] == pytest.approx(artifact[1]["default_kwh"], rel=1e-12)  # the defect anchoring removes


def test_anchored_energy_of_a_small_export_by_hand(tmp_path: Path, traces: Traces, mirror: Path) -> None:
    """Three 2-GPU V100 jobs of one group, 1 h, 2 h and 5 h, a month apart. One group plays the workload of shortest Default
    time to accuracy (movielens-1m on the V100: ncf, adam, b0 1024). Every Default run draws the power trace's average power
    of b0 at its largest limit (250 W): the published row ``movielens-1m,ncf,1024,adam,250,19.298333333333336,
    38.031461503088636``. Anchored, each GPU draws it for the job's elapsed time: 2 GPUs x 38.031461503088636 W x (1 + 2 + 5) h
    = 608.5033840494182 Wh; one job at a time, the peak is 2 x 38.03... W."""
    row = "movielens-1m,ncf,1024,adam,250,19.298333333333336,38.031461503088636"
    assert row in (mirror / "zeus" / "summary_power_v100.csv").read_text().splitlines()
    path = job_log(tmp_path / "lab.csv", [{"hours": h, "gpus": 2, "day": 30 * k} for k, h in enumerate((1, 2, 5))])
    v100 = run(path, traces, samples=1)["gpus"]["v100"]
    assert v100["jobs_by_workload"] == {"movielens-1m": 3}
    assert (v100["gpu_hours"], v100["default_hours"]) == (16.0, 8.0)
    assert v100["default_kwh"] == pytest.approx(0.6085033840494182, rel=1e-12)
    assert v100["default_peak_kw"] == pytest.approx(2 * 38.031461503088636 / 1000, rel=1e-12)


def test_mixed_export_draws_plausible_power_and_matches_the_meter(tmp_path: Path, traces: Traces) -> None:
    """A generated mixed A100/V100/A40/H100 export with Slurm's meter (130-290 W per GPU): every row's mean power per GPU lies
    between its profile GPU's idle draw and TDP, and measured/modelled per job is tight, overall and per GPU type."""
    path = tmp_path / "mixed.sacct"
    write_export(path, 1200, seed=3, energy="measured", span_days=20)
    report = whatif.run(tracefiles.read_trace(path, "mixed", "sacct", "Europe/Berlin", source_file=path.name), profiles_of(traces),
                        whatif.Options(samples=2))[0]
    assert report["energy_model"] == "anchored"
    for key, g in report["gpus"].items():
        gpu = GPU_BY_NAME[g["replayed_on"]]
        watts = 1000 * g["default_kwh"] / g["gpu_hours"]
        assert gpu.idle_w < watts < gpu.tdp_w, (key, watts)
    total = report["total"]
    assert total["gpu_hours"] == pytest.approx(sum(g["gpu_hours"] for g in report["gpus"].values()), rel=1e-9)
    m = report["measured"]
    assert 0.5 <= m["ratio_median"] <= 2 and m["ratio_p75"] / m["ratio_p25"] < 4
    assert set(m["by_row"]) == set(report["gpus"])
    for key, b in m["by_row"].items():
        assert 0.5 <= b["ratio_median"] <= 2, key
    assert sum(b["jobs"] for b in m["by_row"].values()) == m["jobs"]


def test_idle_allocations_are_counted_at_the_idle_draw_not_replayed(tmp_path: Path, traces: Traces) -> None:
    jobs = [{"hours": 10, "gpus": 2, "util": 0, "name": "notebook"}] * 3 + [{"hours": 2, "util": 80}] * 12
    path = job_log(tmp_path / "lab.csv", jobs)
    report = run(path, traces, samples=1)
    u = report["utilization"]
    idle_w = GPU_BY_NAME["v100"].idle_w
    top = [{"job_id": f"j{k}", "user": "alice", "gpu_type": "v100", "gpu_hours": pytest.approx(20.0), "gpu_util_pct": 0.0} for k in range(3)]
    assert u == {"source": "the job log's gpu_util_pct", "threshold_pct": 10.0, "jobs_with_util": 15, "low_util_jobs": 3,
                 "low_util_gpu_hours": pytest.approx(60.0), "low_util_kwh": pytest.approx(60.0 * idle_w / 1000),
                 "low_util_job_ids": ["j0", "j1", "j2"], "low_util_top": top}
    assert report["simulated_jobs"] == 12 and report["gpus"]["v100"]["jobs"] == 12
    assert report["gpus"]["v100"]["gpu_hours"] == pytest.approx(24.0)
    assert "3 COMPLETED GPU jobs below 10 % GPU utilisation" in render(report)
    everything = run(path, traces, samples=1, min_gpu_util_pct=0.0)
    assert everything["simulated_jobs"] == 15 and everything["utilization"]["low_util_jobs"] == 0
    bare = run(job_log(tmp_path / "bare.csv", [{"hours": 2}] * 4), traces, samples=1)["utilization"]
    assert bare["source"] is None and bare["jobs_with_util"] == 0 and "no GPU utilisation" in bare["note"]


@pytest.mark.slow
def test_the_steady_state_does_not_depend_on_the_exports_period(tmp_path: Path, traces: Traces) -> None:
    """The same generated cluster over the same 60 days, 5,000 and 50,000 allocations (10 times the recurrences per group):
    the steady-state saving agrees within 3 points, while the period's saving grows with the recurrences."""
    reports = []
    for n in (5_000, 50_000):
        path = tmp_path / f"c{n}.sacct"
        write_export(path, n, seed=11, steps=False)
        reports.append(whatif.run(tracefiles.read_trace(path, "c", "sacct", "Europe/Berlin", source_file=path.name), profiles_of(traces),
                                  whatif.Options(samples=3))[0]["total"])
    small, large = reports
    assert abs(small["steady_state_saved_pct"] - large["steady_state_saved_pct"]) < 3
    assert small["energy_saved_pct"] < large["energy_saved_pct"]  # more recurrences amortise the exploration
    for r in reports:
        low, high = r["steady_state_saved_pct_interval"]
        assert low <= r["steady_state_saved_pct"] <= high


@pytest.mark.parametrize("gpu", ["v100", "a40"])
def test_converged_ratio_is_the_cost_optimal_batch_size_at_its_profiled_limit(traces: Traces, mirror: Path, gpu: str) -> None:
    """Against a second implementation from the formula over the trace CSVs (tests/support/anchoring_peer.py, no helper of
    the package): the batch size of lowest expected cost, each at the limit JIT profiling picks, over b0 at its maximum
    limit, for every workload whose artifact b0 the GPU profiled, energy only, time only and between."""
    for dataset in ("cifar100", "imagenet", "squad", "movielens-1m", "sentiment140"):
        for eta in (0.0, 0.5, 1.0):
            expected = anchoring_peer.converged_ratio(mirror / "zeus", gpu, dataset, eta)
            assert anchoring.converged_ratio(traces, gpu, dataset, eta) == pytest.approx(expected, rel=1e-12), (dataset, eta)


def test_few_jobs_get_no_interval_and_say_so(tmp_path: Path, traces: Traces) -> None:
    path = job_log(tmp_path / "four.csv", [{"hours": 3}] * 4)
    report = run(path, traces, samples=5)
    row = report["gpus"]["v100"]
    assert row["interval_note"] == "too few jobs (4) for an interval"
    assert row["energy_saved_pct_interval"] == [None, None] and row["default_kwh_interval"] == [None, None]
    assert row["energy_saved_pct"] is not None
    assert "no interval: v100 (too few jobs (4) for an interval); all GPUs (too few jobs (4) for an interval)" in render(report)


@pytest.mark.slow
def test_the_clock_is_named_when_assumed(tmp_path: Path, mirror: Path) -> None:
    path = job_log(tmp_path / "clock.csv", [{"hours": 1}] * 3)
    common = ("--trace-dir", str(mirror / "zeus"), "--samples", "1", "--no-progress")
    assumed = cli(str(path), *common)
    assert assumed.returncode == 0, assumed.stderr
    assert assumed.stdout.splitlines()[0].startswith("Times read as UTC (assumed)") and "--timezone" in assumed.stdout.splitlines()[0]
    given = cli(str(path), *common, "--timezone", "UTC", "--json")
    assert json.loads(given.stdout)["timezone_source"] == "given"
    assert json.loads(cli(str(path), *common, "--json").stdout)["timezone_source"] == "assumed"
    assert not cli(str(path), *common, "--timezone", "UTC").stdout.startswith("Times read as")


def test_units_read_by_magnitude_and_counts_agree_with_their_nouns(tmp_path: Path, traces: Traces) -> None:
    assert [co2e_text(kg) for kg in (0.0685, 4.2, 68.5, 1310.0)] == ["68.5 g", "4.20 kg", "68.5 kg", "1.31 t"]
    assert (plural(1, "allocation"), plural(2, "allocation"), plural(1200, "job")) == ("1 allocation", "2 allocations", "1,200 jobs")
    assert "ConsumedEnergyRaw" in EXPORT_COMMAND and "TRESUsageInTot" in EXPORT_COMMAND
    report = run(job_log(tmp_path / "one.csv", [{"hours": 1}]), traces, samples=1, grid_gco2_per_kwh=400.0)
    text = render(report)
    assert "1 header + 1 allocation + 0 steps skipped" in text and "e-0" not in text
    assert re.search(r"saved on all GPUs: .* \d+\.\d+ (g|kg) CO2e at 400 g/kWh", text), text  # grams, not "0.00 t"
    assert "[" not in text.split("saved on all GPUs:")[1].splitlines()[0]  # a single replay: no interval, not a zero-width one


def test_the_html_title_holds_the_files_name_not_its_path(tmp_path: Path, traces: Traces) -> None:
    from pipelines.report import html as whatif_html

    folder = tmp_path / "private" / "home"
    folder.mkdir(parents=True)
    path = job_log(folder / "cluster.csv", [{"hours": 2}] * 3)
    result = tracefiles.read_trace(path, "cluster", "csv", "UTC", source_file=str(path))
    report, power = whatif.run(result, profiles_of(traces), whatif.Options(samples=1), keep_power=True)
    page = whatif_html.render(report, power, whatif_html.Provenance.now("cluster.csv", None, {}, "whatif cluster.csv"))
    title = page.split("<title>")[1].split("</title>")[0]
    assert "cluster.csv" in title and str(folder) not in title
    # a name holding ESC and other control bytes: they are written as escapes in the title and the heading, never raw
    hostile = job_log(folder / "\x1b[2J\x1b]8;;x\x07cluster\r.csv", [{"hours": 2}] * 3)
    report["file"] = str(hostile)
    page = whatif_html.render(report, power, whatif_html.Provenance.now(hostile.name, None, {}, "whatif"))
    title, heading = page.split("<title>")[1].split("</title>")[0], page.split("<h1>")[1].split("</h1>")[0]
    assert title == heading == "What if Zeus had tuned \\x1b[2J\\x1b]8;;x\\x07cluster\\r.csv?"


def test_the_horizon_projects_the_exports_recurrence_rate(tmp_path: Path, traces: Traces) -> None:
    """A horizon as long as the export's window is the export itself; a long one converges to the steady state."""
    path = job_log(tmp_path / "lab.csv", [{"hours": 2 + k % 3, "day": 2 * k, "name": f"t{k % 4}"} for k in range(40)])
    window_days = 2 * 39 + 2 / 24  # first start to the last end: the last job starts on day 78 and runs 2 + 39 % 3 = 2 h
    same = run(path, traces, samples=1, horizon_days=window_days)["total"]
    for period, ahead in (("default_kwh", "horizon_default_kwh"), ("zeus_kwh", "horizon_zeus_kwh"), ("energy_saved_pct", "horizon_saved_pct")):
        assert same[ahead] == pytest.approx(same[period], rel=1e-9), ahead
    # past the export's window the gap to the steady state shrinks as 1 / horizon: 10x shorter at 10x the days (the
    # longest --horizon, a century, leaves it under 0.1 points), and Default's energy grows in proportion to the days
    near, far = (run(path, traces, samples=1, horizon_days=days)["total"] for days in (3_650.0, 36_500.0))
    gaps = [t["steady_state_saved_pct"] - t["horizon_saved_pct"] for t in (near, far)]
    assert 0 < gaps[1] < 0.1 and gaps[0] / gaps[1] == pytest.approx(10.0, rel=0.02)
    assert far["horizon_default_kwh"] == pytest.approx(same["default_kwh"] * 36_500.0 / window_days, rel=1e-6)


def test_a_zeus_profile_replays_its_gpu_power_limit_only(tmp_path: Path, traces: Traces, mirror: Path) -> None:
    """``--profiles a40=<a ZeusMonitor log>``: the A40 jobs run as GlobalPowerLimitOptimizer would (each group's first job
    profiles, then the chosen limit), sized by their own elapsed time; the other rows replay Zeus as before."""
    from pipelines.clusters.profiles import power_limit_profiles
    from pipelines.zeus.power_limit_replay import replay_power_limit_only

    log = mirror / "zeus" / "profile_data" / "A40+resnet50+gpu0.csv"
    jobs = [{"hours": 1 + k % 3, "day": k, "gpu_type": "a40", "name": f"r{k % 2}"} for k in range(8)] + [{"hours": 2, "day": k}
                                                                                                       for k in range(8)]
    path = job_log(tmp_path / "lab.csv", jobs)
    profiles = profiles_of(traces).with_power_limit(power_limit_profiles([f"a40={log}"]))
    report = whatif.run(read(path), profiles, whatif.Options(samples=2))[0]
    a40 = report["gpus"]["a40"]
    assert a40["power_limit_only"] and a40["profile_source"] == "power limit only (measured profile A40+resnet50+gpu0.csv)"
    assert a40["interval_note"].startswith("power limit only") and report["gpus"]["v100"]["power_limit_only"] is False
    # the same numbers as the optimizer's replay of the A40 jobs in start order
    plo = profiles.power_limit["a40"]
    mine = [j for j in jobs if j.get("gpu_type") == "a40"]
    runs = replay_power_limit_only(plo.measurements, plo.selector(0.5), pl.DataFrame(
        {"group": [f"alice/{j['name']}/1gpu" for j in mine], "runtime_s": [3600.0 * j["hours"] for j in mine], "gpus": [1] * len(mine)}))
    assert runs["profiled"].sum() == 2  # one profiling job per recurring group
    assert a40["zeus_kwh"] == pytest.approx(runs["energy_j"].sum() / 3.6e6, rel=1e-9)
    assert a40["default_kwh"] == pytest.approx(runs["default_energy_j"].sum() / 3.6e6, rel=1e-9)
    assert a40["steady_state_saved_pct"] == pytest.approx(100 * (1 - plo.converged_ratio(0.5)), rel=1e-9)
    done = cli(str(path), "--trace-dir", str(mirror / "zeus"), "--samples", "1", "--timezone", "UTC", "--profiles", f"a40={log}")
    assert done.returncode == 0, done.stderr
    assert "a40: power limit only (measured profile A40+resnet50+gpu0.csv)" in done.stdout
    bad = cli(str(path), "--trace-dir", str(mirror / "zeus"), "--samples", "1", "--timezone", "UTC", "--profiles", "a40=missing.csv")
    assert bad.returncode == 2 and "missing.csv: no such file" in bad.stderr
