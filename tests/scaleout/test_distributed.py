"""Real processes: a `dask scheduler` and two `dask worker`s on 127.0.0.1, started from this environment.

The sweep through the scheduler's address equals the in-process sweep, also when a worker is
killed mid-sweep; Dagster's dask executor (dagster-dask) materializes a small selection there.
Every process started here is stopped (its whole process group), whatever the outcome.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import polars as pl
import pytest

from pipelines.clusters import mapping, sweep
from pipelines.home.paths import REPO_ROOT, ProjectPaths
from pipelines.scaleout.runners import SerialRunner
from pipelines.scaleout.schedulers import connect
from pipelines.zeus.traces import Traces, from_frames
from tests.support.sweep_inputs import write_sweep_inputs

BIN = Path(sys.executable).parent
#: Zeus and Default on the whole ElasticFlow trace (69,546 jobs): 6 + 2 replays of about half a second.
GRID = sweep.Grid(etas=(0.0, 0.5, 1.0), betas=(2.0,), seeds=(1, 2), gpus=("v100",), policies=("zeus", "default"))
START_TIMEOUT_S = 90


@dataclass
class Cluster:
    address: str
    workers: list[subprocess.Popen[bytes]]
    root: Path  # GPU_ENERGY_HOME of the workers


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def _stop(process: subprocess.Popen[bytes]) -> None:
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    with contextlib.suppress(ProcessLookupError):  # anything else of its group
        os.killpg(process.pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    from distributed import Client

    folder = tmp_path_factory.mktemp("dask")
    root = tmp_path_factory.mktemp("dask_root")
    env = {**os.environ, "GPU_ENERGY_HOME": str(root)}
    env.pop("DASK_SCHEDULER_ADDRESS", None)
    scheduler_file = folder / "scheduler.json"
    processes: list[subprocess.Popen[bytes]] = []
    try:
        processes.append(_start([str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                 "--scheduler-file", str(scheduler_file)], env, folder / "scheduler.log"))
        deadline = time.monotonic() + START_TIMEOUT_S
        while not scheduler_file.exists():
            assert time.monotonic() < deadline and processes[0].poll() is None, (folder / "scheduler.log").read_text()
            time.sleep(0.2)
        time.sleep(0.2)  # the file is written at once, but let it be complete
        address = json.loads(scheduler_file.read_text())["address"]
        assert address.startswith("tcp://127.0.0.1:")
        for i in range(2):
            processes.append(_start([str(BIN / "dask"), "worker", address, "--nthreads", "1", "--no-nanny", "--host", "127.0.0.1",
                                     "--no-dashboard", "--name", f"w{i}", "--local-directory", str(folder)], env, folder / f"w{i}.log"))
        with Client(address, timeout=START_TIMEOUT_S) as client:
            client.wait_for_workers(2, timeout=START_TIMEOUT_S)
        yield Cluster(address, processes[1:], root)
    finally:
        for process in reversed(processes):
            _stop(process)


@pytest.fixture(scope="module")
def inputs(ingested: tuple[ProjectPaths, object]) -> tuple[pl.DataFrame, Traces]:
    paths, _ = ingested
    traces = from_frames(pl.read_parquet(paths.table("zeus_train_runs")), pl.read_parquet(paths.table("zeus_power_profiles")))
    return mapping.map_elasticflow(pl.read_parquet(paths.table("elasticflow_jobs"))), traces


@pytest.fixture(scope="module")
def serial(inputs: tuple[pl.DataFrame, Traces]) -> pl.DataFrame:
    jobs, traces = inputs
    return sweep.sweep(jobs, traces, GRID, SerialRunner())


@pytest.mark.slow
def test_dask_executor_materializes_a_selection(cluster: Cluster, tmp_path: Path) -> None:
    import dagster as dg

    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env = {**os.environ, "DAGSTER_HOME": str(home), "GPU_ENERGY_HOME": str(cluster.root)}
    done = subprocess.run(
        [sys.executable, "-m", "pipelines", "materialize", "--executor", "dask", "--scheduler", cluster.address,
         "--select", "+zeus_train_runs"],
        env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, start_new_session=True, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert pl.read_parquet(cluster.root / "assets/zeus_train_runs.parquet").height == 3759
    with dg.DagsterInstance.from_config(str(home)) as instance:
        (run,) = instance.get_runs()
        assert run.status == dg.DagsterRunStatus.SUCCESS and run.job_name == "unpartitioned_assets" and run.remote_job_origin is not None
        assert {k.to_user_string() for k in run.asset_selection or ()} == {"raw_zeus_traces", "zeus_train_runs",
                                                                           "quarantine/zeus_train_runs_bad_rows"}
        step_pids = {e.dagster_event.pid for e in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.STEP_START)}
    assert step_pids and step_pids <= {w.pid for w in cluster.workers}  # every step ran on a Dask worker


@pytest.mark.slow
def test_sweep_command_through_the_address_equals_in_process(
    cluster: Cluster, inputs: tuple[pl.DataFrame, Traces], serial: pl.DataFrame, tmp_path: Path
) -> None:
    jobs, traces = inputs
    assets = tmp_path / "assets"
    write_sweep_inputs(assets, jobs, traces)
    out = tmp_path / "grid.parquet"
    args = [sys.executable, "-m", "pipelines", "sweep", "--gpus", "v100", "--eta", "0,0.5,1", "--beta", "2", "--seeds", "1,2",
            "--policies", "zeus,default", "--assets", str(assets), "--output", str(out), "--scheduler", cluster.address]
    done = subprocess.run(args, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"on Dask scheduler {cluster.address}: 2 workers" in done.stderr
    assert pl.read_parquet(out).equals(serial)


@pytest.mark.slow
def test_tasks_whose_scattered_inputs_were_lost_run_again(cluster: Cluster, inputs: tuple[pl.DataFrame, Traces],
                                                          serial: pl.DataFrame) -> None:
    """What a worker that dies with the last copy of the scattered inputs does (Dask's memory manager keeps one copy of a
    broadcast, not one per worker): the scheduler forgets them and cancels every task that needs them. Here they are
    cancelled by hand once the first task has finished; the runner scatters them again and resubmits the rest."""
    from distributed import Future

    jobs, traces = inputs
    chosen = sweep.check_inputs(jobs, traces, GRID)
    tasks = sweep.replays(GRID, chosen)
    shared = {"jobs": {t: jobs.filter(pl.col("trace") == t).select(sweep.JOB_COLUMNS) for t in chosen}, "traces": traces}
    finished: list[int] = []
    with connect(cluster.address) as runner:

        def lose_the_inputs_after_first(i: int) -> None:
            finished.append(i)
            if len(finished) == 1:
                scattered = [key for key in runner.client.who_has() if not str(key).startswith("replay_totals-")]
                assert scattered
                runner.client.cancel([Future(key, client=runner.client) for key in scattered], force=True)

        totals = runner.map(sweep.replay_totals, tasks, shared, on_done=lose_the_inputs_after_first)
    assert sorted(finished) == list(range(len(tasks)))  # each task reported once
    assert sweep.expand(totals, replace(GRID, traces=chosen)).equals(serial)


@pytest.mark.slow
def test_a_map_keeps_its_own_inputs_beside_another_client_on_the_cluster(cluster: Cluster) -> None:
    """Shared inputs are scattered under keys of their own: another client holding data under a trace's name ("lab")
    changes nothing (a dict scattered as itself is keyed by its entries' names)."""
    from distributed import Client

    def rows(task: int, jobs: dict[str, pl.DataFrame]) -> int:  # shipped by value: the workers need not import tests/
        return jobs["lab"].height * 10 + task

    with Client(cluster.address) as other, connect(cluster.address) as runner:
        held = other.scatter({"lab": pl.DataFrame({"x": range(3)})}, hash=False)
        assert held["lab"].key == "lab"
        assert runner.map(rows, [0, 1, 2], {"jobs": {"lab": pl.DataFrame({"x": range(5)})}}) == [50, 51, 52]
        assert other.gather(held["lab"]).height == 3


@pytest.mark.slow
def test_a_worker_killed_mid_sweep_changes_nothing(cluster: Cluster, inputs: tuple[pl.DataFrame, Traces], serial: pl.DataFrame) -> None:
    jobs, traces = inputs
    victim = cluster.workers[0]
    chosen = sweep.check_inputs(jobs, traces, GRID)
    tasks = sweep.replays(GRID, chosen)
    shared = {"jobs": {t: jobs.filter(pl.col("trace") == t).select(sweep.JOB_COLUMNS) for t in chosen}, "traces": traces}
    finished: list[int] = []

    def kill_after_first(i: int) -> None:
        finished.append(i)
        if len(finished) == 1:
            victim.send_signal(signal.SIGKILL)

    with connect(cluster.address) as runner:
        assert runner.workers == 2
        totals = runner.map(sweep.replay_totals, tasks, shared, on_done=kill_after_first)
        assert victim.wait(timeout=30) == -signal.SIGKILL
        assert len(finished) == len(tasks) and runner.workers == 1
    assert sweep.expand(totals, replace(GRID, traces=chosen)).equals(serial)


def test_an_address_nothing_listens_on_or_of_a_scheme_dask_lacks_is_one_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from pipelines.scaleout import schedulers

    with socket.socket() as probe:  # a free port: nothing listens on it
        probe.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{probe.getsockname()[1]}"
    monkeypatch.setattr(schedulers, "CONNECT_TIMEOUT", "1s")
    with pytest.raises(schedulers.SchedulerError, match=f"^Dask scheduler {address}: .*{address}"), connect(address):
        pass
    with pytest.raises(schedulers.SchedulerError, match="^Dask scheduler bogus://x: unknown address scheme 'bogus'"), connect("bogus://x"):
        pass


def _slow_square(x: int, pause: float) -> int:
    time.sleep(pause)
    return x * x


def test_auto_keeps_cheap_tasks_in_this_process_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    from pipelines.scaleout.auto import AutoRunner
    from pipelines.scaleout.schedulers import SCHEDULER_ENV

    monkeypatch.delenv(SCHEDULER_ENV, raising=False)
    notes: list[str] = []
    finished: list[int] = []
    with connect(None, workers=2, note=notes.append) as runner:  # the default: auto
        assert isinstance(runner, AutoRunner) and runner.workers == 2
        assert runner.map(_slow_square, list(range(12)), {"pause": 0.01}, on_done=finished.append) == [x * x for x in range(12)]
        assert runner.description.startswith("auto: in-process")
    assert sorted(finished) == list(range(12))
    assert len(notes) == 1 and notes[0].startswith("[auto] 10 tasks left at ") and notes[0].endswith("running them in this process")
    # 10 tasks of 0.01 s: 0.1 s here against the cluster's start (5 s) + 0.05 s (0.1 s on a busy machine)
    assert "about 0.1 s in this process, 5.1 s on a local cluster (5 s to start)" in notes[0]


@pytest.mark.parametrize(("seconds", "idle", "stays"), [(9.9, 2.0, True), (10.1, 2.0, False), (30.0, 1.0, True), (30.0, 1.5, False)])
def test_auto_decides_from_an_estimate_before_the_tasks_are_sized(monkeypatch: pytest.MonkeyPatch, seconds: float, idle: float,
                                                                  stays: bool) -> None:
    """Work that a perfect spread over the idle cores could not shorten by the cluster's start (5 s) stays here, sized for
    one worker as the serial runner's (issue 36: the small sweep's default no slower than in-process); above that, the
    choice is left to the measured tasks. 2 workers, 2 idle cores: 10 s is the break-even (10 - 10/2 = 5)."""
    from pipelines.scaleout import auto

    monkeypatch.setattr(auto, "idle_cores", lambda: idle)
    notes: list[str] = []
    with connect("auto", workers=2, note=notes.append) as runner:
        assert isinstance(runner, auto.AutoRunner)
        runner.expect(seconds)
        assert runner.workers == (1 if stays else 2)
        if stays:
            assert notes == [f"[auto] about {seconds:.1f} s of work (estimated): less than a local cluster's 5 s start would win back: "
                             "running it in this process"]
            assert runner.map(_slow_square, list(range(4)), {"pause": 0.0}) == [0, 1, 4, 9]
            assert runner.description == "auto: in-process (serial; the work would not pay for a local cluster)"
            assert len(notes) == 1  # no probe, no second choice
        else:
            assert notes == []


def test_auto_stays_here_where_no_core_is_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tasks of 0.2 s and a cluster that costs nothing to start, on a machine whose cores are busy: the workers would only
    take turns with this process, so the rest stays here (issue 36: auto never worse than in-process)."""
    from pipelines.scaleout import auto

    monkeypatch.setattr(auto, "LOCAL_START_SECONDS", 0.0)
    monkeypatch.setattr(auto.os, "getloadavg", lambda: (9.0, 9.0, 9.0))
    monkeypatch.setattr(auto.os, "cpu_count", lambda: 2)
    assert auto.idle_cores() == 0.0
    notes: list[str] = []
    with connect("auto", workers=2, note=notes.append) as runner:
        assert runner.map(_slow_square, list(range(4)), {"pause": 0.2}) == [0, 1, 4, 9]
        assert runner.description.startswith("auto: in-process")
    assert len(notes) == 1 and "with 0.0 of 2 cores idle, where it must end 1.25x sooner: running them in this process" in notes[0], notes


def test_auto_stays_here_where_the_cluster_would_win_by_less_than_its_margin(monkeypatch: pytest.MonkeyPatch) -> None:
    """6 tasks of 0.2 s left (1.2 s here) against 0.4 s to start + 0.6 s on 2 idle cores: the cluster would end sooner,
    but not 1.25x sooner, so the rest stays here (issue 36: whatif's draws ran 1.4x slower per task on 2 workers)."""
    from pipelines.scaleout import auto

    monkeypatch.setattr(auto, "LOCAL_START_SECONDS", 0.4)
    monkeypatch.setattr(auto, "idle_cores", lambda: 2.0)
    notes: list[str] = []
    with connect("auto", workers=2, note=notes.append) as runner:
        assert runner.map(_slow_square, list(range(8)), {"pause": 0.2}) == [x * x for x in range(8)]
        assert runner.description.startswith("auto: in-process")
    assert len(notes) == 1 and "about 1.2 s in this process, 1.0 s on a local cluster (0.4 s to start)" in notes[0], notes
    assert notes[0].endswith("where it must end 1.25x sooner: running them in this process")


@pytest.mark.slow
def test_auto_starts_a_local_cluster_for_work_that_pays_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tasks of 0.5 s against a cluster that costs nothing to start: the rest goes to a local cluster, results in order."""
    from pipelines.scaleout import auto

    monkeypatch.setattr(auto, "LOCAL_START_SECONDS", 0.0)
    monkeypatch.setattr(auto, "idle_cores", lambda: 2.0)  # an idle machine: the two workers run beside this process
    notes: list[str] = []
    finished: list[int] = []
    with connect("auto", workers=2, note=notes.append) as runner:
        assert runner.map(_slow_square, list(range(8)), {"pause": 0.5}, on_done=finished.append) == [x * x for x in range(8)]
        assert runner.description.startswith("auto: local cluster tcp://127.0.0.1:") and runner.workers == 2
        assert runner.map(_slow_square, [3], {"pause": 0.0}) == [9]  # the cluster serves the next map
    assert sorted(finished) == list(range(8))
    assert len(notes) == 1 and notes[0].startswith("[auto] 6 tasks left at 0.5") and notes[0].endswith("on a local cluster of 2 workers")


def _blocked_signals(_: int) -> set[int]:
    return {int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])}


@pytest.mark.slow
def test_a_local_clusters_workers_leave_ctrl_c_to_the_command() -> None:
    """A terminal's Ctrl-C reaches the workers too (one process group): they start with SIGINT blocked, so that only the
    command handles it (its one line, no worker traceback; issue 39 item 12), and the command's own thread does not."""
    with connect("local", workers=2) as runner:
        assert runner.map(_blocked_signals, [0, 1], {}) == [{signal.SIGINT}, {signal.SIGINT}]
        assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])
