"""`python -m pipelines materialize`: selection widening, the run plan, start-up recovery, Ctrl-C and kill -9.

The last tests run the real command on a prepared project (the knob-grid asset, about a minute of
work) and interrupt it once its step has started; every process they start is ended.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from sqlalchemy.exc import OperationalError

from pipelines.home.paths import REPO_ROOT, ProjectPaths
from pipelines.home.storage import write_parquet_atomic
from pipelines.orchestration.plan import RANGE_END, RANGE_START, SelectionError, plan_runs, resolve_selection
from pipelines.orchestration.processes import group_alive
from pipelines.orchestration.recovery import LAUNCHER_PID_TAG, recover

WAIT_S = 120


@pytest.fixture(scope="module")
def definitions() -> dg.Definitions:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pipelines.definitions import defs

        return defs()


@pytest.fixture(scope="module")
def instance() -> Iterator[dg.DagsterInstance]:
    """An instance with the two public traces of the mirror registered as ``trace`` partitions."""
    with dg.instance_for_test() as test_instance:
        test_instance.add_dynamic_partitions("trace", ["elasticflow", "itp"])
        yield test_instance


def _names(keys: set[dg.AssetKey]) -> set[str]:
    return {k.to_user_string() for k in keys}


def test_selection_is_widened_to_what_a_multi_asset_writes(definitions: dg.Definitions) -> None:
    graph = definitions.resolve_asset_graph()
    keys, added = resolve_selection(graph, "group:ingest")
    assert "itp_jobs" in _names(keys) and _names(added) == {n for n in _names(keys) if n.startswith("quarantine/")}
    assert len(added) == 9  # one quarantine table per ingested table
    keys, added = resolve_selection(graph, "itp_jobs")
    assert _names(keys) == {"itp_jobs", "quarantine/itp_jobs"} and _names(added) == {"quarantine/itp_jobs"}
    keys, _ = resolve_selection(graph, "+zeus_train_runs")
    assert _names(keys) == {"raw_zeus_traces", "zeus_train_runs", "quarantine/zeus_train_runs"}
    with pytest.raises(SelectionError, match="matches no asset"):
        resolve_selection(graph, "group:nonexistent")
    with pytest.raises(SelectionError, match="no_such_asset"):
        resolve_selection(graph, "no_such_asset")


def test_every_planned_run_is_a_valid_dagster_subset(definitions: dg.Definitions, instance: dg.DagsterInstance) -> None:
    graph = definitions.resolve_asset_graph()
    job = definitions.resolve_implicit_global_asset_job_def()
    for select in ("*", "group:ingest", "itp_jobs", "quarantine/acme_jobs", "zeus_cluster_summary", "group:figures"):
        keys, _ = resolve_selection(graph, select)
        runs = plan_runs(graph, keys, instance)
        assert sorted(a for r in runs for a in r.assets) == sorted(_names(keys)), select  # each asset in exactly one run
        for run in runs:
            assert all(i < runs.index(run) for i in run.after)
            job.get_subset(asset_selection={dg.AssetKey.from_user_string(a) for a in run.assets})  # raises if not


def test_plan_of_everything(definitions: dg.Definitions, instance: dg.DagsterInstance) -> None:
    graph = definitions.resolve_asset_graph()
    keys, added = resolve_selection(graph, "*")
    runs = plan_runs(graph, keys, instance)
    assert not added and len(runs) == 6
    by_asset = {a: i for i, r in enumerate(runs) for a in r.assets}
    history = runs[by_asset["zeus_cluster_history"]]
    # one single-run backfill of 16 partitions for the trace x GPU assets
    assert history.assets == ("zeus_cluster_history", "cluster_power", "zeus_cluster_summary", "cluster_power_summary")
    assert history.tags == {RANGE_START: "a40|elasticflow", RANGE_END: "v100|itp"} and not history.parallel
    jobs = runs[by_asset["cluster_workload_jobs"]]  # one single-run backfill of the traces registered
    assert jobs.tags == {RANGE_START: "elasticflow", RANGE_END: "itp"}
    assert by_asset["cluster_workload_jobs"] in history.after
    assert by_asset["zeus_knob_grid"] != by_asset["cluster_workload_jobs"]  # runs beside the partitions
    assert by_asset["itp_jobs"] == by_asset["quarantine/itp_jobs"]
    figures = runs[by_asset["figures/clusters_savings_by_trace"]]
    # the figures run after what they read: the cluster replays, and the single-job sweep (the convergence figure)
    assert by_asset["zeus_cluster_history"] in figures.after and by_asset["zeus_single_job_sweep"] in figures.after


# ---------------------------------------------------------------------------------------------
# start-up recovery: a run whose process was killed


SLOW_RUN = textwrap.dedent("""
    import time
    import dagster as dg

    @dg.asset
    def slow() -> int:
        time.sleep(300)
        return 1

    dg.materialize([slow], instance=dg.DagsterInstance.get())
