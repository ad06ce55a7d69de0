"""Issue 39 item 12: a Ctrl-C stops whatif and sweep within seconds at any point, leaving no output and no process.

A terminal's Ctrl-C reaches the command's whole process group (a LocalCluster's workers too): each command runs in a
group of its own (``start_new_session``; a backgrounded shell job would ignore SIGINT) and the group gets SIGINT. The
exit status is 130, or death by SIGINT (returncode -2, which a shell reports as 130) where the signal lands while a
compiled kernel runs (``pipelines.zeus.fast``: Python's handler would wait for the kernel's end, minutes of a sweep).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from pipelines.clusters import mapping
from pipelines.clusters.workloads import workloads_by_default_tta
from pipelines.home.paths import REPO_ROOT
from pipelines.ingest.simulator_inputs import read_trace_dir
from pipelines.ingest.slurm import read_sacct
from tests.support.sacct_export import write_export
from tests.support.sweep_inputs import write_sweep_inputs

#: Seconds from the SIGINT to the end of every process of the command that these slow tests allow. The aim is 2 s (issue
#: 39); the bound is 3x the slowest stop measured: 11 stops (whatif 0.01 to 0.18 s, sweep 0.08 to 1.14 s, the slowest
#: ``sweep --scheduler none`` in the compiled kernel; load 6 to 10, 2026-12-07). A command that runs on to its end (tens of
#: seconds) still fails.
STOP_BOUND_S = 3.5
INTERRUPTED = (130, -signal.SIGINT)
#: whatif's samples in these tests: enough replays that the command outlasts the latest signal (8 s) on an idle machine.
WHATIF_SAMPLES = 100


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Slurm export whose whatif takes seconds: at ``WHATIF_SAMPLES`` samples 13 s in-process and 11 s on a LocalCluster
    (2026-12-07, idle), so that every signal below lands mid-run (20 samples took 5 s: the 5 s and 8 s cases ended first)."""
    path = tmp_path_factory.mktemp("ctrl_c") / "lab.sacct"
    write_export(path, 15_000, seed=3, timezone="UTC")
    return path


def _group(pgid: int) -> list[psutil.Process]:
    left = []
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error, ProcessLookupError):
            if os.getpgid(process.pid) == pgid and process.status() != psutil.STATUS_ZOMBIE:
                left.append(process)
    return left


def _interrupt(args: list[str], started: str, after_s: float, log: Path) -> tuple[int, float]:
    """Start ``python -m pipelines ARGS``, SIGINT its group ``after_s`` after ``started`` shows in its stderr; (status, seconds
    from the signal until no process of the group is left)."""
    with log.open("wb") as err:
        process = subprocess.Popen([sys.executable, "-m", "pipelines", *args], cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=err,
                                   start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while started not in log.read_text():
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
            time.sleep(0.05)
        time.sleep(after_s)
        assert process.poll() is None, f"ended before the signal: {log.read_text()[-2000:]}"
        os.killpg(process.pid, signal.SIGINT)
        sent = time.monotonic()
        code = process.wait(timeout=60)
        while _group(process.pid) and time.monotonic() - sent < 30:
            time.sleep(0.05)
        return code, time.monotonic() - sent
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.parametrize(("scheduler", "after_s"), [("none", 1.0), ("none", 5.0), ("local", 1.0), ("local", 5.0), ("local", 8.0)])
def test_ctrl_c_stops_whatif(export: Path, tmp_path: Path, scheduler: str, after_s: float) -> None:
    html = tmp_path / "report.html"
    code, seconds = _interrupt(["whatif", str(export), "--timezone", "UTC", "--samples", str(WHATIF_SAMPLES), "--scheduler", scheduler, "--no-progress",
                                "--html", str(html)], "", after_s, tmp_path / "err.log")
    err = (tmp_path / "err.log").read_text()
    assert code in INTERRUPTED and seconds < STOP_BOUND_S, (code, seconds, err[-2000:])
    assert list(tmp_path.iterdir()) == [tmp_path / "err.log"]  # no report, no temp file
    assert "Traceback" not in err and "Warning" not in err, err[-3000:]  # no worker's, no resource tracker's


@pytest.mark.slow
@pytest.mark.parametrize(("scheduler", "after_s"), [("none", 2.0), ("auto", 3.0), ("local", 3.0)])
def test_ctrl_c_stops_sweep(export: Path, mirror: Path, tmp_path: Path, scheduler: str, after_s: float) -> None:
    traces = read_trace_dir(mirror / "zeus")
    jobs = mapping.map_own(read_sacct(export, trace="lab", source_file="lab.sacct", timezone="UTC").table, workloads_by_default_tta(traces),
                           "lab")
    assets = write_sweep_inputs(tmp_path / "assets", jobs, traces)
    out = tmp_path / "out" / "grid.parquet"
    out.parent.mkdir()
    # the paper grid with 20 seeds, not 5: tens of seconds of replays, so that the signal lands mid-sweep on an idle machine too
    # (the default grid took 1 s there, and the paper grid's 5 seeds ended within 3 s once the kernel ran twice as fast)
    seeds = ",".join(str(s) for s in range(1, 21))
    code, seconds = _interrupt(["sweep", "--assets", str(assets), "--output", str(out), "--no-progress", "--scheduler", scheduler, "--grid", "paper",
                                "--seeds", seeds],
                               "[sweep] on", after_s, tmp_path / "err.log")
    err = (tmp_path / "err.log").read_text()
    assert code in INTERRUPTED and seconds < STOP_BOUND_S, (code, seconds, err[-2000:])
    assert list(out.parent.iterdir()) == []  # no table, no temp file
    assert "Traceback" not in err and "Warning" not in err, err[-3000:]  # no worker's, no resource tracker's
