"""Work of this process run beside a cluster's start: ``Background`` (``whatif`` reads its export while a LocalCluster starts)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

R = TypeVar("R")


class Background(Generic[R]):
    """``fn()`` started at once on a thread of its own; ``result()`` waits for it and returns its value or raises its exception.

    The thread is a daemon: a Ctrl-C in the calling thread (while it starts a cluster, or waits here) ends the command
    without waiting for ``fn``, as it would have without the thread. ``fn`` must not need the main thread (no signals, no
    prompts)."""

    def __init__(self, fn: Callable[[], R]) -> None:
        self._value: list[R] = []
        self._error: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, args=(fn,), name="background", daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[[], R]) -> None:
        try:
            self._value.append(fn())
        except BaseException as exc:  # handed to the caller of result(), re-raised there
            self._error.append(exc)

    def result(self) -> R:
        """``fn``'s value, once it returned; its exception, re-raised here."""
        self._thread.join()
        if self._error:
            raise self._error[0]
        return self._value[0]


def beside(fn: Callable[[], R], overlap: bool) -> Callable[[], R]:
    """What gives ``fn()``'s value: with ``overlap`` a ``Background``'s ``result`` (``fn`` runs while the caller starts its
    cluster), else ``fn()`` called now."""
    if overlap:
        return Background(fn).result
    value = fn()
    return lambda: value
