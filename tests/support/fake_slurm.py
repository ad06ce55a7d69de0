"""A stand-in for Slurm's ``sbatch`` and ``scancel``: the job scripts dask-jobqueue submits run here, in the background.

``install(folder)`` writes ``folder/bin/sbatch`` and ``folder/bin/scancel`` (put ``folder/bin`` first on the PATH):

* ``sbatch --test-only SCRIPT`` keeps a copy of the script (``tested-<n>.sh``) and answers as Slurm does,
  on stderr; with ``$FAKE_SLURM_REFUSE`` set it fails with that message instead (exit 1), as sbatch
  does for an unknown partition;
* ``sbatch SCRIPT`` keeps a copy (``job-<id>.sh``), runs it with bash in a session of its own
  (its output in ``job-<id>.out``, its process group id in ``job-<id>.pid``) and prints
  ``Submitted batch job <id>``;
* ``scancel ID...`` appends each id to ``scancelled`` and ends that job's process group (SIGTERM).

``jobs(folder)`` lists the ids submitted, ``cancelled(folder)`` those cancelled, ``alive(folder, id)``
whether a job's processes still run. Nothing here talks to a real Slurm.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
from pathlib import Path

SBATCH = r"""#!/usr/bin/env bash
set -eu
dir="$FAKE_SLURM_DIR"
script="${@: -1}"
if [ "$1" = "--test-only" ]; then
    n=$(ls "$dir" | grep -c '^tested-' || true)
    cp "$script" "$dir/tested-$n.sh"
    if [ -n "${FAKE_SLURM_REFUSE:-}" ]; then echo "sbatch: error: $FAKE_SLURM_REFUSE" >&2; exit 1; fi
    echo "sbatch: Job 99 to start at 2026-01-01T00:00:00 using 1 processors on nodes fake1 in partition fake" >&2
    exit 0
fi
exec 9>"$dir/lock"
flock 9  # jobs are submitted side by side: one id each
id=$(( $(cat "$dir/next" 2>/dev/null || echo 1000) + 1 ))
echo "$id" > "$dir/next"
cp "$script" "$dir/job-$id.sh"
setsid bash "$dir/job-$id.sh" > "$dir/job-$id.out" 2>&1 < /dev/null 9>&- &
echo "$!" > "$dir/job-$id.pid"
flock -u 9
echo "Submitted batch job $id"
"""

SCANCEL = r"""#!/usr/bin/env bash
dir="$FAKE_SLURM_DIR"
for id in "$@"; do
    echo "$id" >> "$dir/scancelled"
    kill -TERM -- "-$(cat "$dir/job-$id.pid")" 2>/dev/null || true
done
"""


def install(folder: Path) -> dict[str, str]:
    """Write the stand-ins under ``folder``; the environment to run a command with them (PATH, ``FAKE_SLURM_DIR``)."""
    bin_dir = folder / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, text in (("sbatch", SBATCH), ("scancel", SCANCEL)):
        path = bin_dir / name
        path.write_text(text)
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "FAKE_SLURM_DIR": str(folder)}


def jobs(folder: Path) -> list[str]:
    """The ids of the jobs submitted, in order."""
    return sorted((p.stem.removeprefix("job-") for p in folder.glob("job-*.sh")), key=int)


def cancelled(folder: Path) -> list[str]:
    """The ids ``scancel`` was called with, in order."""
    path = folder / "scancelled"
    return path.read_text().split() if path.exists() else []


def alive(folder: Path, job: str) -> bool:
    """Whether a process of the job's process group still runs."""
    pgid = int((folder / f"job-{job}.pid").read_text())
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def kill_all(folder: Path) -> None:
    """End every job's process group (SIGKILL): the tests' own cleanup, whatever happened."""
    for pid_file in folder.glob("job-*.pid"):
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.killpg(int(pid_file.read_text()), signal.SIGKILL)
