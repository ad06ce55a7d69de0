"""A data home whose Dagster instance stores in PostgreSQL (``init --postgres-url``), against a real throwaway server
started from the machine's binaries (tests/support/postgres.py), and the same tests on the home's SQLite files.

What must work on PostgreSQL as it does on SQLite: ``materialize`` (its webserver, runs and lock), ``recover``, and the
daemon of ``python -m pipelines dev`` ticking a sensor that registers a trace and launches its run. Each test reads the
rows where the storage keeps them: SQL on the server (psycopg2), or the home's SQLite files (sqlite3), not Dagster's API.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner

from pipelines.cli.init import cli as init_cli
from pipelines.home.paths import REPO_ROOT
from pipelines.orchestration.dagster_storage import StorageError, create_storage
from tests.support.postgres import Server, throwaway_server
from tests.support.processes import SLOW_RUN, survivors
from tests.support.sacct_export import write_export

#: Where each table the tests read lives in a home on SQLite (Dagster's ``DagsterSqliteStorage`` layout).
SQLITE_FILES = {"runs": "history/runs.db", "event_logs": "history/runs/index.db", "dynamic_partitions": "history/runs/index.db",
                "asset_check_executions": "history/runs/index.db", "job_ticks": "schedules/schedules.db"}
WAIT_S = 180


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with throwaway_server() as running:
        yield running


@dataclass(frozen=True)
class Home:
    """A data home made by ``init`` (``--postgres-url`` on PostgreSQL), the environment its commands run in, and its rows."""

    root: Path
    env: dict[str, str]
    server: Server | None
    database: str

    @property
    def dagster_home(self) -> Path:
        return self.root / ".dagster_home"

    def rows(self, table: str, sql: str, *args: object) -> list[tuple[object, ...]]:
        """``sql`` (reading ``table``) where the storage keeps ``table``; ``%s`` placeholders, as psycopg2 takes them."""
        if self.server is not None:
            return self.server.query(self.database, sql, *args)
        database = self.dagster_home / SQLITE_FILES[table]
        if not database.is_file():  # not created yet
            return []
        uri = f"{database.as_uri()}?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as db:
            return db.execute(sql.replace("%s", "?"), args).fetchall()

    def run(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pipelines", *args], env={**self.env, **(env or {})}, cwd=self.root, capture_output=True,
                              text=True, check=False, timeout=WAIT_S)


@pytest.fixture(params=["sqlite", "postgres"])
def home(request: pytest.FixtureRequest, tmp_path: Path) -> Home:
    """A new data home (an empty mirror: no public trace), on SQLite or on a new database of the module's server."""
    root, args, server, database = tmp_path / "home", [], None, ""
    if request.param == "postgres":
        server = request.getfixturevalue("server")
        database = f"home_{request.node.name.split('[')[0][-40:]}".lower()
        args = ["--postgres-url", server.create_database(database)]
    done = CliRunner().invoke(init_cli, [str(root), *args])
    assert done.exit_code == 0, done.output
    (tmp_path / "mirror").mkdir()
    env = {**os.environ, "GPU_ENERGY_HOME": str(root), "TRACES_MIRROR": str(tmp_path / "mirror"), "DAGSTER_PG_PASSWORD": ""}
    env.pop("DAGSTER_HOME", None)  # the home's own .dagster_home, as a user's commands find it
    return Home(root, env, server, database)


def _wait(predicate, what: str, log: Path | None = None) -> None:
    deadline = time.monotonic() + WAIT_S
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}" + (f": {log.read_text()[-3000:]}" if log else "")
        time.sleep(0.5)


def _sqlite_files(home: Home) -> list[str]:
    return sorted(str(p.relative_to(home.dagster_home)) for p in home.dagster_home.rglob("*.db"))


