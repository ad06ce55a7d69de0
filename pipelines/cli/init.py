"""``gpu-energy init [DIR]``: make a folder a data home (raw/, assets/, figures/, a Dagster workspace)."""

from __future__ import annotations

from pathlib import Path

import click

from pipelines.home.init import init_home


@click.command("init")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path), default=".")
def cli(folder: Path) -> None:
    """Make FOLDER (default: here) a data home; existing files are kept."""
    created = init_home(folder)
    root = folder.expanduser().resolve()
    for path in created:
        click.echo(f"created {path.relative_to(root)}")
    click.echo(f"data home: {root}" + ("" if created else " (already complete)"))