""")


def _wait(predicate, what: str, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


class Started(list[subprocess.Popen[bytes]]):
    """Processes a test starts, each leading its own process group, and other groups to end (``groups``)."""

    groups: list[int]


@contextlib.contextmanager
def _processes() -> Iterator[Started]:
    """Every process group a test starts is killed at the end, whatever happened."""
    started = Started()
    started.groups = []
    try:
        yield started
    finally:
        for group in [p.pid for p in started] + started.groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
        for process in started:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    with dg.DagsterInstance.from_config(str(home)) as instance:  # create the storage before processes share it
        instance.get_runs()
    return home


def test_recover_marks_runs_of_dead_processes_and_removes_stale_temp_files(tmp_path: Path) -> None:
    home, root = _home(tmp_path), tmp_path / "project"
    env = {**os.environ, "DAGSTER_HOME": str(home), "GPU_ENERGY_HOME": str(root)}
    old, new = root / "assets/.tmp_table.parquet.x1", root / "figures/.tmp_figure.png.x2"
    with _processes() as started, dg.DagsterInstance.from_config(str(home)) as instance:
        for _ in range(2):
            started.append(subprocess.Popen([sys.executable, "-c", SLOW_RUN], env=env, cwd=tmp_path, start_new_session=True))
        _wait(lambda: len(instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))) == 2, "two STARTED runs")
        first = min(r.start_time for r in instance.get_run_records())
        for path in (old, new):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"half a file")
        os.utime(old, (first - 60, first - 60))  # written before either run started
        killed, alive = started
        killed.kill()
        killed.wait(timeout=30)
        by_pid = {r.run_id: r for r in instance.get_runs()}
        result = recover(instance, ProjectPaths(root))
        assert [status for _, status, _ in result.runs] == ["FAILURE"]
        assert f"pid {killed.pid}" in result.runs[0][2]
        assert result.removed == [old] and new.exists()
        statuses = {r.run_id: instance.get_run_by_id(r.run_id).status for r in by_pid.values()}
        assert sorted(s.value for s in statuses.values()) == ["FAILURE", "STARTED"]
        live = next(i for i, s in statuses.items() if s == dg.DagsterRunStatus.STARTED)
        instance.report_run_canceling(instance.get_run_by_id(live))  # asked to cancel, then its process died
        alive.kill()
        alive.wait(timeout=30)
        done = subprocess.run([sys.executable, "-m", "pipelines", "recover"], env=env, cwd=REPO_ROOT, capture_output=True, check=False,
                              text=True, timeout=WAIT_S)
        assert done.returncode == 0, done.stderr
        assert f"run {live[:8]} marked CANCELED: its process (pid {alive.pid}) is gone" in done.stderr
        assert "removed 1 stale temp file" in done.stderr and not new.exists()
        assert instance.get_run_by_id(live).status == dg.DagsterRunStatus.CANCELED
        assert recover(instance, ProjectPaths(root)).runs == []


# ---------------------------------------------------------------------------------------------
# the real command, interrupted


@pytest.fixture(scope="module")
def knob_grid_project(ingested: tuple[ProjectPaths, object], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project whose assets hold what zeus_knob_grid reads: the whole ElasticFlow trace as cluster jobs.

    ``cluster_workload_jobs`` is partitioned by trace; materialize registers the traces whose files
    the mirror holds (itp, elasticflow): ITP's partition is written empty, so only ElasticFlow replays.
    """
    from pipelines.clusters import mapping

    src, _ = ingested
    root = tmp_path_factory.mktemp("knob_project")
    jobs = mapping.map_elasticflow(pl.read_parquet(src.table("elasticflow_jobs")))
    write_parquet_atomic(jobs, root / "assets/cluster_workload_jobs/elasticflow.parquet")
    write_parquet_atomic(jobs.clear(), root / "assets/cluster_workload_jobs/itp.parquet")
    for table in ("zeus_train_runs", "zeus_power_profiles"):
        write_parquet_atomic(pl.read_parquet(src.table(table)), root / f"assets/{table}.parquet")
    return root


