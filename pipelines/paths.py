"""Where the project's files live. Nothing here reads the environment at import time."""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

#: The repository root (the folder holding pyproject.toml), resolved from this file.
REPO_ROOT: Path = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class ProjectPaths:
    """The project's folders, all under one root (the repository by default; tests use a tmp dir)."""

    root: Path

    @property
    def raw(self) -> Path:
        """Fetched upstream files, verified by sha256 (never committed)."""
        return self.root / "raw"

    @property
    def assets(self) -> Path:
        """Materialized Parquet, one file per table (a folder per partitioned table)."""
        return self.root / "assets"

    @property
    def figures(self) -> Path:
        return self.root / "figures"

    @property
    def measured(self) -> Path:
        """Profiles measured with ``python -m pipelines measure`` (committed data, not fetched)."""
        return self.raw / "measured"

    def table(self, name: str) -> Path:
        """Parquet path of an unpartitioned table (``assets/<name>.parquet``)."""
        return self.assets / f"{name}.parquet"


def default_paths() -> ProjectPaths:
    """The repository's folders, or those under ``$GPU_ENERGY_HOME`` when it is set."""
    home = os.environ.get("GPU_ENERGY_HOME")
    return ProjectPaths(Path(home).resolve() if home else REPO_ROOT)


def default_mirror() -> Path | None:
    """The local mirror of upstream files: ``$TRACES_MIRROR``, else ``../shared/traces`` if present."""
    env = os.environ.get("TRACES_MIRROR")
    if env:
        return Path(env).resolve()
    candidate = REPO_ROOT.parent / "shared" / "traces"
    return candidate if candidate.is_dir() else None


def sql_file(name: str) -> Traversable:
    """A file shipped with the package under ``pipelines/sql/`` (``views.sql``, ``examples/*.sql``).

    Read through ``importlib.resources``, so it is found in an installed wheel as in the repository
    (whose top-level ``sql/`` links to the same folder).
    """
    return files("pipelines").joinpath("sql", *name.split("/"))
