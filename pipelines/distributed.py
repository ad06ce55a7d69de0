"""Fan tasks out over Dask, or run them in this process: the layer the sweeps and the Dagster resource share.

A *scheduler* names where tasks run:

* ``"auto"`` (``AutoRunner``): in this process where that is faster, else on a ``"local"`` cluster. The
  first tasks of a map run here and are timed; from the rest's estimated seconds (``rest x`` the
  measured seconds per task) against a local cluster's (``LOCAL_START_SECONDS`` + the same work spread
  over its workers) it goes on here or starts the cluster for the rest, and says which with the estimate;
* ``"none"``: in this process, one after another (``SerialRunner``; Dask is not imported);
* ``"local"``: a ``distributed.LocalCluster`` started here and closed on exit: one worker process
  per core, one thread each (the replay is pure-Python CPU work, so processes, not threads),
  listening on 127.0.0.1 only, no dashboard. Inside a Dask worker (a step that dagster-dask's
  executor runs there) ``"local"`` is that worker's own cluster, reached with ``worker_client``;
* ``"slurm"``: workers submitted as Slurm jobs by dask-jobqueue (``pipelines.jobqueue``: the
  ``slurm`` extra), adaptive by default, the jobs cancelled on exit; waits for the first worker;
* an address (``tcp://HOST:PORT``, anything ``distributed.Client`` accepts): that cluster;
* ``None``: ``$DASK_SCHEDULER_ADDRESS`` when set (read at call time, never at import), else ``"auto"``.

``fan_out`` sends the shared inputs to the workers once (scattered and broadcast to every worker),
runs ``fn(task, **shared)`` per task and returns the results in task order. A task running on a
worker that dies is run again elsewhere by the scheduler (up to
``distributed.scheduler.allowed-failures`` times, 3 by default). Dask's active memory manager may
drop all copies of the scattered inputs but one (its ``ReduceReplicas`` policy, on by default), and
a worker that dies can take that one along: Dask then cancels the tasks that need it, and
``DaskRunner.map`` scatters the inputs again and resubmits those tasks (``RESUBMITS`` times at
most). As long as ``fn`` is deterministic, the results depend neither on the worker count nor on
the completion order.
Workers need this package importable (same version), not the data or a shared filesystem.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import CancelledError
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from pipelines.jobqueue import SlurmOptions

T = TypeVar("T")
R = TypeVar("R")

#: The environment variable naming an existing Dask scheduler (read when a runner is made).
SCHEDULER_ENV = "DASK_SCHEDULER_ADDRESS"
AUTO = "auto"
LOCAL = "local"
NONE = "none"
SLURM = "slurm"
#: The schedulers named by a word (anything else is an address).
NAMED = (AUTO, LOCAL, NONE, SLURM)
#: Seconds a local cluster of 2 workers costs before it runs tasks as fast as this process: its start, each worker
#: importing the package and loading the compiled replay, the inputs scattered (2 cores; docs/benchmarks.md).
LOCAL_START_SECONDS = 5.0
#: Tasks ``AutoRunner`` runs in this process, timed, before it chooses (the first pays for loading code; the fastest counts).
AUTO_PROBE_TASKS = 2
#: Times ``DaskRunner.map`` scatters the shared inputs again after Dask lost them with a worker.
RESUBMITS = 3
#: How long ``connect`` tries to reach a scheduler address before it gives up (``SchedulerError``).
CONNECT_TIMEOUT = "30s"


class SchedulerError(ValueError):
    """A scheduler address that cannot be reached (the message names it and why)."""


class Runner(Protocol):
    """Runs ``fn(task, **shared)`` for every task; results in task order."""

    @property
    def workers(self) -> int:
        """Tasks that can run at once (worker threads; 1 for the serial runner)."""
        ...

    @property
    def description(self) -> str: ...

    def map(
        self,
        fn: Callable[..., R],
        tasks: Sequence[T],
        shared: Mapping[str, object],
        on_done: Callable[[int], None] | None = None,
    ) -> list[R]:
        """``[fn(t, **shared) for t in tasks]``; ``on_done(i)`` after task ``i`` finished (any order)."""
        ...


class SerialRunner:
    """The ``"none"`` scheduler: every task in this process, in order."""

    workers = 1
    description = "in-process (serial)"

    def map(
        self,
        fn: Callable[..., R],
        tasks: Sequence[T],
        shared: Mapping[str, object],
        on_done: Callable[[int], None] | None = None,
    ) -> list[R]:
        results = []
        for i, task in enumerate(tasks):
            results.append(fn(task, **shared))
            if on_done is not None:
                on_done(i)
        return results


class DaskRunner:
    """Tasks on the cluster of a ``distributed.Client``."""

    def __init__(self, client: Any, description: str) -> None:
        self.client = client
        self._description = description

    @property
    def workers(self) -> int:
        return max(1, sum(self.client.nthreads().values()))

    @property
    def description(self) -> str:
        return f"{self._description}: {len(self.client.nthreads())} workers, {self.workers} threads"

    def map(
        self,
        fn: Callable[..., R],
        tasks: Sequence[T],
        shared: Mapping[str, object],
        on_done: Callable[[int], None] | None = None,
    ) -> list[R]:
        from distributed import as_completed

        results: list[Any] = [None] * len(tasks)
        pending, name = list(range(len(tasks))), getattr(fn, "__name__", "task")
        for _ in range(RESUBMITS + 1):
            if not pending:
                break
            run = uuid.uuid4().hex[:8]
            # Each value as one object ([value]): a dict scattered as itself would become one key per entry, named by the
            # entry ("itp"), which another client's scatter on the same cluster could take over.
            handles = {key: self.client.scatter([value], broadcast=True, hash=False)[0] for key, value in shared.items()}
            futures = {self.client.submit(fn, tasks[i], **handles, key=f"{name}-{run}-{i}", pure=False): i for i in pending}
            lost: list[int] = []
            try:
                for future in as_completed(futures):
                    i = futures[future]
                    try:
                        results[i] = future.result()  # re-raises the task's exception here
                    except CancelledError:  # its scattered inputs were lost (the module's docstring): run it again
                        lost.append(i)
                        continue
                    if on_done is not None:
                        on_done(i)
            finally:
                self.client.cancel([*futures, *handles.values()])
            pending = sorted(lost)
        if pending:
            raise RuntimeError(f"{len(pending)} of {len(tasks)} tasks lost their scattered inputs {RESUBMITS + 1} times: workers keep dying")
        return results


class AutoRunner:
    """The ``"auto"`` scheduler: a map's first tasks in this process, timed; the rest here or on a local cluster,
    whichever the measured seconds per task say is sooner (the module docstring). The cluster, once started, serves
    the maps after it and is closed with the runner."""

    def __init__(self, stack: contextlib.ExitStack, workers: int | None = None, note: Callable[[str], None] | None = None) -> None:
        self._stack = stack
        self._workers = workers or os.cpu_count() or 1
        self._note = note or (lambda line: print(line, file=sys.stderr))
        self._cluster: DaskRunner | None = None
        self._stayed = False  # chose this process (for the description)

    @property
    def workers(self) -> int:
        """Tasks that may run at once: the local cluster's workers (what a caller sizes its tasks for)."""
        return self._workers

    @property
    def description(self) -> str:
        if self._cluster is not None:
            return f"auto: {self._cluster.description}"
        if self._stayed:
            return "auto: in-process (serial; the measured work did not pay for a local cluster)"
        return f"auto: in-process, or a local cluster of {self._workers} workers where the measured work pays for it"

    def map(
        self,
        fn: Callable[..., R],
        tasks: Sequence[T],
        shared: Mapping[str, object],
        on_done: Callable[[int], None] | None = None,
    ) -> list[R]:
        if self._cluster is not None:
            return self._cluster.map(fn, tasks, shared, on_done)
        results: list[R] = []
        fastest = float("inf")
        for i, task in enumerate(tasks):
            if i == AUTO_PROBE_TASKS and not self._stays_here(len(tasks) - i, fastest):
                return [*results, *self._local().map(fn, tasks[i:], shared, _shifted(on_done, i))]
            started = time.perf_counter()
            results.append(fn(task, **shared))
            fastest = min(fastest, time.perf_counter() - started)
            if on_done is not None:
                on_done(i)
        return results

    def _stays_here(self, rest: int, seconds: float) -> bool:
        """Whether ``rest`` tasks of ``seconds`` each end sooner here than on a local cluster started now; says which."""
        here = rest * seconds
        there = LOCAL_START_SECONDS + here / self._workers
        stay = self._workers < 2 or here <= there
        self._stayed = self._stayed or stay
        choice = "in this process" if stay else f"on a local cluster of {self._workers} workers"
        self._note(f"[auto] {rest} tasks left at {seconds:.3g} s each (measured here): about {here:.1f} s in this process, "
                   f"{there:.1f} s on a local cluster ({LOCAL_START_SECONDS:g} s to start): running them {choice}")  # fmt: skip
        return stay

    def _local(self) -> DaskRunner:
        from distributed import Client

        cluster = self._stack.enter_context(local_cluster(self._workers))
        client = self._stack.enter_context(Client(cluster))
        self._cluster = DaskRunner(client, f"local cluster {cluster.scheduler_address}")
        return self._cluster


