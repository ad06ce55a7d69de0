"""The power limit chosen here is zeus 0.16.0's GlobalPowerLimitOptimizer's, for every selector.

On Zeus's own profiling logs (ml-energy/zeus tests/profile_data, in the mirror, sha256-checked):
zeus profiles each log through its JIT state machine and saves its profile; we read the same log.
On profiles the tests write (ties included): zeus loads them with its own loader.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.ingest.power_limit_profiles import read_zeus_json, read_zeus_log
from pipelines.zeus.limit_selectors import Measurement, Selector, choose
from tests.support.zeus_plo import jit_profile, load_profile

ETAS = [0.0, 0.25, 0.5, 0.75, 1.0]
FACTORS = [1.0, 1.05, 1.1, 1.2, 1.5, 2.0, 100.0]


def zeus_profile_logs(mirror: Path) -> list[Path]:
    """Zeus's logs in the mirror, each checked against the sha256 the mirror's README pins."""
    readme = (mirror / "README.md").read_text()
    pinned = dict(re.findall(r"^\| (zeus/profile_data/\S+) \|.*\| ([0-9a-f]{64}) \|$", readme, flags=re.M))
    logs = sorted((mirror / "zeus/profile_data").glob("*.csv"))
    assert len(logs) == 12 and len(pinned) == 12
    for log in logs:
        assert hashlib.sha256(log.read_bytes()).hexdigest() == pinned[f"zeus/profile_data/{log.name}"], log
    return logs


def zeus_selector(selector: Selector) -> object:
    from zeus.optimizer import power_limit as zpl

    return {
        "zeus-cost": lambda: zpl.ZeusCost(eta_knob=selector.eta, world_size=selector.world_size),
        "energy": zpl.Energy,
        "time": zpl.Time,
        "max-slowdown": lambda: zpl.MaxSlowdownConstraint(factor=selector.max_slowdown),
    }[selector.name]()


def every_selector(world_size: int) -> list[Selector]:
    return [*(Selector("zeus-cost", eta=e, world_size=world_size) for e in ETAS), Selector("energy"), Selector("time"),
            *(Selector("max-slowdown", max_slowdown=f) for f in FACTORS)]


def test_zeus_logs_choose_as_zeus(mirror: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chosen: dict[str, set[int]] = {}
    for log in zeus_profile_logs(mirror):
        ours = read_zeus_log(log)
        gpus = log.stem.split("+gpu")[1].count(",") + 1
        assert ours.world_size == gpus
        saved = tmp_path / f"{log.stem}.json"
        for eta in ETAS:
            selector = Selector("zeus-cost", eta=eta, world_size=gpus)
            saved.unlink(missing_ok=True)
            assert choose(ours.measurements, selector) == jit_profile(monkeypatch, log, zeus_selector(selector), saved), (log, eta)
        # zeus's saved profile holds exactly the measurements read here: energy summed over the GPUs, elapsed time
        assert read_zeus_json(saved).measurements == ours.measurements
        for selector in every_selector(gpus):
            limit = choose(ours.measurements, selector)
            assert limit == load_profile(monkeypatch, saved, zeus_selector(selector), gpus), (log, selector)
            chosen.setdefault(selector.name, set()).add(limit)
    # the logs tell the selectors apart: each chooses several different limits over the twelve
    assert all(len(limits) >= 3 for limits in chosen.values()), chosen


def write_json(path: Path, measurements: list[Measurement]) -> Path:
    path.write_text(json.dumps({"measurements": [{"power_limit": m.power_limit_w, "energy": m.energy_j, "time": m.time_s}
                                                 for m in measurements]}, indent=4))
    return path


def test_ties_go_to_the_first_measurement_as_in_zeus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 250 W and 150 W tie on energy, time and cost (eta 0.5, max power 300 W: 0.5 x 1000 + 0.5 x 300 x 10 = 2000 J)
    profile = [Measurement(300, 1200.0, 9.0), Measurement(250, 1000.0, 10.0), Measurement(200, 1100.0, 11.0),
               Measurement(150, 1000.0, 10.0)]
    for order in (profile, profile[::-1]):
        path = write_json(tmp_path / "tie.json", order)
        for selector in every_selector(1):
            assert choose(order, selector) == load_profile(monkeypatch, path, zeus_selector(selector)), (order, selector)
    assert choose(profile, Selector("energy")) == 250
    assert choose(profile[::-1], Selector("energy")) == 150


_LIMITS = st.lists(st.integers(50, 700), min_size=2, max_size=9, unique=True)
# few distinct values, so that ties happen
_VALUES = st.sampled_from([1.0, 2.5, 3.0, 1e-3, 7.25, 1234.5678, 1e6])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(limits=_LIMITS, data=st.data(), world_size=st.integers(1, 8), eta=st.sampled_from(ETAS + [0.3]),
       factor=st.sampled_from(FACTORS))
def test_written_profiles_choose_as_zeus(limits: list[int], data: st.DataObject, world_size: int, eta: float, factor: float,
                                         tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    profile = [Measurement(limit, data.draw(_VALUES), data.draw(_VALUES)) for limit in limits]
    path = write_json(tmp_path / "profile.json", profile)
    assert read_zeus_json(path).measurements == tuple(profile)
    for selector in (Selector("zeus-cost", eta=eta, world_size=world_size), Selector("energy"), Selector("time"),
                     Selector("max-slowdown", max_slowdown=factor)):
        assert choose(profile, selector) == load_profile(monkeypatch, path, zeus_selector(selector), world_size), selector


def test_selector_knobs_are_zeus_bounds() -> None:
    with pytest.raises(ValueError, match="eta"):
        Selector("zeus-cost", eta=1.5)
    with pytest.raises(ValueError, match="at least 1.0"):
        Selector("max-slowdown", max_slowdown=0.9)
    with pytest.raises(ValueError, match="world size"):
        Selector("zeus-cost", world_size=0)
    with pytest.raises(ValueError, match="at least two"):
        choose([Measurement(300, 1.0, 1.0)], Selector())
