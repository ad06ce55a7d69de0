"""Where a map of tasks runs: the ``Runner`` protocol, in this process (``SerialRunner``) or on a Dask
client's cluster (``DaskRunner``, which scatters the shared inputs and resubmits tasks that lost them), and
``fan_out`` (a map with a progress bar). The package docstring says how the inputs travel."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import CancelledError
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
R = TypeVar("R")

#: Times ``DaskRunner.map`` scatters the shared inputs again after Dask lost them with a worker.
RESUBMITS = 3


class Runner(Protocol):
    """Runs ``fn(task, **shared)`` for every task; results in task order."""

    @property
    def workers(self) -> int:
        """Tasks that can run at once (worker threads; 1 for the serial runner)."""
        ...

    @property
    def description(self) -> str: ...

    def expect(self, seconds: float) -> None:
        """Before the tasks are sized: the caller's estimate of its work in this process (s). A runner that chooses where
        to run (``auto``) chooses with it; the others have nothing to choose."""
        ...

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

    def expect(self, seconds: float) -> None:
        pass

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

    def expect(self, seconds: float) -> None:
        pass

    def map(
        self,
        fn: Callable[..., R],
        tasks: Sequence[T],
        shared: Mapping[str, object],
        on_done: Callable[[int], None] | None = None,
    ) -> list[R]:
        results: list[Any] = [None] * len(tasks)

        def done(i: int, result: Any) -> None:
            results[i] = result
            if on_done is not None:
                on_done(i)

        self.map_parts(fn, [(None, t) for t in tasks], [], shared, done)
        return results

    def map_parts(
        self,
        fn: Callable[..., R],
        tasks: Sequence[tuple[int | None, T]],
        parts: Sequence[object],
        shared: Mapping[str, object],
        on_result: Callable[[int, R], None],
        window: int | None = None,
    ) -> None:
        """``fn(task, **shared)`` for every ``(part, task)``, and ``part=parts[part]`` too where ``part`` is not None;
        ``on_result(i, result)`` for task ``i`` as it finishes (any order; the caller keeps what it needs). ``shared`` is
        broadcast to every worker; each of ``parts`` is scattered once to one worker (not broadcast) and goes to its tasks
        only, Dask moving it where a task runs. Tasks are submitted in order; with ``window``, at most that many are
        submitted and not yet taken at once (a finished task's result waits in its worker's memory until taken: large
        results, taken slower than the workers make them, would otherwise pile up there)."""
        pending = list(range(len(tasks)))
        for _ in range(RESUBMITS + 1):
            if not pending:
                break
            pending = self._attempt(fn, tasks, pending, parts, shared, on_result, window)
        if pending:
            raise RuntimeError(f"{len(pending)} of {len(tasks)} tasks lost their scattered inputs {RESUBMITS + 1} times: workers keep dying")

    def _attempt(
        self,
        fn: Callable[..., R],
        tasks: Sequence[tuple[int | None, T]],
        pending: list[int],
        parts: Sequence[object],
        shared: Mapping[str, object],
        on_result: Callable[[int, R], None],
        window: int | None,
    ) -> list[int]:
        """One try of ``map_parts`` for tasks ``pending``, the inputs scattered afresh; the tasks whose inputs were lost."""
        from distributed import as_completed

        name, run = getattr(fn, "__name__", "task"), uuid.uuid4().hex[:8]
        # Each value as one object ([value]): a dict scattered as itself would become one key per entry, named by the
        # entry ("itp"), which another client's scatter on the same cluster could take over.
        handles = {key: self.client.scatter([value], broadcast=True, hash=False)[0] for key, value in shared.items()}
        wanted = sorted({p for i in pending if (p := tasks[i][0]) is not None})
        placed = {p: self.client.scatter([parts[p]], hash=False)[0] for p in wanted}
        futures: dict[Any, int] = {}
        queue = iter(pending)
        running = as_completed()

        def submit_next() -> None:
            i = next(queue, None)
            if i is None:
                return
            part, task = tasks[i]
            given = {} if part is None else {"part": placed[part]}
            future = self.client.submit(fn, task, **handles, **given, key=f"{name}-{run}-{i}", pure=False)
            futures[future] = i
            running.add(future)

        for _ in range(window or len(pending)):
            submit_next()
        lost: list[int] = []
        try:
            for future in running:
                i = futures.pop(future)  # its result then released on the worker once taken
                try:
                    result = future.result()  # re-raises the task's exception here
                except CancelledError:  # its scattered inputs were lost (the module's docstring): run it again
                    lost.append(i)
                    continue
                finally:
                    future.release()
                    submit_next()
                on_result(i, result)
                del result
        finally:
            self.client.cancel([*futures, *handles.values(), *placed.values()])
        return sorted(lost)

    def workers_read(self, check: Callable[..., bool], *args: object) -> bool:
        """Whether ``check(*args)`` is true on every worker now (``Client.run``; a worker that raises counts as false).
        Workers that join later (an adaptive cluster) are not asked."""
        try:
            answers = self.client.run(check, *args)
        except Exception:  # a worker that cannot answer cannot read the folder: task data then
            return False
        return bool(answers) and all(answer is True for answer in answers.values())


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
