"""``python -m pipelines materialize``: every selected asset and partition, as Dagster runs in ``$DAGSTER_HOME``. The *driver*
(no Dagster) holds the home's lock and supervises the *orchestrator*; the stop path and exit statuses: docs/architecture.md."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import click

from pipelines.home.init import use_dagster_home
from pipelines.home.paths import find_home
from pipelines.orchestration import lock
from pipelines.orchestration.processes import die_with_parent, kill_group_but_self, supervise
from pipelines.orchestration.scratch import scratch_folder
from pipelines.orchestration.webserver import webserver
from pipelines.scaleout.local import local_cluster
from pipelines.scaleout.schedulers import SCHEDULER_ENV
from pipelines.terminal import printable

#: Set in the orchestrator's environment to the driver's pid.
PARENT_ENV = "PIPELINES_MATERIALIZE_PARENT"
#: What asks the orchestrator to stop: the driver's forwarded Ctrl-C, or the kernel when the driver dies.
STOP_SIGNAL = signal.SIGUSR1
#: Seconds from a stop (Ctrl-C) to materialize's end, its runs marked and its processes ended (issue 39).
STOP_S = 2.0
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
        sys.exit(_orchestrate(select, executor, scheduler, concurrency, parallel_runs, int(os.environ.pop(PARENT_ENV))))
    args = ["--select", select, "--executor", executor, *(["--scheduler", scheduler] if scheduler else []),
            "--concurrency", str(concurrency), "--parallel-runs", str(parallel_runs)]
    if exit_with_parent:
        die_with_parent(signal.SIGTERM, expected_parent=os.getppid())
    folder = Path(os.environ["DAGSTER_HOME"])
    try:  # scratch: the temp folder of its processes (the code server's socket), removed
        with lock.held(folder, lambda who: _echo(f"waiting: {folder / lock.LOCK_FILE} is held ({who})")), \
                scratch_folder(folder) as scratch:
            env = {**os.environ, PARENT_ENV: str(os.getpid()), **({} if scratch is None else {"TMPDIR": str(scratch)})}
            code, stopped_by = supervise([sys.executable, "-m", "pipelines", "materialize", *args],
                                         lambda pid: os.kill(pid, STOP_SIGNAL), STOP_S, env)
    except KeyboardInterrupt:  # Ctrl-C while waiting for the lock: nothing was started
        _echo("interrupted while waiting for the lock; nothing was run")
        sys.exit(130)
    if code == -STOP_SIGNAL:  # before it set its handler of the signal: it had launched nothing
        _echo("interrupted as the orchestrator started")
    elif code < 0:  # once the lock is released: recover leaves the runs of a materialize that holds it alone
        _echo(f"the orchestrator ended by signal {-code}: its processes are ended; marking its runs")
        subprocess.run([sys.executable, "-m", "pipelines", "recover"], check=False)
    sys.exit(130 if stopped_by is not None else 128 - code if code < 0 else code)


def _orchestrate(select: str, executor: str, scheduler: str | None, concurrency: int, parallel_runs: int, parent: int) -> int:
    """The orchestrator: the webserver first, Dagster then; a stop ends its group, its work and its runs (CANCELED), 130."""

    def stop(signum: int, frame: object) -> None:
        signal.signal(STOP_SIGNAL, signal.SIG_IGN)  # once: the driver's death after its Ctrl-C asks again
        kill_group_but_self()
        raise KeyboardInterrupt

    signal.signal(STOP_SIGNAL, stop)
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

            return orchestrate(select, executor, concurrency, parallel_runs, connect, _echo)
    except KeyboardInterrupt:  # a StorageError, a ClickException, is one line from click
        if "pipelines.orchestration.orchestrator" in sys.modules:  # else Dagster was not loaded yet: no run was launched
            from pipelines.orchestration.orchestrator import cancel

            cancel(_echo)
        _echo("interrupted")
        sys.stderr.flush()
        os._exit(130)  # Python's exit would wait for threads of Dagster's that served the killed processes: seconds