@pytest.mark.slow
def test_materialize_and_recover_store_their_runs_in_the_homes_storage(home: Home, mirror: Path, tmp_path: Path) -> None:
    """Four assets and their checks in one run (the Zeus runs from the mirror, the grid intensities the package ships)."""
    done = home.run("materialize", "--select", "key:grid_intensity or +key:zeus_train_runs", env={"TRACES_MIRROR": str(mirror)})
    assert done.returncode == 0, done.stderr
    assert "4 assets in 1 runs" in done.stderr and "1 runs succeeded" in done.stderr
    assert home.rows("runs", "select status, pipeline_name from runs") == [("SUCCESS", "unpartitioned_assets")]
    materialized = home.rows("event_logs", "select asset_key from event_logs where dagster_event_type = %s order by 1", "ASSET_MATERIALIZATION")
    assert materialized == [('["grid_intensity"]',), ('["quarantine", "zeus_train_runs_bad_rows"]',), ('["raw_zeus_traces"]',),
                            ('["zeus_train_runs"]',)]
    checks = home.rows("asset_check_executions", "select asset_key, check_name, execution_status from asset_check_executions order by 1, 2")
    assert checks == [('["quarantine", "zeus_train_runs_bad_rows"]', "no_rows_quarantined", "SUCCEEDED"),
                      ('["zeus_train_runs"]', "quarantine_share", "SUCCEEDED"), ('["zeus_train_runs"]', "records_accounted", "SUCCEEDED")]
    assert home.rows("dynamic_partitions", "select partition from dynamic_partitions where partitions_def_name = 'trace' order by 1") == [
        ("elasticflow",), ("itp",)]  # the mirror's traces, registered by materialize
    if home.server is not None:  # every record on the server: no SQLite database in the home
        assert _sqlite_files(home) == []
    else:
        assert {"history/runs.db", "schedules/schedules.db"} <= set(_sqlite_files(home))

    # recover: a run whose process was killed while STARTED is marked FAILURE, in the same storage
    slow = subprocess.Popen([sys.executable, "-c", SLOW_RUN], env={**home.env, "DAGSTER_HOME": str(home.dagster_home)}, cwd=tmp_path,
                            start_new_session=True)
    try:
        _wait(lambda: home.rows("runs", "select count(*) from runs where status = %s", "STARTED") == [(1,)], "a STARTED run")
    finally:
        slow.kill()
        slow.wait(timeout=30)
    (run_id,) = [r[0] for r in home.rows("runs", "select run_id from runs where status = %s", "STARTED")]
    recovered = home.run("recover")
    assert recovered.returncode == 0, recovered.stderr
    assert f"run {str(run_id)[:8]} marked FAILURE: its process (pid {slow.pid}) is gone" in recovered.stderr
    assert home.rows("runs", "select status from runs where run_id = %s", run_id) == [("FAILURE",)]


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_the_dev_daemon_ticks_the_sensor_that_registers_a_dropped_trace_and_launches_its_run(home: Home) -> None:
    """``python -m pipelines dev`` (what ``make dev`` runs): its daemon's ticks, the partition its sensor adds and the run it
    launches are rows of the home's storage; Ctrl-C ends every process within 5 s, as on SQLite."""
    write_export(home.root / "raw" / "clusters" / "lab.sacct", 30, seed=4)
    assert home.run("recover").returncode == 0  # what make dev runs first
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = home.root / "dev.log"
    with log.open("wb") as out:
        # from the repository, as make dev runs it (dg dev wants the project's folder), on the data home of GPU_ENERGY_HOME
        dev = subprocess.Popen([sys.executable, "-m", "pipelines", "dev", "--port", str(port)], cwd=REPO_ROOT, stdout=out,
                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                               env={**home.env, "DAGSTER_HOME": str(home.dagster_home)})
    processes: list[psutil.Process] = []
    try:
        launched = "select count(*) from run_tags where key = %s and value = %s"

        def sensor_run() -> bool:
            assert dev.poll() is None, log.read_text()[-3000:]
            return home.rows("runs", launched, "gpu_energy/launched_by", "sensor:cluster_traces_sensor") == [(1,)]

        _wait(sensor_run, "the sensor's run", log)
        ticks = home.rows("job_ticks", "select count(*) from job_ticks where selector_id is not null")
        assert ticks[0][0] >= 1  # type: ignore[operator]
        registered = home.rows("dynamic_partitions", "select partitions_def_name, partition from dynamic_partitions order by 1")
        assert registered == [("own_trace", "lab"), ("trace", "lab")]
        if home.server is not None:
            assert _sqlite_files(home) == []
        processes = [psutil.Process(dev.pid), *psutil.Process(dev.pid).children(recursive=True)]
        os.killpg(dev.pid, signal.SIGINT)
        dev.wait(timeout=30)
        took, left = survivors(processes, 30)
        assert not left and took < 5, (f"{took:.1f} s", left)
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(dev.pid, signal.SIGKILL)
        for process in processes:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()


def test_a_postgres_home_without_its_password_variable_is_named_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Refused before any connection: no server needed."""
    assert CliRunner().invoke(init_cli, [str(tmp_path / "home"), "--postgres-url", f"postgresql://lab@/dagster?host={tmp_path}"]
                              ).exit_code == 0
    monkeypatch.delenv("DAGSTER_PG_PASSWORD", raising=False)
    with pytest.raises(StorageError, match=r"dagster\.yaml: its database password is read from \$DAGSTER_PG_PASSWORD, which is not set"):
        create_storage(tmp_path / "home" / ".dagster_home")


@pytest.mark.slow  # a server of its own (initdb, start: 1 s) and Dagster's tables created in it (2.5 s)
def test_a_postgres_home_creates_dagsters_tables_on_its_server(server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = server.create_database("home_tables")
    assert CliRunner().invoke(init_cli, [str(tmp_path / "home"), "--postgres-url", url]).exit_code == 0
    monkeypatch.setenv("DAGSTER_PG_PASSWORD", "")
    create_storage(tmp_path / "home" / ".dagster_home")
    tables = {r[0] for r in server.query("home_tables", "select table_name from information_schema.tables where table_schema = 'public'")}
    assert {"runs", "event_logs", "job_ticks", "asset_daemon_asset_evaluations"} <= tables


@pytest.mark.slow  # dagster-postgres retries the connection with backoff for about 11 s before it gives up
def test_a_postgres_home_whose_server_is_not_there_is_named_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gone = tmp_path / "no-server"  # a socket folder no server listens in
    assert CliRunner().invoke(init_cli, [str(tmp_path / "home"), "--postgres-url", f"postgresql://lab@/dagster?host={gone}"]).exit_code == 0
    monkeypatch.setenv("DAGSTER_PG_PASSWORD", "")
    with pytest.raises(StorageError) as error:
        create_storage(tmp_path / "home" / ".dagster_home")
    assert "\n" not in str(error.value)
    assert re.fullmatch(rf".*: Dagster cannot open its storage: connection to server on socket "
                        rf"\"{re.escape(str(gone))}/\.s\.PGSQL\.5432\" failed: No such file or directory", str(error.value)), str(error.value)