def _shifted(on_done: Callable[[int], None] | None, by: int) -> Callable[[int], None] | None:
    """``on_done`` for a map of ``tasks[by:]``: its task ``j`` is task ``by + j`` of the whole."""
    if on_done is None:
        return None
    return lambda j: on_done(by + j)


def resolve_scheduler(scheduler: str | None = None) -> str:
    """``scheduler``, or ``$DASK_SCHEDULER_ADDRESS``, or ``"auto"`` (see the module docstring)."""
    if scheduler:
        return scheduler
    return os.environ.get(SCHEDULER_ENV) or AUTO


def _inside_dask_worker() -> bool:
    try:
        from distributed import get_worker

        get_worker()
    except (ImportError, ValueError):
        return False
    return True


@contextlib.contextmanager
def local_cluster(workers: int | None = None) -> Iterator[Any]:
    """A ``distributed.LocalCluster`` for CPU-bound Python: ``workers`` processes (default one per core)
    of one thread each, on 127.0.0.1, no dashboards; closed on exit."""
    import psutil
    from distributed import LocalCluster

    before = {p.pid for p in psutil.Process().children(recursive=True)}
    with contextlib.ExitStack() as stack:
        try:
            yield stack.enter_context(LocalCluster(
                n_workers=workers or os.cpu_count() or 1,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
                worker_dashboard_address=None,
                # Without a dashboard the scheduler still serves its HTTP routes (health, metrics) on 8787,
                # warning when that port is taken (another cluster, two commands at once): any free port.
                scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
                silence_logs=logging.ERROR,
            ))
        except KeyboardInterrupt:
            # A Ctrl-C drops the workers' work: they are killed at once, before the cluster's close (the stack's) would
            # wait seconds on each (issue 39: Ctrl-C stops a command within 2 s).
            for child in psutil.Process().children(recursive=True):
                with contextlib.suppress(psutil.NoSuchProcess):
                    if child.pid not in before and "resource_tracker" not in " ".join(child.cmdline()):  # it cleans up after them
                        child.kill()
            raise


