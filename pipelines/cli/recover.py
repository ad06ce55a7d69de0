"""``python -m pipelines recover``: mark runs whose process is gone as failed, remove stale temp files and what no asset writes."""

from __future__ import annotations

import click
import dagster as dg

from pipelines.definitions import loaded
from pipelines.home.init import use_dagster_home
from pipelines.orchestration import undefined
from pipelines.orchestration.recovery import recover, report


@click.command("recover")
def cli() -> None:
    """Mark runs whose process is gone as failed and remove stale temp files under assets/, figures/ and raw/; remove the files
    of asset keys the code location no longer defines (renamed or removed) and wipe those keys (make dev runs this first)."""
    use_dagster_home()
    with dg.DagsterInstance.get() as instance:
        report(recover(instance))
        undefined.report(undefined.forget_undefined(instance, loaded()))
