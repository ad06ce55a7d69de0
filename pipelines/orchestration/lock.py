"""One ``materialize`` at a time per Dagster home: ``fcntl.flock`` on ``<home>/materialize.lock``, released by the kernel
however its holder exits, with the holder's pid and start written in it (whom a second command waits for)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

LOCK_FILE = "materialize.lock"


@contextlib.contextmanager
def held(folder: Path, on_wait: Callable[[str], None]) -> Iterator[None]:
    """Hold the lock of ``folder`` (a Dagster home) while the block runs; if another process holds it, call
    ``on_wait(who)`` (its pid and start, as it wrote them) once and wait until it is released."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / LOCK_FILE, "a+", encoding="utf-8") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            on_wait(fh.read().strip() or "a process that has not written its pid yet")
            fcntl.flock(fh, fcntl.LOCK_EX)
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()}, started {datetime.now(UTC).strftime('%Y-%m-%d %H:%M:%S UTC')}\n")
        fh.flush()
        try:
            yield
        finally:
            fh.seek(0)
            fh.truncate()
            fh.flush()


def holder(folder: Path) -> str | None:
    """Who holds the lock of ``folder`` (its pid and start, as it wrote them), or None when no process holds it."""
    try:
        fh = open(folder / LOCK_FILE, encoding="utf-8")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return None
    with fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return fh.read().strip() or "a process that has not written its pid yet"
        fcntl.flock(fh, fcntl.LOCK_UN)
        return None
