"""A throwaway PostgreSQL server from the machine's binaries: ``initdb`` into a temp folder, a Unix socket there, a free port.

It listens on no TCP address (``listen_addresses=''``): only this machine's processes that can reach its folder connect,
through its socket, with trust authentication. Run as root (CI), the server runs as the ``postgres`` user (PostgreSQL
refuses root), through ``runuser``. The binaries: ``initdb`` on the PATH, else Debian's ``/usr/lib/postgresql/<N>/bin``;
``make setup-postgres`` installs them (CI runs it). Where they are missing the tests that need them fail, naming that
command: never skipped.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SUPERUSER = "postgres"


@dataclass(frozen=True)
class Server:
    """A running server: its socket folder and port (no password: trust authentication)."""

    socket_dir: Path
    port: int

    def url(self, database: str) -> str:
        """``database``'s URL, as ``init --postgres-url`` takes it (the socket as the ``host`` parameter)."""
        return f"postgresql://{SUPERUSER}@/{database}?host={self.socket_dir}&port={self.port}"

    def create_database(self, database: str) -> str:
        """Create ``database`` (a new one per test: the server is the module's); its URL."""
        with contextlib.closing(self._connect("postgres")) as db:
            db.autocommit = True
            with db.cursor() as cursor:
                cursor.execute(f'create database "{database}"')
        return self.url(database)

    def query(self, database: str, sql: str, *args: object) -> list[tuple[object, ...]]:
        """The rows of ``sql`` on ``database``, through psycopg2 (dagster-postgres's driver), not through Dagster."""
        with contextlib.closing(self._connect(database)) as db, db.cursor() as cursor:
            cursor.execute(sql, args)
            return cursor.fetchall()

    def _connect(self, database: str):  # psycopg2 ships no type information: its connection is untyped
        import psycopg2

        return psycopg2.connect(host=str(self.socket_dir), port=self.port, user=SUPERUSER, dbname=database)


def binaries() -> Path:
    """The folder of ``initdb``, ``pg_ctl`` and ``postgres``; the calling test fails where there is none."""
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    debian = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0)
    if debian:
        return debian[-1].parent
    pytest.fail("PostgreSQL's initdb is neither on the PATH nor under /usr/lib/postgresql: `make setup-postgres` installs it")


def _free_port() -> int:
    """A port no TCP server listens on here (the socket's name: ``.s.PGSQL.<port>``; nothing listens on TCP)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def throwaway_server() -> Iterator[Server]:
    """A PostgreSQL server with its data and socket in a new temp folder, stopped (immediate) and removed afterwards.

    The folder is the system's temp folder's own (not pytest's, which root's ``postgres`` cannot enter), with a short
    path: a socket's path must fit in 107 bytes."""
    bin_dir = binaries()
    as_root = os.geteuid() == 0
    folder = Path(tempfile.mkdtemp(prefix="gpu-energy-pg-"))
    if as_root:  # PostgreSQL will not run as root: the server's files are postgres's
        user = pwd.getpwnam(SUPERUSER)
        os.chown(folder, user.pw_uid, user.pw_gid)

    def run(*argv: str | Path) -> subprocess.CompletedProcess[str]:
        prefix = ["runuser", "-u", SUPERUSER, "--"] if as_root else []
        return subprocess.run([*prefix, *map(str, argv)], capture_output=True, text=True, check=True, timeout=120,
                              env={**os.environ, "LC_ALL": "C"})

    data, port = folder / "data", _free_port()
    run(bin_dir / "initdb", "-D", data, "-U", SUPERUSER, "-A", "trust", "-E", "UTF8", "--no-sync")
    options = f"-k {folder} -p {port} -c listen_addresses='' -c fsync=off -c full_page_writes=off"
    try:
        run(bin_dir / "pg_ctl", "-D", data, "-o", options, "-l", folder / "server.log", "-w", "-t", "60", "start")
    except subprocess.CalledProcessError as exc:
        log = folder / "server.log"
        raise AssertionError(f"pg_ctl start failed: {exc.stderr}\n{log.read_text() if log.is_file() else ''}") from None
    try:
        yield Server(folder, port)
    finally:
        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
            run(bin_dir / "pg_ctl", "-D", data, "-m", "immediate", "-w", "stop")
        shutil.rmtree(folder, ignore_errors=True)