def _start_knob_grid(root: Path, home: Path, started: Started, log: Path) -> tuple[subprocess.Popen[bytes], dg.DagsterRun]:
    """Start materializing zeus_knob_grid; return the driver and its run once the asset's step has started.

    The command's output goes to the file ``log``, not a pipe: a pipe nobody reads fills up and blocks
    every process still writing to it (the orchestrator and its runs outlive a killed driver).
    """
    env = {**os.environ, "DAGSTER_HOME": str(home), "GPU_ENERGY_HOME": str(root)}
    env.pop("DASK_SCHEDULER_ADDRESS", None)
    with log.open("wb") as out:
        driver = subprocess.Popen([sys.executable, "-m", "pipelines", "materialize", "--select", "zeus_knob_grid"], env=env,
                                  cwd=REPO_ROOT, start_new_session=True, stdout=out, stderr=subprocess.STDOUT)
    started.append(driver)
    with dg.DagsterInstance.from_config(str(home)) as instance:

        def step_started() -> bool:
            assert driver.poll() is None, log.read_text()[-3000:]
            try:  # sqlite: a run's event log is created by its worker; read it once the run has started
                runs = instance.get_runs()
                if not runs or runs[0].status != dg.DagsterRunStatus.STARTED:
                    return False
                return bool(instance.all_logs(runs[0].run_id, of_type=dg.DagsterEventType.STEP_START))
            except OperationalError:
                return False

        _wait(step_started, "the zeus_knob_grid step to start")
        run = instance.get_runs()[0]
    started.groups.append(int(run.tags[LAUNCHER_PID_TAG]))  # the orchestrator leads its own group
    return driver, run


def _status(home: Path, run_id: str) -> dg.DagsterRunStatus:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        run = instance.get_run_by_id(run_id)
        assert run is not None, run_id
        return run.status


def test_ctrl_c_cancels_the_run_and_ends_every_process(knob_grid_project: Path, tmp_path: Path) -> None:
    home = _home(tmp_path)
    with _processes() as started:
        log = tmp_path / "materialize.log"
        driver, run = _start_knob_grid(knob_grid_project, home, started, log)
        orchestrator_group = int(run.tags[LAUNCHER_PID_TAG])
        assert group_alive(orchestrator_group) and os.getpgid(driver.pid) != orchestrator_group
        sent = time.monotonic()
        driver.send_signal(signal.SIGINT)
        assert driver.wait(timeout=60) == 130
        assert time.monotonic() - sent < 45
        err = log.read_text()
        assert "stopping: canceling 1 run(s) in flight" in err and "interrupted" in err
        assert _status(home, run.run_id) == dg.DagsterRunStatus.CANCELED
        _wait(lambda: not group_alive(orchestrator_group), "the orchestrator's processes to end", timeout=10)


def test_kill_9_of_the_command_leaves_no_process_and_no_started_run(knob_grid_project: Path, tmp_path: Path) -> None:
    home = _home(tmp_path)
    with _processes() as started:
        log = tmp_path / "materialize.log"
        driver, run = _start_knob_grid(knob_grid_project, home, started, log)
        orchestrator_group = int(run.tags[LAUNCHER_PID_TAG])
        driver.kill()
        driver.wait(timeout=10)
        _wait(lambda: not group_alive(orchestrator_group), "every process of the command to end", timeout=60)
        assert _status(home, run.run_id) == dg.DagsterRunStatus.CANCELED, log.read_text()[-3000:]


