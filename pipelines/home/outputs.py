"""Files a command writes where the user says (``sweep --output``, ``whatif --html``, ``measure --out``): never clobbering.

``check_output`` runs before any work and refuses, in one line, a path that is a folder, a device,
a FIFO or a socket (``/dev/full`` was replaced by a regular file), a path inside the data home's
managed folders (``assets/``, ``raw/``, ``.dagster_home``: a table or an upstream file overwritten
by hand would be trusted), one of the command's own inputs (``whatif X --html X``), and a path
whose folder does not exist unless ``make_parents`` (the commands' ``--parents``). The write
itself is atomic (``pipelines.home.storage.atomic_path``: temp file + rename).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

#: The data home's folders only materializations, ``fetch`` and ``clusters add`` write.
MANAGED = ("assets", "raw", ".dagster_home")


class OutputRefused(ValueError):
    """A path a command must not write (the message is one line naming it and why)."""


def check_output(path: Path, option: str, home: Path, *, inputs: Sequence[Path] = (), make_parents: bool = False,
                 allowed: Sequence[Path] = ()) -> Path:
    """``path``, if the command may write it (its missing parent folders made when ``make_parents``); else
    ``OutputRefused``.

    ``option``: the flag that named it (``--html``), for the message. ``home``: the data home, whose ``MANAGED``
    folders (and ``$DAGSTER_HOME``) are refused, except under ``allowed`` (``measure --out`` writes raw/measured/).
    ``inputs``: files or folders the command reads; ``path`` may be none of them nor inside one.
    """
    shown = f"{option} {path}"
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise OutputRefused(f"{shown}: cannot be checked ({exc.strerror})") from exc
    if mode is not None and stat.S_ISDIR(mode):
        raise OutputRefused(f"{shown}: is a folder; give a file name, e.g. {path / 'out'}")
    if mode is not None and not stat.S_ISREG(mode):
        raise OutputRefused(f"{shown}: is not a regular file (a device, FIFO or socket); give a file name")
    real = Path(os.path.realpath(path))
    managed = [Path(os.path.realpath(home / name)) for name in MANAGED]
    if os.environ.get("DAGSTER_HOME"):
        managed.append(Path(os.path.realpath(os.environ["DAGSTER_HOME"])))
    if not any(real.is_relative_to(os.path.realpath(a)) for a in allowed):
        for folder in managed:
            if real.is_relative_to(folder):
                raise OutputRefused(f"{shown}: is inside {folder}, which only the pipeline writes; write it elsewhere")
    for given in inputs:
        source = Path(os.path.realpath(given))
        if real == source or real.is_relative_to(source):
            raise OutputRefused(f"{shown}: is {'an input' if real == source else 'inside an input'} of this command ({given})")
    if not path.parent.is_dir():
        if path.parent.exists():
            raise OutputRefused(f"{shown}: {path.parent} is not a folder")
        if not make_parents:
            raise OutputRefused(f"{shown}: the folder {path.parent} does not exist (--parents makes it)")
        path.parent.mkdir(parents=True, exist_ok=True)
    return path
