"""A query that stops: a watcher thread interrupts the DuckDB connection running it on Ctrl-C, at its time limit or past its memory cap.

DuckDB runs a query in C++ without the GIL's help: Python's SIGINT handler (``KeyboardInterrupt``)
runs only when the query gives control back, which a long join or a stuck read never does. So a
watcher thread waits on ``signal.set_wakeup_fd`` (the C signal handler writes to it at once) and on
the deadline, and calls ``con.interrupt()``. A read that DuckDB cannot interrupt (a Python file
system's call in flight) is ended by exiting the process ``grace_s`` later, with one line on stderr.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import duckdb

from pipelines.home.interrupt import SIGINT_STATUS

#: Seconds a query is given to stop once interrupted before the process exits (issue 54: ``--timeout`` ends a query within
#: 1 s of its value).
GRACE_S = 0.9
#: Seconds between two looks at the process's resident memory while a query runs (``memory_cap``).
MEMORY_POLL_S = 0.05
#: Resident memory a query may add beyond DuckDB's ``memory_limit`` before it is stopped: what DuckDB does not count
#: (a result's Python objects, its allocator's slack). ``list(range(100000000))`` under a 500 MB limit reached 4.09 GB.
MEMORY_SLACK_BYTES = 512 << 20
#: Seconds a query past its memory cap is given to stop before the process exits: memory grows by GB/s.
MEMORY_GRACE_S = 0.1
_UNITS = {"bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50}


class QueryTimeout(Exception):
    """The query ran past its time limit (or its memory cap: ``QueryOverMemory``) and was interrupted."""


class QueryOverMemory(QueryTimeout):
    """The process's resident memory passed the query's cap, and the query was interrupted."""


def memory_cap(con: duckdb.DuckDBPyConnection) -> int:
    """The resident memory (bytes) the process may reach while ``con`` runs a query: what it holds now, DuckDB's
    ``memory_limit`` and ``MEMORY_SLACK_BYTES``."""
    import psutil

    number, _, unit = str(con.cursor().execute("select current_setting('memory_limit')").fetchone()[0]).partition(" ")  # type: ignore[index]
    return psutil.Process().memory_info().rss + int(float(number) * _UNITS.get(unit, 1)) + MEMORY_SLACK_BYTES


def _wait_s(deadline: float | None, *, polling: bool) -> float | None:
    """Seconds the watcher may wait for a signal: until the deadline (None: none), at most ``MEMORY_POLL_S`` when polling."""
    wait = None if deadline is None else max(deadline - time.monotonic(), 0.0)
    return wait if not polling else MEMORY_POLL_S if wait is None else min(wait, MEMORY_POLL_S)


def _process() -> Any:
    import psutil

    return psutil.Process()


def _exit_not_stopped(why: str, timeout_s: float | None, over_memory: str) -> None:
    """End the process with one line: the query did not stop within the grace after its interrupt (``why``)."""
    message = {"timeout": f"Error: the query ran past --timeout {timeout_s or 0:g} s and did not stop when interrupted",
               "memory": f"Error: {over_memory} and did not stop when interrupted"}.get(why, "Aborted (the query did not stop when interrupted).")
    sys.stderr.write(message + "\n")
    sys.stderr.flush()
    os._exit(SIGINT_STATUS if why == "interrupted" else 1)


@contextlib.contextmanager
def interruptible(con: duckdb.DuckDBPyConnection, timeout_s: float | None, grace_s: float = GRACE_S,
                  memory_bytes: int | None = None) -> Iterator[None]:
    """Run the block with ``con``'s queries interrupted by Ctrl-C, after ``timeout_s`` seconds (None or 0: no limit), or
    once the process's resident memory passes ``memory_bytes`` (None: no cap; ``memory_cap``).

    Raises ``KeyboardInterrupt`` after Ctrl-C, ``QueryTimeout`` after the time limit and ``QueryOverMemory`` past the cap
    (each instead of DuckDB's ``InterruptException``). If the block has not ended ``grace_s`` after the interrupt, the
    process exits (status 130 after Ctrl-C, else 1) with one line on stderr. Outside the main thread Ctrl-C is not
    watched.
    """
    main = threading.current_thread() is threading.main_thread()
    receiver, sender = socket.socketpair()
    sender.setblocking(False)
    done = threading.Event()
    reason: list[str] = []
    previous_fd = signal.set_wakeup_fd(sender.fileno(), warn_on_full_buffer=False) if main else -1

    over_memory = (f"the query used more than {memory_bytes / 2**30:.1f} GiB of memory (this process's cap: --memory-limit "
                   f"and {MEMORY_SLACK_BYTES >> 20} MiB more)" if memory_bytes else "")
    process = _process() if memory_bytes else None

    def watch() -> None:
        deadline = time.monotonic() + timeout_s if timeout_s else None
        while not done.is_set():
            ready, _, _ = select.select([receiver], [], [], _wait_s(deadline, polling=process is not None))
            if done.is_set():
                return
            if ready:
                data = receiver.recv(64)
                if signal.SIGINT.value.to_bytes(1, "little") not in data:
                    continue
                reason.append("interrupted")
            elif deadline is not None and time.monotonic() >= deadline:
                reason.append("timeout")
            elif process is not None and process.memory_info().rss > (memory_bytes or 0):
                reason.append("memory")
            else:
                continue
            con.interrupt()
            if not done.wait(grace_s if reason[0] != "memory" else min(grace_s, MEMORY_GRACE_S)):
                _exit_not_stopped(reason[0], timeout_s, over_memory)
            return

    watcher = threading.Thread(target=watch, name="sql-interrupt", daemon=True)
    watcher.start()
    try:
        yield
    except (duckdb.InterruptException, RuntimeError) as exc:
        # An interrupted query raises InterruptException, or RuntimeError("Query interrupted") from a result's stream;
        # DuckDB may see a pending Ctrl-C itself, before the watcher has noted it.
        if not reason and not (isinstance(exc, duckdb.InterruptException) or "interrupted" in str(exc).lower()):
            raise
        if reason and reason[0] == "timeout":
            raise QueryTimeout(f"the query ran past --timeout {timeout_s:g} s and was interrupted") from exc
        if reason and reason[0] == "memory":
            raise QueryOverMemory(f"{over_memory} and was interrupted") from exc
        raise KeyboardInterrupt from exc
    finally:
        done.set()
        with contextlib.suppress(OSError):
            sender.send(b"\0")  # wake the watcher so that it ends
        watcher.join()
        if main:
            signal.set_wakeup_fd(previous_fd)
        receiver.close()
        sender.close()
