"""A PostgreSQL URL as the ``storage`` section of a home's ``dagster.yaml`` (dagster-postgres), its password left out.

The password is never written to the file: Dagster reads it from ``PASSWORD_ENV`` in each process that opens the
instance (``password: {env: ...}``, Dagster's documented form). A URL that carries one is refused, so that it cannot
end up in the file by mistake.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qsl, unquote, urlsplit

#: The environment variable Dagster reads the database password from (empty for a server that asks none: peer or trust
#: authentication over its Unix socket).
PASSWORD_ENV = "DAGSTER_PG_PASSWORD"
#: The first line of the storage section ``storage_section`` writes (how ``storage_of`` finds it again).
STORAGE_KEY = "storage:"
DEFAULT_PORT = 5432
#: The SQLAlchemy driver: psycopg2, which dagster-postgres installs. SQLAlchemy 2.1 takes a plain ``postgresql://`` for
#: psycopg 3, which is not installed.
SCHEME = "postgresql+psycopg2"


class PostgresUrlError(ValueError):
    """A URL that cannot be a home's storage, and why (one line)."""


def storage_section(url: str) -> str:
    """The ``storage:`` section of ``dagster.yaml`` for ``url`` (``postgresql://USER@HOST[:PORT]/DB[?PARAM=VALUE...]``).

    A Unix socket is a ``host`` parameter: ``postgresql://lab@/dagster?host=/var/run/postgresql``. Every parameter is
    passed on to libpq (``sslmode``...), but ``port``, which may be given there too. Raises ``PostgresUrlError`` for
    another scheme, no user or database, a bad port, or a password in the URL.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("postgresql", "postgres"):
        raise PostgresUrlError(f"{url!r}: not a PostgreSQL URL (postgresql://USER@HOST/DATABASE)")
    if parts.password is not None:
        raise PostgresUrlError(f"the URL carries a password, which would be written to dagster.yaml: leave it out, and set ${PASSWORD_ENV} "
                               "in the environment of every command and service of the home instead")
    db_name = unquote(parts.path.removeprefix("/"))
    if not parts.username or not db_name or "/" in db_name:
        raise PostgresUrlError(f"{url!r}: needs a user and a database (postgresql://USER@HOST/DATABASE)")
    params = dict(parse_qsl(parts.query, keep_blank_values=True))
    try:
        port = int(params.pop("port", None) or parts.port or DEFAULT_PORT)
    except ValueError as exc:  # urlsplit's port raises for a port that is not a number too
        raise PostgresUrlError(f"{url!r}: bad port ({exc})") from None
    # JSON strings are YAML strings: a value is quoted whatever it holds.
    lines = [STORAGE_KEY, "  postgres:", "    postgres_db:",
             f"      username: {json.dumps(unquote(parts.username))}",
             f"      password: {{env: {PASSWORD_ENV}}}",
             f"      hostname: {json.dumps(unquote(parts.hostname or ''))}",
             f"      db_name: {json.dumps(db_name)}",
             f"      port: {port}",
             f"      scheme: {json.dumps(SCHEME)}"]
    if params:
        lines.append("      params:")
        lines += [f"        {json.dumps(key)}: {json.dumps(value)}" for key, value in params.items()]
    return "\n".join(lines) + "\n"


def storage_of(dagster_yaml: str) -> str | None:
    """The ``storage:`` section of a ``dagster.yaml``'s text (to the next top-level key), or None where it has none."""
    lines = dagster_yaml.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.rstrip() == STORAGE_KEY), None)
    if start is None:
        return None
    end = next((i for i in range(start + 1, len(lines)) if lines[i][:1] not in ("", " ", "\n", "#")), len(lines))
    return "".join(lines[start:end])
