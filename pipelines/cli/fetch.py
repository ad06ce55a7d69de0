"""``python -m pipelines fetch``: fetch every upstream file into raw/."""

from __future__ import annotations

from pathlib import Path

import click
from tqdm import tqdm

from pipelines.home.paths import default_mirror, default_paths
from pipelines.sources.fetch import FetchError, fetch
from pipelines.sources.manifest import SOURCES


@click.command("fetch")
@click.option("--mirror", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Local mirror folder (default: $TRACES_MIRROR, else ../shared/traces if present).")
@click.option("--no-download", is_flag=True, help="Use raw/ and the mirror only; never the network.")
def cli(mirror: Path | None, no_download: bool) -> None:
    """Fetch every upstream file into raw/, verified by sha256."""
    paths = default_paths()
    mirror = mirror or default_mirror()
    failed = False
    for source in tqdm(SOURCES, desc="fetch", unit="file", disable=None):  # None: no bar when stderr is not a terminal
        try:
            result = fetch(source, paths, mirror, download=not no_download, warn=lambda message: tqdm.write(f"WARNING {message}"))
        except FetchError as exc:
            tqdm.write(f"ERROR {exc}")
            failed = True
            continue
        tqdm.write(f"{result.status.value:>18}  {source.name}" + (f"  ({result.message})" if result.message else ""))
    if failed:
        raise SystemExit(1)

