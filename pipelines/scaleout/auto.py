"""The ``"auto"`` scheduler: in this process where that is faster, else on a local cluster (the package docstring)."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from pipelines.scaleout.local import local_cluster
from pipelines.scaleout.runners import DaskRunner, SerialRunner

T = TypeVar("T")
R = TypeVar("R")

#: Seconds a local cluster of 2 workers costs before it runs tasks as fast as this process: its start, each worker
#: importing the package and loading the compiled replay, the inputs scattered (2 cores; docs/benchmarks.md).
LOCAL_START_SECONDS = 5.0
#: Tasks ``AutoRunner`` runs in this process, timed, before it chooses (the first pays for loading code; the fastest counts).
AUTO_PROBE_TASKS = 2
#: How much sooner the estimate must see a local cluster end before ``AutoRunner`` starts one. What the estimate leaves out
#: slows the workers: whatif's draws on 1M allocations took 1.25 to 1.3 s per task on each of 2 workers against 0.76 to
#: 1.0 s here, the two sharing the machine's memory bandwidth (docs/benchmarks.md); a cluster that would win less than this
#: stays unstarted.
LOCAL_MARGIN = 1.25


def idle_cores() -> float:
    """Cores that a local cluster's workers would find idle: the cores less the 1-minute load average beyond this process's
    own (which the workers would take over); every core where the load cannot be read."""
    cores = float(os.cpu_count() or 1)
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # not on this platform
        return cores
    return min(max(cores - max(load - 1.0, 0.0), 0.0), cores)


class AutoRunner:
    """The ``"auto"`` scheduler: a map's first tasks in this process, timed; the rest here or on a local cluster,
    whichever the measured seconds per task say is sooner (the package docstring). The cluster, once started, serves
    the maps after it and is closed with the runner."""

    def __init__(self, stack: contextlib.ExitStack, workers: int | None = None, note: Callable[[str], None] | None = None) -> None:
        self._stack = stack
        self._workers = workers or os.cpu_count() or 1
        self._note = note or (lambda line: print(line, file=sys.stderr))
        self._cluster: DaskRunner | None = None
        self._stayed = False  # chose this process (for the description)

    @property
    def workers(self) -> int:
        """Tasks that may run at once: the local cluster's workers (what a caller sizes its tasks for); 1 once ``expect``
        chose this process."""
        return 1 if self._stayed and self._cluster is None else self._workers

    def expect(self, seconds: float) -> None:
        """Before the tasks are sized: the caller's estimate of its work, in seconds in this process. Where even a perfect
        spread over the idle cores would not win back the cluster's start, the work stays here, sized for one worker
        (a serial runner's tasks, so the default is never slower than ``"none"``); otherwise ``map`` measures and chooses."""
        if self._cluster is not None or self._stayed:
            return
        spread = max(min(self._workers, idle_cores()), 1.0)
        if self._workers < 2 or seconds - seconds / spread <= LOCAL_START_SECONDS:
            self._stayed = True
            self._note(f"[auto] about {seconds:.1f} s of work (estimated): less than a local cluster's {LOCAL_START_SECONDS:g} s "
                       "start would win back: running it in this process")

    @property
    def description(self) -> str:
        if self._cluster is not None:
            return f"auto: {self._cluster.description}"
        if self._stayed:
            return "auto: in-process (serial; the work would not pay for a local cluster)"
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
        if self._stayed:
            return SerialRunner().map(fn, tasks, shared, on_done)
        results: list[R] = []
        fastest, its_cpu = float("inf"), 0.0
        for i, task in enumerate(tasks):
            if i == AUTO_PROBE_TASKS and not self._stays_here(len(tasks) - i, fastest, its_cpu):
                return [*results, *self._local().map(fn, tasks[i:], shared, _shifted(on_done, i))]
            started, cpu = time.perf_counter(), time.process_time()
            results.append(fn(task, **shared))
            if (seconds := time.perf_counter() - started) < fastest:
                fastest, its_cpu = seconds, time.process_time() - cpu
            if on_done is not None:
                on_done(i)
        return results

    def _stays_here(self, rest: int, seconds: float, cpu: float) -> bool:
        """Whether ``rest`` tasks of ``seconds`` each (``cpu`` seconds of CPU, all this process's threads) end sooner here
        than on a local cluster started now; says which.

        A worker runs one task at a time on one core: a task that kept more than one core busy here (polars' threads)
        takes its CPU seconds there. The work is spread over no more workers than there are idle cores (``idle_cores``):
        the workers share them with everything else running, so on a busy machine it stays here. The cluster must win by
        ``LOCAL_MARGIN``."""
        here = rest * seconds
        idle = idle_cores()
        there = LOCAL_START_SECONDS + rest * max(seconds, cpu) / max(min(self._workers, idle), 1.0)
        stay = self._workers < 2 or here <= there * LOCAL_MARGIN
        self._stayed = self._stayed or stay
        choice = "in this process" if stay else f"on a local cluster of {self._workers} workers"
        self._note(f"[auto] {rest} tasks left at {seconds:.3g} s each, {cpu / max(seconds, 1e-9):.1f} cores busy (measured here): about "
                   f"{here:.1f} s in this process, {there:.1f} s on a local cluster ({LOCAL_START_SECONDS:g} s to start) with "
                   f"{idle:.1f} of {os.cpu_count() or 1} cores idle, where it must end {LOCAL_MARGIN:g}x sooner: running them {choice}")  # fmt: skip
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
