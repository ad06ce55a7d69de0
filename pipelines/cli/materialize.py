"""``python -m pipelines materialize``: every selected asset and partition, as Dagster runs in ``$DAGSTER_HOME``.

The command (the *driver*, no Dagster) holds the home's lock and starts the *orchestrator* in a process group of its own;
Ctrl-C or SIGTERM reaches it as ``STOP_SIGNAL`` (twice: the group ends at once), and so does the driver's death.
Exit status: 0, 1 (each failed step and check named in one line) or 130 (docs/architecture.md, Orchestration).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from contextlib import ExitStack
from pathlib import Path

import click

from pipelines.home.init import use_dagster_home
from pipelines.home.paths import find_home
from pipelines.orchestration import lock
from pipelines.orchestration.processes import STOP_SIGNAL, die_with_parent, end_group
from pipelines.orchestration.storage import StorageError, make_folder
from pipelines.orchestration.webserver import webserver
from pipelines.scaleout.local import local_cluster
from pipelines.scaleout.schedulers import SCHEDULER_ENV
from pipelines.terminal import printable

#: Set in the orchestrator's environment to the driver's pid.
PARENT_ENV = "PIPELINES_MATERIALIZE_PARENT"
#: Runs at once by default: a partitioned run replays in one process (one core) while a run of figures uses the others.
PARALLEL_RUNS = 2


def _echo(message: str) -> None:
    click.echo(f"[materialize] {printable(message)}", err=True)


@click.command("materialize")
@click.option("--select", default="*", show_default=True, help="Dagster asset selection: '*', 'group:ingest', 'itp_jobs', "
              "'+zeus_cluster_summary', 'key:a or key:b'; widened to the assets a multi-asset writes together.")
@click.option("--executor", type=click.Choice(["multiprocess", "dask"]), default="multiprocess", show_default=True,
              help="Who runs the steps of each run: Dagster's multiprocess executor here, or dagster-dask's dask_executor.")
@click.option("--scheduler", help="With --executor dask: the scheduler address (default: $DASK_SCHEDULER_ADDRESS, else a LocalCluster).")
@click.option("--concurrency", type=click.IntRange(min=1), help="Steps at once in a run (default: one per core).")
@click.option("--parallel-runs", type=click.IntRange(min=1), default=PARALLEL_RUNS, show_default=True,
              help="Runs at once (each starts once the runs it reads from have succeeded).")
@click.option("--exit-with-parent", is_flag=True, help="Stop (canceling the run) when the parent process exits.")
def cli(select: str, executor: str, scheduler: str | None, concurrency: int | None, parallel_runs: int, exit_with_parent: bool) -> None:
    """Materialize every selected asset and partition (what `make figures` runs).

    One at a time per Dagster home: a second command says which process holds it and waits. Each of your own traces
    (raw/clusters/) is ingested in a run of its own: one that fails is named, and the others go on.
    """
    if scheduler and executor != "dask":
        raise click.UsageError("--scheduler goes with --executor dask")
    if not os.environ.get("DAGSTER_HOME"):
        _echo("Dagster instance: {} ({})".format(*use_dagster_home()))
    if os.environ.get(PARENT_ENV) == str(os.getppid()):
        parent = int(os.environ.pop(PARENT_ENV))
        sys.exit(_orchestrate(select, executor, scheduler, concurrency or os.cpu_count() or 1, parallel_runs, parent))
    args = ["--select", select, "--executor", executor, *(["--scheduler", scheduler] if scheduler else []),
            *(["--concurrency", str(concurrency)] if concurrency else []), "--parallel-runs", str(parallel_runs)]
    if exit_with_parent:
        die_with_parent(signal.SIGTERM, expected_parent=os.getppid())
    folder = Path(os.environ["DAGSTER_HOME"])
    try:
        make_folder(folder)
    except StorageError as exc:
        raise click.ClickException(str(exc)) from None
    try:
        with lock.held(folder, lambda who: _echo(f"waiting: another materialize holds {folder / lock.LOCK_FILE} ({who})")):
            code, signalled = _drive(args)
    except KeyboardInterrupt:  # Ctrl-C while waiting for the lock: nothing was started
        _echo("interrupted while waiting for the lock; nothing was run")
        code, signalled = 130, False
    if signalled:  # once the lock is released: recover leaves the runs of a materialize that holds it alone
        subprocess.run([sys.executable, "-m", "pipelines", "recover"], check=False)
    sys.exit(code)


def _drive(args: list[str]) -> tuple[int, bool]:
    """Run the orchestrator, forwarding a stop to it; (exit status, whether it ended by a signal)."""
    child = subprocess.Popen([sys.executable, "-m", "pipelines", "materialize", *args],
                             env={**os.environ, PARENT_ENV: str(os.getpid())}, start_new_session=True)
    asked: list[int] = []

    def forward(signum: int, frame: object) -> None:
        if asked:
            _echo("asked again: ending every process now")
            end_group(child.pid, grace_s=2.0)
        asked.append(signum)
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(STOP_SIGNAL)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, forward)
    code = child.wait()
    end_group(child.pid, grace_s=2.0)  # whatever of its group is left (nothing, after a clean exit)
    if code < 0:
        _echo(f"the orchestrator ended by signal {-code}: its processes are ended; marking its runs")
    return ((130 if asked else 128 - code) if code < 0 else code), code < 0


def _orchestrate(select: str, executor: str, scheduler: str | None, concurrency: int, parallel_runs: int, parent: int) -> int:
    """The orchestrator (the driver's child): starts the webserver, then imports Dagster and plans while the server loads."""
    stop = threading.Event()
    signal.signal(STOP_SIGNAL, lambda signum, frame: stop.set())
    die_with_parent(STOP_SIGNAL, expected_parent=parent)
    with ExitStack() as stack:
        if executor == "dask":  # read by the code location's executor (pipelines.defs.resources) where the runs load it
            address = scheduler or os.environ.get(SCHEDULER_ENV) or stack.enter_context(local_cluster()).scheduler_address
            os.environ["PIPELINES_EXECUTOR"], os.environ[SCHEDULER_ENV] = "dask", address
            _echo(f"Dask scheduler {address}")
        try:
            connect = stack.enter_context(webserver(find_home(), Path(os.environ["DAGSTER_HOME"])))
        except StorageError as exc:
            _echo(f"FAILED: {exc}")
            return 1
        # Not imported by the driver, and imported only now: Dagster and the code location load here as the server loads them.
        from pipelines.orchestration.orchestrator import orchestrate

        return orchestrate(select, executor, concurrency, parallel_runs, connect, stop.is_set, _echo)
