"""``gpu-energy init [DIR] [--postgres-url URL]``: make a folder a data home (raw/, assets/, figures/, a Dagster workspace)."""

from __future__ import annotations

from pathlib import Path

import click

from pipelines.home.init import init_home
from pipelines.home.postgres import PASSWORD_ENV, PostgresUrlError


@click.command("init")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path), default=".")
@click.option("--postgres-url", metavar="URL", help="Store the Dagster instance (runs, events, sensor and schedule state) in this PostgreSQL "
              "database instead of SQLite files: postgresql://USER@HOST[:PORT]/DATABASE (a Unix socket: ?host=/its/folder). No password "
              f"in it: each command and service reads it from ${PASSWORD_ENV}. Rewrites an existing home's .dagster_home/dagster.yaml.")
def cli(folder: Path, postgres_url: str | None) -> None:
    """Make FOLDER (default: here) a data home; existing files are kept (but the instance's storage, with --postgres-url)."""
    try:
        created = init_home(folder, postgres_url)
    except PostgresUrlError as exc:
        raise click.BadParameter(str(exc), param_hint="--postgres-url") from None
    root = folder.expanduser().resolve()
    for path in created:
        click.echo(f"created {path.relative_to(root)}")
    click.echo(f"data home: {root}" + ("" if created else " (already complete)"))
