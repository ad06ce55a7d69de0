"""Recurring jobs replayed power-limit-only: what GlobalPowerLimitOptimizer runs them at, step by step, in time and energy."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from pipelines.ingest.power_limit_profiles import read_zeus_log
from pipelines.zeus.limit_selectors import Measurement, Selector, choose
from pipelines.zeus.power_limit_replay import replay_power_limit_only
from tests.support.zeus_plo import job_limits
from tests.zeus.test_limit_selectors import zeus_selector

# ZeusCost (eta 0.5, 1 GPU, MaxPower 300 W): 3000, 2650 and 3000 J: 250 W is chosen
PROFILE = [Measurement(300, 3000.0, 10.0), Measurement(250, 2000.0, 11.0), Measurement(200, 1800.0, 14.0)]


def test_first_job_profiles_then_the_chosen_limit_by_hand() -> None:
    jobs = pl.DataFrame({"group": ["a", "a", "b"], "runtime_s": [100.0, 100.0, 20.0], "gpus": [1, 1, 2]})
    out = replay_power_limit_only(PROFILE, Selector(), jobs)
    # job a0, 400 steps of 0.25 s at 300 W: 1 wait step at 300 W (0.25 s, 75 J), 50 steps at each of 300, 250, 200 W
    # (12.5 s 3750 J, 13.75 s 2500 J, 17.5 s 2250 J), the other 249 at 250 W (68.475 s, 12450 J)
    assert out["time_s"].to_list() == pytest.approx([112.475, 110.0, 20.725], rel=1e-12)
    # b0 (2 GPUs, 80 steps) ends while profiling 250 W: 1 + 50 steps at 300 W (2 x 3825 J), 29 at 250 W (2 x 1450 J)
    assert out["energy_j"].to_list() == pytest.approx([21025.0, 20000.0, 10550.0], rel=1e-12)
    assert out["default_energy_j"].to_list() == pytest.approx([30000.0, 30000.0, 12000.0], rel=1e-12)
    assert out.select("job", "profiled", "profile_saved", "power_limit_w").rows() == [
        (0, True, True, 250), (1, False, True, 250), (0, True, False, 250)]


def test_step_by_step_as_zeus_runs_recurring_jobs(mirror: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = mirror / "zeus/profile_data/A40+resnet50+gpu0.csv"
    profile = read_zeus_log(log)
    by_limit = {m.power_limit_w: m for m in profile.measurements}
    top = by_limit[300]
    selector = Selector("zeus-cost", eta=0.5, world_size=1)
    # a job of 400 steps ends during profiling (1 + 9 x 50 = 451 steps), so its successor profiles again; 451 steps end
    # before the last window is closed (at the next step's start): not saved either; 452 save it
    groups = {"short-first": [400, 1000, 300], "boundary": [451, 452, 120]}
    expected_time, expected_energy = [], []
    jobs = []
    for group, job_steps in groups.items():
        saved = tmp_path / f"{group}.json"
        for steps in job_steps:
            limits = job_limits(monkeypatch, log, zeus_selector(selector), saved, steps)
            counted = Counter(limits)
            expected_time.append(sum(n * by_limit[w].time_s / 40 for w, n in counted.items()))
            expected_energy.append(sum(n * by_limit[w].energy_j / 40 for w, n in counted.items()))
            jobs.append((group, steps * top.time_s / 40))
        assert saved.exists()
    out = replay_power_limit_only(profile.measurements, selector, pl.DataFrame(jobs, schema=["group", "runtime_s"], orient="row"))
    assert out["time_s"].to_list() == pytest.approx(expected_time, rel=1e-9)
    assert out["energy_j"].to_list() == pytest.approx(expected_energy, rel=1e-9)
    assert out["profiled"].to_list() == [True, True, False, True, True, False]
    assert out["profile_saved"].to_list() == [False, True, True, False, True, True]
    chosen = choose(profile.measurements, selector)
    assert chosen == 200 and out["power_limit_w"].unique().to_list() == [chosen]
    # the later jobs save what the optimizer's choice saves per step: 1 - E(200 W) / E(300 W)
    later = out.filter(~pl.col("profiled"))
    assert (1 - later["energy_j"] / later["default_energy_j"]).to_list() == pytest.approx([1 - by_limit[200].energy_j / top.energy_j] * 2)


def test_bad_jobs() -> None:
    with pytest.raises(ValueError, match="runtime_s >= 0"):
        replay_power_limit_only(PROFILE, Selector(), pl.DataFrame({"group": ["a"], "runtime_s": [-1.0]}))
    with pytest.raises(ValueError, match="profile steps > 0"):
        replay_power_limit_only(PROFILE, Selector(), pl.DataFrame({"group": ["a"], "runtime_s": [1.0]}), profile_steps=0)


def test_each_jobs_own_eta_picks_its_limit_after_profiling_by_hand() -> None:
    """A carbon-aware optimizer: the same profile, each job at the limit its own eta chooses. On ``PROFILE`` eta 0 (time
    alone) chooses 300 W, 0.5 chooses 250 W, 1 (energy alone) 200 W (1800 J, the least)."""
    jobs = pl.DataFrame({"group": ["a", "a", "a"], "runtime_s": [100.0, 100.0, 100.0]})
    out = replay_power_limit_only(PROFILE, Selector(), jobs, etas=[0.0, 1.0, 0.5])
    # a0 profiles (1 wait step and 50 steps at each limit, as above: 44.0 s, 8575 J), then its other 249 steps at 300 W
    # (0.25 s and 75 J each); a1 runs its 400 steps at 200 W (0.35 s, 45 J each); a2 at 250 W (0.275 s, 50 J)
    assert out["time_s"].to_list() == pytest.approx([44.0 + 249 * 0.25, 400 * 0.35, 400 * 0.275], rel=1e-12)
    assert out["energy_j"].to_list() == pytest.approx([8575.0 + 249 * 75.0, 400 * 45.0, 400 * 50.0], rel=1e-12)
    assert out["power_limit_w"].to_list() == [300, 200, 250]
    same = replay_power_limit_only(PROFILE, Selector(), jobs, etas=[0.5] * 3)
    assert same.equals(replay_power_limit_only(PROFILE, Selector(), jobs))
    with pytest.raises(ValueError, match="2 etas for 3 jobs"):
        replay_power_limit_only(PROFILE, Selector(), jobs, etas=[0.5, 0.5])
