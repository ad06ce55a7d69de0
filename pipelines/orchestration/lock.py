"""One ``materialize`` at a time per Dagster home, and no ``clusters add`` or ``remove`` while it runs: ``fcntl.flock`` on
``<home>/materialize.lock`` (released however its holder exits), which holds the holder's pid, start and command."""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import click

from pipelines.orchestration.dagster_storage import open_in_home

LOCK_FILE = "materialize.lock"
UNWRITTEN = "a process that has not written its pid yet"


@contextlib.contextmanager
def held(folder: Path, on_wait: Callable[[str], None]) -> Iterator[None]:
    """Hold the lock of ``folder`` while the block runs; a holder is named to ``on_wait`` (pid, start, command) once, then waited for."""
    with open_in_home(folder, LOCK_FILE) as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            on_wait(fh.read().strip() or UNWRITTEN)
            fcntl.flock(fh, fcntl.LOCK_EX)
        fh.seek(0)
        fh.truncate()
        context = click.get_current_context(silent=True)
        command = context.command_path if context else os.path.basename(sys.argv[0])
        fh.write(f"pid {os.getpid()}, started {datetime.now(UTC).strftime('%Y-%m-%d %H:%M:%S UTC')}: {command}\n")
        fh.flush()
        yield  # what it wrote stays: read only while a process holds the lock


def holder(folder: Path) -> str | None:
    """Who holds the lock of ``folder`` (its pid, start and command, as it wrote them), or None when no process holds it."""
    with contextlib.suppress(FileNotFoundError), open(folder / LOCK_FILE, encoding="utf-8") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)  # released as the file closes
        except BlockingIOError:
            return fh.read().strip() or UNWRITTEN
    return None
