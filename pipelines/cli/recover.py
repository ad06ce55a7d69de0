"""``python -m pipelines recover``: mark runs whose process is gone as failed, remove stale temp files and renamed keys' files."""

from __future__ import annotations

import click

from pipelines.orchestration import renamed
from pipelines.orchestration.recovery import recover, report
from pipelines.orchestration.storage import StorageError, home_instance


@click.command("recover")
def cli() -> None:
    """Mark runs whose process is gone as failed, remove stale temp files, and the files and records of renamed asset keys (make dev runs this first).

    Temp files under assets/, figures/ and raw/; the files that asset keys since renamed wrote, and those keys' records in
    the Dagster instance, each named in one line.
    """
    try:
        with home_instance() as instance:
            report(recover(instance))
            renamed.report(renamed.forget_renamed(instance))
    except StorageError as exc:
        raise click.ClickException(str(exc)) from None
