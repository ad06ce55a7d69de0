"""``whatif`` picks a recurring group's workload from its own GPU utilisation (``pipelines.clusters.analogues``): a busy group
never replays as a workload that leaves the GPU near idle, an idle-ish one draws from the low end, and an export without
utilisation replays as before."""

from __future__ import annotations

import csv
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from pipelines.clusters import tracefiles, whatif
from pipelines.clusters.analogues import Analogues
from pipelines.clusters.profiles import profiles_of
from pipelines.clusters.samples import run_draws
from pipelines.ingest.simulator_inputs import read_trace_dir
from pipelines.scaleout.runners import SerialRunner
from pipelines.zeus.traces import Traces

START = datetime(2024, 3, 1)
SAMPLES = 20


@pytest.fixture(scope="module")
def traces(mirror: Path) -> Traces:
    return read_trace_dir(mirror / "zeus")


def job_log(path: Path, util: float | None, jobs: int = 8, hours: float = 10.0) -> Path:
    """``jobs`` 1-GPU V100 jobs of one group (alice/train), ``hours`` each, a day apart, all at ``util`` % (None: no column value)."""
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["job_id", "submit_time", "start_time", "end_time", "num_gpus", "state", "user", "name", "gpu_type", "gpu_util_pct"])
        for k in range(jobs):
            start = START + timedelta(days=k)
            end = start + timedelta(hours=hours)
            out.writerow([f"j{k}", start.isoformat(), start.isoformat(), end.isoformat(), 1, "COMPLETED", "alice", "train", "v100",
                          "" if util is None else util])
    return path


def sample_watts(path: Path, traces: Traces) -> list[float]:
    """Each sample's modelled Default draw (W per GPU, = kWh per GPU-hour x 1000) of the log's jobs, all on the V100."""
    result = tracefiles.read_trace(path, "lab", "csv", "UTC", source_file=path.name)
    ready = whatif.replayable(result, profiles_of(traces), whatif.Options(samples=SAMPLES))
    draws = run_draws(ready.plan, traces, SAMPLES, 0, SerialRunner())
    return [d["rows"]["v100"]["default_j"] / (ready.gpu_hours * 3600) for d in draws]


def v100_draw_at_max_limit(mirror: Path, dataset: str, batch_size: int) -> float:
    """The published V100 power trace's average power (W) of ``dataset`` at ``batch_size`` and the 250 W limit, read here."""
    with (mirror / "zeus" / "summary_power_v100.csv").open() as f:
        rows = [r for r in csv.DictReader(f)
                if r["dataset"] == dataset and int(r["batch_size"]) == batch_size and int(r["power_limit"]) == 250]
    assert len(rows) == 1
    return float(rows[0]["average_power"])


def test_a_busy_group_draws_busy_power_and_an_idle_ish_one_the_low_end(tmp_path: Path, traces: Traces, mirror: Path) -> None:
    """Eight 10-hour V100 jobs of one group: at 95 % every sample models at least 120 W per GPU-hour; at 15 % every sample
    models movielens-1m's Default draw (its b0, 1024, at 250 W in the published trace: 38 W), below that."""
    busy = sample_watts(job_log(tmp_path / "busy.csv", 95.0), traces)
    quiet = sample_watts(job_log(tmp_path / "quiet.csv", 15.0), traces)
    assert len(busy) == len(quiet) == SAMPLES
    assert min(busy) >= 120.0, busy
    movielens = v100_draw_at_max_limit(mirror, "movielens-1m", 1024)
    assert movielens == pytest.approx(38.03, abs=0.01)
    for watts in quiet:
        assert watts == pytest.approx(movielens, rel=1e-9)
    assert max(quiet) < 120.0


def test_without_utilisation_the_draw_stays_by_runtime(tmp_path: Path, traces: Traces) -> None:
    """The same eight jobs without a utilisation play by runtime (the group's 10 h: movielens-1m, the V100's shortest-TTA
    workload, is not the longest): the same numbers as before the rule existed, and no rule in the report."""
    bare = job_log(tmp_path / "bare.csv", None)
    result = tracefiles.read_trace(bare, "lab", "csv", "UTC", source_file=bare.name)
    report = whatif.run(result, profiles_of(traces), whatif.Options(samples=3))[0]
    assert "analogue_rule" not in report and "analogues" not in report["gpus"]["v100"]
    busy = job_log(tmp_path / "busy.csv", 95.0)
    with_util = whatif.run(tracefiles.read_trace(busy, "lab", "csv", "UTC", source_file=busy.name), profiles_of(traces),
                           whatif.Options(samples=3))[0]
    assert with_util["gpus"]["v100"]["analogues"]["groups_by_utilisation"] == 1
    assert "analogue_rule" in with_util


def test_the_band_by_hand() -> None:
    """The rule on made-up draws (idle 40 W, TDP 240 W: the band is +-50 W around 40 + u x 200)."""
    a = Analogues("gpu", 40.0, 240.0, {"a": 50.0, "b": 150.0, "c": 200.0, "d": 230.0})
    assert a.target_w(95.0) == pytest.approx(230.0)
    assert a.candidates(95.0) == ("c", "d")  # [180, 280]
    assert a.candidates(15.0) == ("a",)  # [20, 120]
    assert a.candidates(50.0) == ("b",)  # 140: [90, 190]
    assert a.nearest(95.0) == "d"
    assert a.candidates(150.0) == ("c", "d")  # clipped to 100 %
    lone = Analogues("gpu", 40.0, 240.0, {"x": 200.0})
    # 0 %: P = 40 W, the nearest draw 160 W away: widened in 10 W steps from 50 W until it lies within (160 W)
    assert lone.candidates(0.0) == ("x",)
    assert Analogues("gpu", 40.0, 240.0, {"x": 100.0, "y": 20.0}).nearest(30.0) == "x"  # P = 100 W
