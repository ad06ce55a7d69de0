"""The temp folder of one ``materialize``'s processes (``TMPDIR`` of the orchestrator, its webserver, code server and
runs), removed when the driver ends.

Dagster's code server listens on a Unix socket it makes with ``tempfile`` (``/tmp/tmpXXXXXXXX``), and a killed one leaves
it: every interrupted ``materialize`` (SIGINT, SIGTERM, SIGKILL) left one in /tmp (issue 54). Under this folder all that
the process tree puts in the temp folder goes where the driver removes it, however the orchestrator ended; what a killed
driver left is removed by the next ``materialize`` of any home that uses the same folder (its pid, in the name, is gone).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

#: The folder of the Dagster home that holds the scratch folders (``<DAGSTER_HOME>/scratch/materialize-<pid>-<random>``).
FOLDER = "scratch"
PREFIX = "materialize-"
#: Longest folder (bytes) for the scratch folders: a Unix socket's path is at most 107 bytes, and the code server's is the
#: scratch folder's (about 30 more) and ``/tmpXXXXXXXX``. A longer home's scratch goes to the system's temp folder; where
#: that is too long as well, there is no scratch folder (the processes use the temp folder as they find it).
MAX_BASE_BYTES = 60


def base_folder(dagster_home: Path) -> Path | None:
    """Where the scratch folders of ``dagster_home``'s materializations go: its ``FOLDER``, else the system's temp folder,
    the first whose path leaves room for a socket under it; None where neither does."""
    for base in (dagster_home / FOLDER, Path(tempfile.gettempdir())):
        if len(os.fsencode(base)) <= MAX_BASE_BYTES:
            return base
    return None


@contextlib.contextmanager
def scratch_folder(dagster_home: Path) -> Iterator[Path | None]:
    """A new scratch folder for this process's materialization, removed on exit; the stale ones of ended drivers first.
    None (no scratch folder) where no folder leaves room for the code server's socket (``base_folder``)."""
    base = base_folder(dagster_home)
    if base is None:
        yield None
        return
    base.mkdir(parents=True, exist_ok=True)
    remove_stale(base)
    folder = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=base))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def remove_stale(base: Path) -> list[Path]:
    """Remove the scratch folders under ``base`` whose driver (the pid in the name) no longer runs; those removed."""
    removed = []
    for folder in base.glob(f"{PREFIX}*"):
        pid = folder.name.removeprefix(PREFIX).partition("-")[0]
        if pid.isdigit() and not _running(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    return True
