"""``python -m pipelines recover``: mark runs whose process is gone as failed, remove stale temp files."""

from __future__ import annotations

import click

from pipelines.orchestration.dagster_storage import home_instance
from pipelines.orchestration.recovery import recover, report


@click.command("recover")
def cli() -> None:
    """Mark runs whose process is gone as failed and remove stale temp files under assets/, figures/ and raw/ (make dev runs this first)."""
    with home_instance() as instance:  # a StorageError is one line
        report(recover(instance))