@contextlib.contextmanager
def connect(scheduler: str | None = None, *, workers: int | None = None, slurm: SlurmOptions | None = None,
            note: Callable[[str], None] | None = None) -> Iterator[Runner]:
    """A runner for ``scheduler`` (see the module docstring), closed (cluster stopped) on exit.

    ``workers``: processes of a ``"local"`` (or ``"auto"``'s) cluster (default: one per core); ``slurm``: the jobs of
    a ``"slurm"`` cluster (default: Dask's ``jobqueue.slurm`` config); both ignored otherwise.
    ``note``: where a Slurm cluster's progress lines and ``"auto"``'s choice go (default for the latter: stderr).
    """
    target = resolve_scheduler(scheduler)
    if target == NONE:
        yield SerialRunner()
        return
    if target in (LOCAL, AUTO) and _inside_dask_worker():
        from distributed import worker_client

        with worker_client() as client:
            yield DaskRunner(client, f"the Dask cluster of this worker ({client.scheduler.address})")
        return
    if target == AUTO:
        with contextlib.ExitStack() as stack:
            yield AutoRunner(stack, workers, note)
        return
    from distributed import Client

    if target == LOCAL:
        with local_cluster(workers) as cluster, Client(cluster) as client:
            yield DaskRunner(client, f"local cluster {cluster.scheduler_address}")
        return
    if target == SLURM:
        from pipelines.jobqueue import SlurmOptions, slurm_cluster, wait_for_workers

        with slurm_cluster(slurm or SlurmOptions(), note) as cluster, Client(cluster) as client:
            wait_for_workers(client, note)
            yield DaskRunner(client, f"Slurm jobs of scheduler {cluster.scheduler_address}")
        return
    try:
        client = Client(target, timeout=CONNECT_TIMEOUT)
    except OSError as exc:  # nothing listening, a timeout, a name that does not resolve
        raise SchedulerError(f"Dask scheduler {target}: {exc}") from None
    with client:
        yield DaskRunner(client, f"Dask scheduler {target}")


def fan_out(
    runner: Runner,
    fn: Callable[..., R],
    tasks: Sequence[T],
    shared: Mapping[str, object],
    *,
    progress: bool = False,
    label: str = "tasks",
) -> list[R]:
    """``runner.map`` with a tqdm progress bar on stderr when ``progress`` (one tick per finished task)."""
    if not progress:
        return runner.map(fn, tasks, shared)
    from tqdm import tqdm

    with tqdm(total=len(tasks), unit="task", desc=label, dynamic_ncols=True) as bar:
        return runner.map(fn, tasks, shared, on_done=lambda _: bar.update(1))
