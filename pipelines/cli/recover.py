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
    """Mark runs whose process is gone as failed, remove stale temp files, and the files and records of asset keys no longer defined (make dev runs this first).

    Temp files under assets/, figures/ and raw/; the files under assets/ and figures/ that no asset of the code location
    writes (a key renamed or removed), and those keys' records in the Dagster instance, each named in one line.
    """
    use_dagster_home()
    with dg.DagsterInstance.get() as instance:
        report(recover(instance))
        undefined.report(undefined.forget_undefined(instance, loaded()))
