"""A new Dagster home's SQLite storage, created under an advisory lock (``<home>/storage.lock``) by one process at a time.

Two processes creating a home at once can both stamp a database, which Dagster then cannot open ("more than one head").
A home whose databases are all stamped is left as it is, read with sqlite3 and no Dagster import.
"""

from __future__ import annotations

import contextlib
import fcntl
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.home.init import use_dagster_home

if TYPE_CHECKING:
    import dagster as dg

#: The databases of Dagster's ``DagsterSqliteStorage`` under its base_dir (the home), each stamped with its schema version.
STORAGE_FILES = ("history/runs.db", "history/runs/index.db", "schedules/schedules.db")
LOCK_FILE = "storage.lock"


class StorageError(RuntimeError):
    """A home or a database of it that Dagster cannot open, and how to repair it."""


#: How to repair a database Dagster cannot open (``StorageError``).
REPAIR = ("Dagster cannot open it. Remove that file's folder (schedules/: sensor and schedule states; history/: run history), "
          "and the next command creates it again")


def _versions(database: Path) -> int:
    """How many schema versions ``database`` is stamped with; 0 when it or its version table does not exist.

    Raises ``StorageError`` for a file that is not an SQLite database."""
    if not database.is_file():
        return 0
    with contextlib.closing(sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)) as db:
        try:
            return len(db.execute("select version_num from alembic_version").fetchall())
        except sqlite3.OperationalError:  # no version table: created, not stamped (a creator killed midway)
            return 0
        except sqlite3.DatabaseError as exc:  # "file is not a database": overwritten or truncated
            raise StorageError(f"{database}: {exc}; {REPAIR}") from None


def make_folder(dagster_home: Path) -> None:
    """Create the folder of a Dagster home if it is missing; ``StorageError`` (one line) where it cannot be."""
    try:
        dagster_home.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file of that name, no permission, a read-only file system
        raise StorageError(f"Dagster home {dagster_home}: not a folder this process can write ({exc.strerror or exc})") from None


def create_storage(dagster_home: Path, instance_folder: Path | None = None) -> None:
    """Create the storage of ``dagster_home`` where a database of it is missing or unstamped; no-op on a home that has it.

    ``instance_folder`` holds the ``dagster.yaml`` to open it with (default: the home's own); its storage must be the
    home's SQLite storage. Raises ``StorageError``, naming the file and its repair, for a database stamped twice (a home
    created by two processes at once before this lock existed) or not an SQLite database, and for a home that cannot be
    created or written.
    """
    make_folder(dagster_home)
    try:
        fh = open(dagster_home / LOCK_FILE, "a", encoding="utf-8")  # noqa: SIM115 - closed by the with below, after its error is named
    except OSError as exc:
        raise StorageError(f"Dagster home {dagster_home}: not a folder this process can write ({exc.strerror or exc})") from None
    with fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # released by the kernel when this process ends, however it ends
        versions = {name: _versions(dagster_home / name) for name in STORAGE_FILES}
        twice = [name for name, n in versions.items() if n > 1]
        if twice:
            raise StorageError(f"{dagster_home / twice[0]}: stamped with {versions[twice[0]]} schema versions (created by two processes "
                               f"at once); {REPAIR}")
        if all(n == 1 for n in versions.values()):
            return
        import dagster as dg  # only for a new home (see the module's docstring)

        with dg.DagsterInstance.from_config(str(instance_folder or dagster_home)):
            pass


@contextlib.contextmanager
def home_instance() -> Iterator[dg.DagsterInstance]:
    """The Dagster instance of the commands' home (``use_dagster_home``), its storage created first (``create_storage``)."""
    create_storage(use_dagster_home()[0])
    import dagster as dg  # at run time only here: a home with its storage is checked without Dagster

    with dg.DagsterInstance.get() as instance:
        yield instance
