"""The temp folder (``TMPDIR``) of one ``materialize``'s processes, removed when the driver ends, a killed code server's
socket with it (issue 54); a killed driver's, by the next ``materialize`` that uses the same base (its pid is gone)."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil

FOLDER, PREFIX = "scratch", "materialize-"  # <DAGSTER_HOME>/scratch/materialize-<pid>-<random>
#: Longest folder (bytes) for the scratch folders: a Unix socket's path is at most 107 bytes, and the code server's is the
#: scratch folder's (about 30 more) and ``/tmpXXXXXXXX`` (a CI failure once). A longer home's scratch goes to the
#: system's temp folder; where that is too long as well, there is none (the processes use the temp folder as they find it).
MAX_BASE_BYTES = 60


def base_folder(dagster_home: Path) -> Path | None:
    """The first of ``dagster_home``'s ``FOLDER`` and the system's temp folder whose path leaves room for a socket under it."""
    return next((b for b in (dagster_home / FOLDER, Path(tempfile.gettempdir())) if len(os.fsencode(b)) <= MAX_BASE_BYTES), None)


@contextlib.contextmanager
def scratch_folder(dagster_home: Path) -> Iterator[Path | None]:
    """A new scratch folder under ``base_folder`` (None where there is none), removed on exit; the stale ones first."""
    if (base := base_folder(dagster_home)) is None:
        yield None
        return
    base.mkdir(parents=True, exist_ok=True)
    remove_stale(base)
    with tempfile.TemporaryDirectory(prefix=f"{PREFIX}{os.getpid()}-", dir=base, ignore_cleanup_errors=True) as folder:
        yield Path(folder)


def remove_stale(base: Path) -> list[Path]:
    """Remove the scratch folders under ``base`` whose driver (the pid in the name) no longer runs; those removed."""
    stale = [f for f in base.glob(f"{PREFIX}*") if (pid := f.name.removeprefix(PREFIX).partition("-")[0]).isdigit()
             and not psutil.pid_exists(int(pid))]
    for folder in stale:
        shutil.rmtree(folder, ignore_errors=True)
    return stale
