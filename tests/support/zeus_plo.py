"""zeus 0.16.0's GlobalPowerLimitOptimizer driven on a machine without GPUs: its own code path, NVML replaced by a recorder.

``jit_profile`` replays a ZeusMonitor log through the optimizer's JIT profiling state machine
(zeus's ``ReplayZeusMonitor``) and returns the limit it settles on and the profile JSON it saved;
``load_profile`` has the optimizer load a saved profile JSON (``profile_path``), as a job that
recurs does, and returns the limit it sets. zeus is imported inside the functions (torch comes with it).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest


class FakeGpus:
    """The calls GlobalPowerLimitOptimizer makes on zeus's GPU layer: a fixed limit range (mW), the limits set recorded."""

    def __init__(self, lowest_w: int, highest_w: int) -> None:
        self.range_mw = (lowest_w * 1000, highest_w * 1000)
        self.set_mw: list[int] = []

    def get_power_management_limit_constraints(self, index: int) -> tuple[int, int]:
        return self.range_mw

    def set_persistence_mode(self, index: int, enabled: bool, block: bool = True) -> None:
        pass

    def set_power_management_limit(self, index: int, value_mw: int, block: bool = True) -> None:
        self.set_mw.append(value_mw)


def _patch(monkeypatch: pytest.MonkeyPatch, gpus: FakeGpus) -> Any:
    from zeus.optimizer import power_limit as zpl

    monkeypatch.setattr(zpl, "get_gpus", lambda ensure_homogeneous=False: gpus)
    monkeypatch.setattr(zpl.atexit, "register", lambda *args, **kwargs: None)  # the exit hook would call NVML
    return zpl


def log_limits(log: Path) -> list[int]:
    """The limits (W) of a log's optimizer windows, read with the csv module alone."""
    with log.open(newline="") as f:
        return [int(row["window_name"].rsplit("_", 1)[1]) for row in csv.DictReader(f)]


def jit_profile(monkeypatch: pytest.MonkeyPatch, log: Path, selector: Any, profile_path: Path) -> int:
    """The limit (W) GlobalPowerLimitOptimizer chooses after profiling the windows of ``log`` (25 W apart, highest first)."""
    from zeus.utils.testing import ReplayZeusMonitor

    limits = log_limits(log)
    zpl = _patch(monkeypatch, FakeGpus(min(limits), max(limits)))
    monitor = ReplayZeusMonitor(log_file=log, ignore_sync_execution=True, match_window_name=True)
    optimizer = zpl.GlobalPowerLimitOptimizer(monitor, optimum_selector=selector, wait_steps=1, warmup_steps=2, profile_steps=3,
                                              pl_step=25, profile_path=profile_path)
    for _ in range(10 * len(limits) + 10):
        if isinstance(optimizer.state, zpl.Done):
            break
        optimizer.on_step_begin()
    assert isinstance(optimizer.state, zpl.Done), f"zeus did not finish profiling {log}"
    return int(optimizer.state.optimal_power_limit) // 1000


def load_profile(monkeypatch: pytest.MonkeyPatch, profile_path: Path, selector: Any, gpus: int = 1) -> int:
    """The limit (W) GlobalPowerLimitOptimizer sets after loading ``profile_path`` (Zeus's own loader), on ``gpus`` GPUs."""

    class Monitor:
        gpu_indices = list(range(gpus))

    recorder = FakeGpus(100, 1000)
    zpl = _patch(monkeypatch, recorder)
    optimizer = zpl.GlobalPowerLimitOptimizer(Monitor(), optimum_selector=selector, profile_path=profile_path)
    assert isinstance(optimizer.state, zpl.Done)
    assert recorder.set_mw[-1] == optimizer.state.optimal_power_limit  # it set the limit it chose, on the GPUs
    return int(optimizer.state.optimal_power_limit) // 1000


def job_limits(monkeypatch: pytest.MonkeyPatch, log: Path, selector: Any, profile_path: Path, steps: int) -> list[int]:
    """The limit (W) in effect at each of a job's ``steps`` training steps under GlobalPowerLimitOptimizer (Zeus's defaults:
    1 wait, 10 warmup and 40 profiling steps per limit), profiling by replaying ``log`` unless ``profile_path`` is saved."""
    from zeus.utils.testing import ReplayZeusMonitor

    limits = log_limits(log)
    gpus = FakeGpus(min(limits), max(limits))
    zpl = _patch(monkeypatch, gpus)
    monitor = ReplayZeusMonitor(log_file=log, ignore_sync_execution=True, match_window_name=True)
    optimizer = zpl.GlobalPowerLimitOptimizer(monitor, optimum_selector=selector, wait_steps=1, warmup_steps=10, profile_steps=40,
                                              pl_step=25, profile_path=profile_path)
    in_effect = []
    for _ in range(steps):
        optimizer.on_step_begin()
        in_effect.append(gpus.set_mw[-1] // 1000)
    return in_effect
