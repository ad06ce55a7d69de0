"""``python -m pipelines cache list|clear``: the kept data under the data home's ``cache/`` (``pipelines.home.cache``).

Each entry can be made again (whatif's parsed exports: ``pipelines.clusters.kept``); clearing it costs the next run its
parse, nothing else.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import click

from pipelines.home import cache
from pipelines.home.paths import find_home
from pipelines.report.text import plural
from pipelines.terminal import printable


@click.group("cache")
def cli() -> None:
    """Kept data under the data home's cache/ (whatif's parsed exports): list it, clear it."""


@cli.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per entry, one a line.")
def list_entries(as_json: bool) -> None:
    """The entries, least recently used first (dropped first past the size bound), and the bound."""
    root = cache.root(find_home())
    found = cache.entries(root)
    for e in found:
        used = f"{datetime.fromtimestamp(e.used_s, UTC):%Y-%m-%dT%H:%M:%SZ}"
        if as_json:
            click.echo(json.dumps({"kind": e.kind, "key": e.key, "bytes": e.size, "used": used, "source_file": e.meta.get("source_file"),
                                   "path": str(e.path)}))
        else:
            click.echo(f"{e.kind}  {e.key[:12]}  {e.size / 1e6:10,.1f} MB  used {used}  {printable(str(e.meta.get('source_file', '')))}")
    if not as_json:
        total = sum(e.size for e in found)
        click.echo(f"{plural(len(found), 'entry', 'entries')}, {total / 1e6:,.1f} MB in {printable(str(root))} (bound {cache.max_bytes() / 1e6:,.0f} MB: "
                   f"${cache.MAX_BYTES_ENV})", err=True)


@cli.command("clear")
def clear() -> None:
    """Remove every entry (each is made again when needed)."""
    root = cache.root(find_home())
    gone = cache.clear(root)
    click.echo(f"[cache] removed {plural(len(gone), 'entry', 'entries')} ({sum(e.size for e in gone) / 1e6:,.1f} MB) from {printable(str(root))}", err=True)