def test_asked_twice_with_the_driver_gone_the_orchestrator_ends_its_group(knob_grid_project: Path, tmp_path: Path) -> None:
    home = _home(tmp_path)
    with _processes() as started:
        log = tmp_path / "materialize.log"
        driver, run = _start_knob_grid(knob_grid_project, home, started, log)
        orchestrator = int(run.tags[LAUNCHER_PID_TAG])
        driver.kill()  # the kernel's SIGTERM to the orchestrator: it starts canceling
        driver.wait(timeout=10)
        _wait(lambda: "stopping: canceling" in log.read_text(), "the orchestrator to start canceling", timeout=20)
        os.kill(orchestrator, signal.SIGINT)  # asked again: nobody is left to end its processes but itself
        _wait(lambda: not group_alive(orchestrator), "every process of the command to end", timeout=20)
        assert "interrupted twice: ending every process now" in log.read_text()


def test_a_burst_of_sigterm_is_one_request_and_a_second_ctrl_c_ends_everything() -> None:
    from pipelines.cli.materialize import REPEAT_S, _Stop

    now = [100.0]
    stop = _Stop(clock=lambda: now[0])
    stop(signal.SIGTERM, None)
    now[0] += 0.003
    stop(signal.SIGTERM, None)  # the parent-death signal comes once per thread, at the same moment
    assert stop.requested  # and nothing raised
    with pytest.raises(KeyboardInterrupt):
        stop(signal.SIGINT, None)  # Ctrl-C again

    later = _Stop(clock=lambda: now[0])
    later(signal.SIGINT, None)
    now[0] += REPEAT_S
    with pytest.raises(KeyboardInterrupt):
        later(signal.SIGTERM, None)  # asked again, a second later


def test_failed_checks_and_steps_are_named() -> None:
    from pipelines.cli.materialize import _collect_problems, _Outcome

    @dg.asset(check_specs=[dg.AssetCheckSpec("no_negative", asset="table", blocking=True),
                           dg.AssetCheckSpec("few_rows", asset="table", blocking=False)])
    def table() -> Iterator[dg.Output[int] | dg.AssetCheckResult]:
        yield dg.Output(1)
        yield dg.AssetCheckResult(check_name="no_negative", passed=False)
        yield dg.AssetCheckResult(check_name="few_rows", passed=False, severity=dg.AssetCheckSeverity.WARN)

    @dg.asset
    def downstream(table: int) -> int:
        return table

    @dg.asset
    def pinned() -> int:
        raise ValueError("raw/zeus/x.csv: sha256 mismatch (pinned 11aa, file 22bb)\nmore detail")

    assets = [table, downstream, pinned]
    with dg.instance_for_test() as instance:
        result = dg.materialize(assets, instance=instance, raise_on_error=False)
        run = instance.get_run_by_id(result.run_id)
        outcome = _Outcome()
        _collect_problems(instance, result.run_id, "3 assets", run.status.value, dg.Definitions(assets=assets)
                          .resolve_asset_graph(), outcome)
    assert any("blocking ERROR check no_negative on table failed" in p for p in outcome.problems), outcome.problems
    # the step's own error, first line, not Dagster's "Error occurred while executing op" around it
    assert f"run {result.run_id[:8]} (3 assets): step pinned: ValueError: raw/zeus/x.csv: sha256 mismatch (pinned 11aa, file 22bb)" \
        in outcome.problems, outcome.problems
    assert outcome.warnings == [f"run {result.run_id[:8]} (3 assets): WARN check few_rows on table failed"]
    assert run.status == dg.DagsterRunStatus.FAILURE  # the blocking check stopped downstream


def test_preloaded_modules_leave_polars_usable_in_a_forked_step(tmp_path: Path) -> None:
    """A step forked from the forkserver must not inherit a started polars thread pool (it would hang)."""
    from pipelines.cli.materialize import PRELOAD_MODULES

    data = tmp_path / "t.parquet"
    pl.DataFrame({"x": list(range(100_000))}).write_parquet(data)
    code = textwrap.dedent(f"""
        import importlib, os, signal
        for name in {list(PRELOAD_MODULES)!r}:
            importlib.import_module(name)
        pid = os.fork()
        if pid == 0:
            import polars as pl
            signal.alarm(20)
            os._exit(0 if pl.read_parquet({str(data)!r})["x"].sum() == 4_999_950_000 else 3)
        print(os.waitpid(pid, 0)[1])
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "0", out.stderr
