"""Start-up clean-up after asset keys were renamed: the files only the old keys of ``RENAMED`` wrote, and those keys'
records in the instance (docs/architecture.md, Asset keys); nothing else is touched."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click
import dagster as dg

from pipelines.contracts.registry import quarantine_key
from pipelines.home.paths import ProjectPaths, default_paths
from pipelines.terminal import printable

#: Tables whose quarantine was ``quarantine/<table>`` before it became ``quarantine_key(table)``.
_QUARANTINED = ("zeus_train_runs", "zeus_power_profiles", "itp_jobs", "elasticflow_jobs", "acme_jobs", "acme_cluster_summary",
                "alibaba_groups", "hetero_gpu_profiles", "fleet_power_cdf", "own_cluster_jobs")
#: Old asset key -> its new key (``a/b`` form), since 2026-11-27.
RENAMED: dict[str, str] = {
    **{f"quarantine/{table}": quarantine_key(table) for table in _QUARANTINED},
    "figures/acme_cluster_summary": "figures/acme_cluster_stats",
    "figures/clusters_energy_timeline": "figures/clusters_timeline_energy",
    "figures/clusters_power_timeline": "figures/clusters_timeline_power",
    "own_cluster_report": "figures/own_cluster_report",  # its files were under figures/ already, and still are
}
#: What a figure asset writes: its image, PDF and plotted data, one of each per panel (``<name>_<panel>.<ext>``).
_FIGURE_FILES = ("png", "pdf", "parquet")


@dataclass(frozen=True)
class Forgotten:
    """What ``forget_renamed`` removed: files, relative to the data home, and old asset keys wiped from the instance."""

    files: list[Path]
    keys: list[str]


def old_files(paths: ProjectPaths, old: str) -> list[Path]:
    """The files the old key ``old`` wrote that its new key does not: a table's file or partitions, a figure's files."""
    if old.startswith("figures/"):
        name = old.removeprefix("figures/")
        return sorted(p for ext in _FIGURE_FILES for pattern in (f"{name}.{ext}", f"{name}_*.{ext}") for p in paths.figures.glob(pattern))
    if not old.startswith("quarantine/"):
        return []  # own_cluster_report: same files, new key
    single, folder = paths.assets / f"{old}.parquet", paths.assets / old
    return sorted([single] if single.is_file() else []) + sorted(folder.glob("*.parquet"))


def forget_renamed(instance: dg.DagsterInstance, paths: ProjectPaths | None = None) -> Forgotten:
    """Remove the files of the old keys of ``RENAMED`` (and the partition folders that leaves empty), and wipe the old keys
    from ``instance``."""
    paths = paths or default_paths()
    files = [f for old in RENAMED for f in old_files(paths, old)]
    for path in files:
        path.unlink(missing_ok=True)
    for old in RENAMED:
        folder = paths.assets / old
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    present = set(instance.get_asset_keys())
    gone = sorted(k for k in (dg.AssetKey.from_user_string(old) for old in RENAMED) if k in present)
    if gone:
        instance.wipe_assets(gone)
    return Forgotten([p.relative_to(paths.root) for p in files], [k.to_user_string() for k in gone])


def report(forgotten: Forgotten) -> None:
    for path in forgotten.files:
        click.echo(f"[recover] removed {printable(str(path))}: an asset key since renamed wrote it", err=True)
    for key in forgotten.keys:
        click.echo(f"[recover] wiped asset {printable(key)} from the Dagster instance: renamed to {RENAMED[key]}", err=True)
