"""A new Dagster home's storage, created under an advisory lock (``<home>/storage.lock``) by one process at a time.

Two processes creating a home at once can both stamp a database, which Dagster then cannot open ("more than one head").
A home whose SQLite databases are all stamped is left as it is, read with sqlite3 and no Dagster import. A home whose
``dagster.yaml`` names its storage (PostgreSQL: ``init --postgres-url``) is opened by Dagster, which creates the tables
a new database lacks (and retries where another machine's process creates them at the same time).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.home.init import use_dagster_home
from pipelines.home.postgres import PASSWORD_ENV, storage_of

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


def configured_storage(dagster_home: Path) -> str | None:
    """The ``storage:`` section of the home's ``dagster.yaml`` (PostgreSQL: ``init --postgres-url``), or None: SQLite in the home."""
    path = dagster_home / "dagster.yaml"
    return storage_of(path.read_text()) if path.is_file() else None


def make_folder(dagster_home: Path) -> None:
    """Create the folder of a Dagster home if it is missing; ``StorageError`` (one line) where it cannot be."""
    try:
        dagster_home.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file of that name, no permission, a read-only file system
        raise StorageError(f"Dagster home {dagster_home}: not a folder this process can write ({exc.strerror or exc})") from None


def create_storage(dagster_home: Path, instance_folder: Path | None = None) -> None:
    """Create the storage of ``dagster_home`` where a database of it is missing or unstamped; no-op on a home that has it.

    ``instance_folder`` holds the ``dagster.yaml`` to open it with (default: the home's own); its storage must be the
    home's (``configured_storage``). Raises ``StorageError``, naming the file and its repair, for a database stamped twice
    (a home created by two processes at once before this lock existed) or not an SQLite database, for a home that cannot be
    created or written, and for a configured storage Dagster cannot open (no password variable, no server).
    """
    make_folder(dagster_home)
    try:
        fh = open(dagster_home / LOCK_FILE, "a", encoding="utf-8")  # noqa: SIM115 - closed by the with below, after its error is named
    except OSError as exc:
        raise StorageError(f"Dagster home {dagster_home}: not a folder this process can write ({exc.strerror or exc})") from None
    with fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # released by the kernel when this process ends, however it ends
        storage = configured_storage(dagster_home)
        if storage is not None:
            _open_configured(dagster_home, storage, instance_folder or dagster_home)
            return
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


def _open_configured(dagster_home: Path, storage: str, instance_folder: Path) -> None:
    """Open the instance of ``instance_folder`` once (Dagster creates or migrates nothing else); ``StorageError`` naming why not."""
    if f"{{env: {PASSWORD_ENV}}}" in storage and PASSWORD_ENV not in os.environ:
        raise StorageError(f"{dagster_home / 'dagster.yaml'}: its database password is read from ${PASSWORD_ENV}, which is not set "
                           "(set it to the password, or to nothing for a server that asks none)")
    import dagster as dg

    try:
        with dg.DagsterInstance.from_config(str(instance_folder)):
            pass
    except Exception as exc:  # sqlalchemy's and psycopg2's errors, Dagster's config errors: each names its cause
        first = next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        raise StorageError(f"{dagster_home / 'dagster.yaml'}: Dagster cannot open its storage: {first.strip()}") from None


@contextlib.contextmanager
def home_instance() -> Iterator[dg.DagsterInstance]:
    """The Dagster instance of the commands' home (``use_dagster_home``), its storage created first (``create_storage``)."""
    create_storage(use_dagster_home()[0])
    import dagster as dg  # at run time only here: a home with its storage is checked without Dagster

    with dg.DagsterInstance.get() as instance:
        yield instance
