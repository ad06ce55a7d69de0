"""Where the project's files live: the data home and its folders. Nothing here runs at import time.

The data home holds ``raw/`` (fetched upstream files), ``assets/`` (materialized Parquet) and
``figures/``. It is, in order:

1. ``$GPU_ENERGY_HOME``, when set;
2. else the nearest folder at or above the working directory that is marked as a home: it holds
   the marker file ``gpu-energy-home.toml`` (written by ``gpu-energy init``), or it is a clone of
   this repository (a ``pyproject.toml`` whose ``[tool.dg.project]`` has ``root_module =
   "pipelines"``, or a ``workspace.yaml`` loading ``pipelines.definitions``);
3. else the working directory.

It is never the installed package's folder, so a wheel in site-packages writes nothing there.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

#: The source checkout this module was loaded from: for tests and benchmarks, which run in a clone.
#: Runtime code never uses it (in an installed wheel it is site-packages): it uses ``find_home()``.
REPO_ROOT: Path = Path(__file__).resolve().parents[2]
#: The file ``gpu-energy init`` writes at the top of a data home.
HOME_MARKER = "gpu-energy-home.toml"
_DG_ROOT_MODULE = re.compile(r'^\s*root_module\s*=\s*"pipelines"\s*$', re.M)
_WORKSPACE_MODULE = re.compile(r"module_name:\s*pipelines\.definitions\b")


@dataclass(frozen=True)
class ProjectPaths:
    """The project's folders, all under one root (the data home; tests use a tmp dir)."""

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
    def cache(self) -> Path:
        """Kept data that can be made again (``pipelines.home.cache``): whatif's parsed exports; bounded in size."""
        return self.root / "cache"

    @property
    def measured(self) -> Path:
        """Profiles measured with ``python -m pipelines measure`` (committed data, not fetched)."""
        return self.raw / "measured"

    def table(self, name: str) -> Path:
        """Parquet path of an unpartitioned table (``assets/<name>.parquet``)."""
        return table_path(self.assets, name)


# The one layout of stored tables, which the IO manager writes, the readers read and sql/views.sql
# (checked by a test) points DuckDB at: ``<assets>/<key>.parquet`` for a table, one file per
# partition ``<assets>/<key>/<partition>.parquet`` for a partitioned one; ``a/b`` keys are folders.


def table_path(assets: Path, key: str, partition: str | None = None) -> Path:
    """Where table ``key`` (``quarantine/itp_jobs_bad_rows`` for a two-part asset key) is stored, or one partition of it.

    A multi-dimensional partition key ``a|b`` is the file ``a__b.parquet``.
    """
    if partition is None:
        return assets / f"{key}.parquet"
    return assets / key / (partition.replace("|", "__") + ".parquet")


def table_files(assets: Path, name: str) -> list[Path]:
    """The Parquet files of table ``name`` under ``assets``: its one file, else its partitions' in name order; [] if absent."""
    single = table_path(assets, name)
    if single.is_file():
        return [single]
    return sorted((assets / name).glob("*.parquet"))


def is_home(folder: Path) -> bool:
    """Whether ``folder`` is marked as a data home (see the module docstring)."""
    if (folder / HOME_MARKER).is_file():
        return True
    for name, pattern in (("pyproject.toml", _DG_ROOT_MODULE), ("workspace.yaml", _WORKSPACE_MODULE)):
        path = folder / name
        try:
            if path.is_file() and pattern.search(path.read_text(errors="replace")):
                return True
        except OSError:
            continue
    return False


def resolve_home(start: Path | None = None) -> tuple[Path, str]:
    """The data home for a process whose working directory is ``start`` (default: the current one), and why."""
    env = os.environ.get("GPU_ENERGY_HOME")
    if env:
        return Path(env).expanduser().resolve(), "from $GPU_ENERGY_HOME"
    cwd = (start or Path.cwd()).resolve()
    for folder in (cwd, *cwd.parents):
        if is_home(folder):
            return folder, "the nearest marked home at or above the working directory"
    return cwd, "the working directory: no marked home above it; `gpu-energy init` marks one"


def find_home(start: Path | None = None) -> Path:
    """The data home (see the module docstring)."""
    return resolve_home(start)[0]


def default_paths() -> ProjectPaths:
    """The folders of the data home (``find_home``)."""
    return ProjectPaths(find_home())


def default_mirror(home: Path | None = None) -> Path | None:
    """The local mirror of upstream files: ``$TRACES_MIRROR``, else ``shared/traces`` beside the data home,
    else beside the source checkout this package runs from (a clone; never an installed wheel's folder)."""
    env = os.environ.get("TRACES_MIRROR")
    if env:
        return Path(env).expanduser().resolve()
    candidates = [(home or find_home()).parent / "shared" / "traces"]
    if (REPO_ROOT / "pyproject.toml").is_file():  # running from a clone
        candidates.append(REPO_ROOT.parent / "shared" / "traces")
    return next((c for c in candidates if c.is_dir()), None)
