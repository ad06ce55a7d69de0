"""Start-up clean-up after asset keys were renamed or removed: their files and their records in the Dagster instance.

A data home materialized by an older version keeps what the code location no longer defines:
``assets/quarantine/itp_jobs.parquet`` beside ``itp_jobs_bad_rows.parquet`` would count each
quarantined row twice in the ``quarantine`` view (it reads every file of assets/quarantine/), and an
old figure's files would linger in figures/; the instance would still list the old keys in the UI's
asset catalog. ``forget_undefined`` removes both, before anything is run (``materialize``, and
``recover``, which ``make dev`` runs first). Everything under assets/ and figures/ is derived from
raw/, so a file removed here is made again, under its new name, by the next materialization.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click
import dagster as dg

from pipelines.home.paths import ProjectPaths, default_paths, undefined_files
from pipelines.terminal import printable


@dataclass(frozen=True)
class Forgotten:
    """What ``forget_undefined`` removed: files, relative to the data home, and asset keys wiped from the instance."""

    files: list[Path]
    keys: list[str]


def forget_undefined(instance: dg.DagsterInstance, definitions: dg.Definitions, paths: ProjectPaths | None = None) -> Forgotten:
    """Remove the files under assets/ and figures/ that no asset of ``definitions`` writes (``undefined_files``), the folders
    that leaves empty under assets/, and wipe from ``instance`` the asset keys that ``definitions`` does not define."""
    paths = paths or default_paths()
    defined = definitions.resolve_asset_graph().get_all_asset_keys()
    files = undefined_files(paths, (k.to_user_string() for k in defined))
    for path in files:
        path.unlink(missing_ok=True)
        folder = path.parent
        while folder != paths.assets and folder.is_relative_to(paths.assets):
            try:
                folder.rmdir()
            except OSError:  # not empty: it holds files of a defined key too
                break
            folder = folder.parent
    gone = sorted(k for k in instance.get_asset_keys() if k not in defined)
    if gone:
        instance.wipe_assets(gone)
    return Forgotten([p.relative_to(paths.root) for p in files], [k.to_user_string() for k in gone])


def report(forgotten: Forgotten) -> None:
    for path in forgotten.files:
        click.echo(f"[recover] removed {printable(str(path))}: no asset of the code location writes it now", err=True)
    for key in forgotten.keys:
        click.echo(f"[recover] wiped asset {printable(key)} from the Dagster instance: the code location no longer defines it", err=True)
