"""``python -m pipelines materialize``: every selected asset and partition, as Dagster runs in ``$DAGSTER_HOME``.

The command (the *driver*, no Dagster) holds the home's lock and starts the *orchestrator* in a process group of its own;
Ctrl-C or SIGTERM reaches it as ``STOP_SIGNAL``, and so does the driver's death: it kills every other process of its group
and marks its runs CANCELED, within ``STOP_S`` (else the driver kills the group, and ``recover`` marks the runs).
Exit status: 0, 1 (each failed step and check named in one line) or 130 (docs/architecture.md, Orchestration).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import ExitStack
from pathlib import Path

import click

from pipelines.home.init import use_dagster_home
from pipelines.home.paths import find_home
from pipelines.orchestration import lock
from pipelines.orchestration.processes import STOP_S, STOP_SIGNAL, Stopped, die_with_parent, end_group, kill_group_but_self
from pipelines.orchestration.scratch import scratch_folder
from pipelines.orchestration.storage import StorageError, make_folder
from pipelines.orchestration.webserver import webserver
from pipelines.scaleout.local import local_cluster
from pipelines.scaleout.schedulers import SCHEDULER_ENV
from pipelines.terminal import printable

#: Set in the orchestrator's environment to the driver's pid.
PARENT_ENV = "PIPELINES_MATERIALIZE_PARENT"
#: Runs at once by default, one per core and one more: each run executes in one process (one core), and one of them is
#: often starting (loading the code location) or writing rather than computing.
PARALLEL_RUNS = (os.cpu_count() or 1) + 1


def _echo(message: str) -> None:
    click.echo(f"[materialize] {printable(message)}", err=True)


@click.command("materialize")
@click.option("--select", default="*", show_default=True, help="Dagster asset selection: '*', 'group:ingest', 'itp_jobs', "
              "'+zeus_cluster_summary', 'key:a or key:b'; widened to the assets a multi-asset writes together.")
@click.option("--executor", type=click.Choice(["multiprocess", "dask"]), default="multiprocess", show_default=True,
              help="Who runs the steps of each run: Dagster's multiprocess executor here, or dagster-dask's dask_executor.")
@click.option("--scheduler", help="With --executor dask: the scheduler address (default: $DASK_SCHEDULER_ADDRESS, else a LocalCluster).")
@click.option("--concurrency", type=click.IntRange(min=1), default=1, show_default=True,
              help="Steps at once in a run: 1 runs them in the run's process; more runs them in processes of their own.")
@click.option("--parallel-runs", type=click.IntRange(min=1), default=PARALLEL_RUNS, show_default="one per core and one more",
              help="Runs at once (each starts once the runs it reads from have succeeded).")
@click.option("--exit-with-parent", is_flag=True, help="Stop (canceling the run) when the parent process exits.")
def cli(select: str, executor: str, scheduler: str | None, concurrency: int, parallel_runs: int, exit_with_parent: bool) -> None:
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
        sys.exit(_orchestrate(select, executor, scheduler, concurrency, parallel_runs, parent))
    args = ["--select", select, "--executor", executor, *(["--scheduler", scheduler] if scheduler else []),
            "--concurrency", str(concurrency), "--parallel-runs", str(parallel_runs)]
    if exit_with_parent:
        die_with_parent(signal.SIGTERM, expected_parent=os.getppid())
    folder = Path(os.environ["DAGSTER_HOME"])
    try:
        make_folder(folder)
    except StorageError as exc:
        raise click.ClickException(str(exc)) from None
    try:
        # scratch: the temp folder of its processes (the code server's socket), removed
        with lock.held(folder, lambda who: _echo(f"waiting: another materialize holds {folder / lock.LOCK_FILE} ({who})")), \
                scratch_folder(folder) as scratch:
            code, signalled = _drive(args, scratch)
    except KeyboardInterrupt:  # Ctrl-C while waiting for the lock: nothing was started
        _echo("interrupted while waiting for the lock; nothing was run")
        code, signalled = 130, False
    if signalled:  # once the lock is released: recover leaves the runs of a materialize that holds it alone
        subprocess.run([sys.executable, "-m", "pipelines", "recover"], check=False)
    sys.exit(code)


def _drive(args: list[str], scratch: Path | None) -> tuple[int, bool]:
    """Run the orchestrator (its temp folder ``scratch``, None: the one it finds), forwarding a stop to it; (exit status,
    whether it was killed). One that has not ended ``STOP_S`` after a stop is killed with its group."""
    temp = {} if scratch is None else {"TMPDIR": str(scratch)}
    child = subprocess.Popen([sys.executable, "-m", "pipelines", "materialize", *args],
                             env={**os.environ, PARENT_ENV: str(os.getpid()), **temp}, start_new_session=True)
    asked: list[float] = []

    def forward(signum: int, frame: object) -> None:
        asked.append(time.monotonic())
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(STOP_SIGNAL)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, forward)
    while (code := child.poll()) is None:
        if asked and time.monotonic() > asked[0] + STOP_S:
            _echo(f"the orchestrator did not stop within {STOP_S:.0f} s: ending its processes")
            end_group(child.pid, grace_s=0.0)
        time.sleep(0.02)
    if code < 0 or not asked:  # what is left of its group; after a stop it killed its group itself (resource trackers aside)
        end_group(child.pid, grace_s=0.0 if asked else 2.0)
    if code == -STOP_SIGNAL:  # before it set its handler of the signal: it had launched nothing
        _echo("interrupted as the orchestrator started")
    elif code < 0:
        _echo(f"the orchestrator ended by signal {-code}: its processes are ended; marking its runs")
    return (130 if asked else 128 - code) if code < 0 else code, code < 0 and code != -STOP_SIGNAL


def _orchestrate(select: str, executor: str, scheduler: str | None, concurrency: int, parallel_runs: int, parent: int) -> int:
    """The orchestrator (the driver's child): starts the webserver, then imports Dagster and plans while the server loads.

    A stop kills every other process of its group at once (the webserver, its code server, the runs' processes), then
    ends what it was doing (``Stopped``)."""
    stop = threading.Event()

    def stop_now(signum: int, frame: object) -> None:
        if not stop.is_set():
            stop.set()
            kill_group_but_self()
            # What Stopped interrupts may log it or drop it (a connection's close, a garbage-collection callback): not news.
            logging.disable(logging.CRITICAL)
            sys.unraisablehook = lambda unraisable: None
            raise Stopped

    signal.signal(STOP_SIGNAL, stop_now)
    die_with_parent(STOP_SIGNAL, expected_parent=parent)
    try:
        with ExitStack() as stack:
            if executor == "dask":  # read by the code location's executor (pipelines.defs.resources) where the runs load it
                address = scheduler or os.environ.get(SCHEDULER_ENV) or stack.enter_context(local_cluster()).scheduler_address
                os.environ["PIPELINES_EXECUTOR"], os.environ[SCHEDULER_ENV] = "dask", address
                _echo(f"Dask scheduler {address}")
            connect = stack.enter_context(webserver(find_home(), Path(os.environ["DAGSTER_HOME"])))
            # Not imported by the driver, and imported only now: Dagster and the code location load here as the server loads them.
            from pipelines.orchestration.orchestrator import orchestrate

            code = orchestrate(select, executor, concurrency, parallel_runs, connect, stop.is_set, _echo)
    except StorageError as exc:
        _echo(f"FAILED: {exc}")
        code = 1
    except Stopped:  # before orchestrate opened the instance: no run launched
        _echo("interrupted")
        code = 130
    if stop.is_set():  # Python's exit would wait for threads of Dagster's that served the killed processes: seconds
        sys.stderr.flush()
        os._exit(code)
    return code
