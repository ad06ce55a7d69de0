"""A Dagster home's storage, created by Dagster's public ``DagsterInstance.from_config`` one process at a time under
``<home>/storage.lock`` (two at once can stamp a database twice: "more than one head"); the home's lock file opened."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import click

from pipelines.home.init import use_dagster_home
from pipelines.home.postgres import PASSWORD_ENV, storage_of

if TYPE_CHECKING:
    import dagster as dg

#: The databases of Dagster's ``DagsterSqliteStorage`` under its base_dir (the home).
STORAGE_FILES = ("history/runs.db", "history/runs/index.db", "schedules/schedules.db")
LOCK_FILE = "storage.lock"


class StorageError(click.ClickException):
    """A Dagster home, or its configured storage, that cannot be opened; one line naming why (a command prints it)."""


def open_in_home(dagster_home: Path, name: str) -> TextIO:
    """The file ``name`` of ``dagster_home`` (the folder created first), open to read and append; ``StorageError`` where it cannot be."""
    try:
        dagster_home.mkdir(parents=True, exist_ok=True)
        return open(dagster_home / name, "a+", encoding="utf-8")
    except OSError as exc:  # a file of that name, no permission, a read-only file system
        raise StorageError(f"Dagster home {dagster_home}: not a folder this process can write ({exc.strerror or exc})") from None


def configured_storage(dagster_home: Path) -> str | None:
    """The ``storage:`` section of the home's ``dagster.yaml`` (PostgreSQL: ``init --postgres-url``), or None: SQLite in the home."""
    path = dagster_home / "dagster.yaml"
    return storage_of(path.read_text()) if path.is_file() else None


def create_storage(dagster_home: Path, instance_folder: Path | None = None) -> None:
    """Create the storage of ``dagster_home`` unless its SQLite databases exist, opening the instance of ``instance_folder``
    (default: the home) under the home's lock; ``StorageError`` where it cannot be written, or Dagster cannot open it."""
    with open_in_home(dagster_home, LOCK_FILE) as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # released by the kernel when this process ends, however it ends
        storage = configured_storage(dagster_home)
        if storage is None and all((dagster_home / name).is_file() for name in STORAGE_FILES):
            return
        if storage is not None and f"{{env: {PASSWORD_ENV}}}" in storage and PASSWORD_ENV not in os.environ:
            raise StorageError(f"{dagster_home / 'dagster.yaml'}: its database password is read from ${PASSWORD_ENV}, which is not "
                               "set (set it to the password, or to nothing for a server that asks none)")
        import dagster as dg  # only to create a storage: a home that has it is checked without Dagster

        try:
            dg.DagsterInstance.from_config(str(instance_folder or dagster_home)).dispose()
        except Exception as exc:  # sqlalchemy's, psycopg2's and Dagster's errors: the innermost names the cause
            # (dagster-postgres's "too many retries for DB connection" is raised from psycopg2's "connection ... failed: ...")
            cause: BaseException = exc
            while cause.__cause__ is not None:
                cause = cause.__cause__
            first = next((line for line in str(cause).splitlines() if line.strip()), type(cause).__name__)
            raise StorageError(f"{dagster_home}: Dagster cannot open its storage: {first.strip()}") from None


def home_instance() -> dg.DagsterInstance:
    """The Dagster instance of the commands' home (``use_dagster_home``; a context manager), its storage created first."""
    create_storage(use_dagster_home()[0])
    import dagster as dg

    return dg.DagsterInstance.get()
