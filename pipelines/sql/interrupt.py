"""A query that stops: Ctrl-C or a time limit interrupts the DuckDB connection running it.

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

import duckdb

from pipelines.home.interrupt import SIGINT_STATUS

#: Seconds a query is given to stop once interrupted before the process exits.
GRACE_S = 2.0


class QueryTimeout(Exception):
    """The query ran past its time limit and was interrupted."""


@contextlib.contextmanager
def interruptible(con: duckdb.DuckDBPyConnection, timeout_s: float | None, grace_s: float = GRACE_S) -> Iterator[None]:
    """Run the block with ``con``'s queries interrupted by Ctrl-C or after ``timeout_s`` seconds (None or 0: no limit).

    Raises ``KeyboardInterrupt`` after Ctrl-C and ``QueryTimeout`` after the time limit (each instead of DuckDB's
    ``InterruptException``). If the block has not ended ``grace_s`` after the interrupt, the process exits (status 130
    after Ctrl-C, 1 after the time limit) with one line on stderr. Outside the main thread only the time limit applies.
    """
    main = threading.current_thread() is threading.main_thread()
    receiver, sender = socket.socketpair()
    sender.setblocking(False)
    done = threading.Event()
    reason: list[str] = []
    previous_fd = signal.set_wakeup_fd(sender.fileno(), warn_on_full_buffer=False) if main else -1

    def watch() -> None:
        deadline = time.monotonic() + timeout_s if timeout_s else None
        while not done.is_set():
            wait = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            ready, _, _ = select.select([receiver], [], [], wait)
            if done.is_set():
                return
            if ready:
                data = receiver.recv(64)
                if signal.SIGINT.value.to_bytes(1, "little") not in data:
                    continue
                reason.append("interrupted")
            elif deadline is not None and time.monotonic() >= deadline:
                reason.append("timeout")
            else:
                continue
            con.interrupt()
            if not done.wait(grace_s):
                message = (f"the query ran past --timeout {timeout_s:g} s and did not stop when interrupted"
                           if reason[0] == "timeout" else "Aborted (the query did not stop when interrupted).")
                sys.stderr.write(("Error: " if reason[0] == "timeout" else "") + message + "\n")
                sys.stderr.flush()
                os._exit(1 if reason[0] == "timeout" else SIGINT_STATUS)
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
