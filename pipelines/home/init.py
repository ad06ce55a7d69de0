"""Create a data home: the folders, a Dagster workspace over the installed package, a README.

Nothing here imports Dagster: the workspace file only names the code location
(``pipelines.definitions``), which ``dagster dev`` imports from the installed package.
"""

from __future__ import annotations

import os
from pathlib import Path

from pipelines.home.atomic import write_text_atomic
from pipelines.home.paths import HOME_MARKER, find_home
from pipelines.home.postgres import storage_of, storage_section

#: The Dagster instance settings of a home (the repository's Makefile writes the same, through
#: ``write_dagster_yaml``): at most 2 UI runs at once on 2 cores; run monitoring fails runs stuck
#: STARTING or CANCELING (runs whose process died while STARTED are marked failed by
#: ``python -m pipelines recover``, run first by ``make dev`` and ``materialize``).
#: Retention: the daemon purges the sensors' ticks (the automation sensor's among them: one every 10 s) as they age,
#: skipped ones after a day; runs and their events are never purged. The automation evaluations, which Dagster keeps
#: 30 days whatever this file says, ``pipelines.defs.retention`` deletes after an hour (docs/benchmarks.md, "A home
#: left running").
#: Storage: SQLite in the instance folder, unless a ``storage:`` section follows (``init --postgres-url``).
DAGSTER_YAML = """\
concurrency:
  runs:
    max_concurrent_runs: 2
run_launcher:
  module: pipelines.defs.shared.run_launcher
  class: LaunchedByRunLauncher
run_monitoring:
  enabled: true
  start_timeout_seconds: 180
  cancel_timeout_seconds: 60
  poll_interval_seconds: 30
retention:
  sensor:
    purge_after_days: {skipped: 1, success: 7, failure: 30, started: 7}
  schedule:
    purge_after_days: {skipped: 1, success: 30, failure: 30, started: 30}
telemetry:
  enabled: false
"""

#: The code location's name wherever its runs are launched (this workspace, ``dg dev``'s [tool.dg.project]).
LOCATION = "gpu_energy"
WORKSPACE_YAML = f"""\
# The installed gpu-energy-pipelines package as a Dagster code location, run from this folder.
load_from:
  - python_module:
      module_name: pipelines.definitions
      location_name: {LOCATION}
      working_directory: .
"""

MARKER_TOML = """\
# Marks this folder as a gpu-energy data home: commands run here or below read and write
# raw/, assets/ and figures/ in this folder ($GPU_ENERGY_HOME overrides it).
[home]
layout = 1
"""

README_MD = """\
# A gpu-energy data home

Made by `gpu-energy init`. Every `gpu-energy` command run in this folder (or below it) reads and
writes here; `$GPU_ENERGY_HOME` points the commands at another home.

- `raw/`: upstream traces, verified by sha256 (`gpu-energy fetch`); `raw/measured/` your GPU
  profiles (`gpu-energy measure profile`); `raw/clusters/` your own cluster exports.
- `assets/`: one Parquet file per table, a folder per partitioned table, `assets/quarantine/` the
  rejected rows (`gpu-energy materialize`, or the Dagster UI).
- `figures/`: `<name>.png`, `.pdf` and `.parquet` (the plotted numbers) per figure.
- `workspace.yaml`: the installed package as a Dagster code location; `.dagster_home/`: the Dagster
  instance (run history, sensors); `gpu-energy-home.toml`: the marker that makes this folder a home.

Start:

```sh
gpu-energy fetch                                  # upstream traces into raw/ (mirror: $TRACES_MIRROR)
gpu-energy materialize                            # Dagster runs, recorded in .dagster_home
gpu-energy sql "select count(*) from itp_jobs"
DAGSTER_HOME=$PWD/.dagster_home dagster dev -w workspace.yaml    # the UI on http://127.0.0.1:3000
```
"""

#: The Dagster instance's folder in a data home (the Makefile's ``DAGSTER_HOME`` too).
DAGSTER_FOLDER = ".dagster_home"
FILES: dict[str, str] = {
    HOME_MARKER: MARKER_TOML,
    "workspace.yaml": WORKSPACE_YAML,
    "README.md": README_MD,
    f"{DAGSTER_FOLDER}/dagster.yaml": DAGSTER_YAML,
}
FOLDERS = ("raw", "assets", "figures")


def write_dagster_yaml(dagster_home: Path, postgres_url: str | None = None) -> bool:
    """Write ``<dagster_home>/dagster.yaml``: ``DAGSTER_YAML`` and a storage section; whether the file changed.

    The storage: PostgreSQL at ``postgres_url`` when given (``pipelines.home.postgres``: its password never written);
    without it, the storage section the file has (a home on PostgreSQL stays there when ``make`` rewrites the rest), else
    none (SQLite in ``dagster_home``). Raises ``PostgresUrlError`` for a URL that cannot be one.
    """
    path = dagster_home / "dagster.yaml"
    old = path.read_text() if path.is_file() else None
    storage = storage_section(postgres_url) if postgres_url else storage_of(old) if old else None
    text = DAGSTER_YAML + (storage or "")
    if text == old:
        return False
    write_text_atomic(text, path)
    return True


def use_dagster_home() -> tuple[Path, str]:
    """The Dagster instance folder of ``materialize`` and ``recover``, and why.

    ``$DAGSTER_HOME`` when set; else the data home's ``.dagster_home`` (its ``dagster.yaml`` written
    when absent), then exported as ``$DAGSTER_HOME`` to this process and every process it starts.
    """
    env = os.environ.get("DAGSTER_HOME")
    if env:
        return Path(env), "from $DAGSTER_HOME"
    folder = find_home() / DAGSTER_FOLDER
    if not (folder / "dagster.yaml").is_file():
        folder.mkdir(parents=True, exist_ok=True)
        write_dagster_yaml(folder)
    os.environ["DAGSTER_HOME"] = str(folder)
    return folder, "the data home's; $DAGSTER_HOME is not set"


def init_home(folder: Path, postgres_url: str | None = None) -> list[Path]:
    """Make ``folder`` a data home; return what was created or rewritten. Existing files are left as they are, but
    ``.dagster_home/dagster.yaml`` when ``postgres_url`` is given: its storage is then that PostgreSQL database."""
    folder = folder.expanduser().resolve()
    created: list[Path] = []
    for name in FOLDERS:
        path = folder / name
        if not path.is_dir():
            path.mkdir(parents=True)
            created.append(path)
    if postgres_url and write_dagster_yaml(folder / DAGSTER_FOLDER, postgres_url):
        created.append(folder / DAGSTER_FOLDER / "dagster.yaml")
    for name, text in FILES.items():
        path = folder / name
        if not path.exists():
            write_text_atomic(text, path)
            created.append(path)
    return created
