"""``python -m pipelines example-export FILE``: a generated Slurm sacct export to try ``whatif`` on (no cluster at hand).

Writes ``FILE`` (atomically; compressed when it ends in .gz, .xz or .zst) as ``sacct --allusers --parsable2``
prints a GPU cluster's jobs (``pipelines.clusters.example_export``), and prints on stdout, as one JSON object,
what a correct reader finds in it: lines, allocations, steps, GPU allocations and the rest (``Truth``). The
same options give the same file, byte for byte.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click

from pipelines.cli.options import fail
from pipelines.clusters.example_export import EXPORT_FILE, GPU_TYPES, compressed, generate_export
from pipelines.home.outputs import OutputRefused, check_output, write_output
from pipelines.home.paths import find_home
from pipelines.ingest.own_cluster import check_timezone
from pipelines.terminal import printable


@click.command("example-export")
@click.argument("file", type=click.Path(allow_dash=True))
@click.option("--allocations", type=click.IntRange(min=1), default=3000, show_default=True, help="Jobs (allocations) in the export.")
@click.option("--seed", type=click.IntRange(min=0), default=7, show_default=True, help="Seed of the generator.")
@click.option("--timezone", default="Europe/Berlin", show_default=True, help="IANA time zone of the cluster's clock (sacct prints local time).")
@click.option("--parsable", is_flag=True, help="sacct's --parsable form (the delimiter also ends every line).")
@click.option("--no-steps", is_flag=True, help="Allocations only, as sacct -X prints them (else their .batch, .extern and .0 steps).")
@click.option("--malformed", type=click.IntRange(min=0), default=0, show_default=True, help="Lines cut one field short.")
@click.option("--energy", type=click.Choice(["measured", "zero"]), default=None,
              help="Add ConsumedEnergyRaw and TRESUsageInTot: a GPU energy plugin's readings, or 0 as a cluster without one writes.")
@click.option("--delimiter", default="|", show_default=True, help="sacct's --delimiter (one character).")
@click.option("--gpu-types", default=",".join(GPU_TYPES), show_default=True, help="The cluster's GPU types, comma-separated.")
@click.option("--parents", "make_parents", is_flag=True, help="Make FILE's missing folders (else a missing folder is an error).")
def cli(file: str, allocations: int, seed: int, timezone: str, parsable: bool, no_steps: bool, malformed: int, energy: str | None,
        delimiter: str, gpu_types: str, make_parents: bool) -> None:
    """Write a generated Slurm sacct export to FILE, to try whatif on; print what it holds as JSON.

    FILE: a new file or an earlier generated export; - writes the export on stdout (uncompressed) and the JSON on stderr.
    """
    if len(delimiter) != 1:
        fail(f"--delimiter {delimiter!r}: give one character")
    try:
        check_timezone(timezone)
    except ValueError as exc:
        fail(f"--timezone: {exc}")
    try:
        target = check_output(file, "FILE", find_home(), kind=EXPORT_FILE, make_parents=make_parents)
    except OutputRefused as exc:
        fail(str(exc))
    try:
        truth = generate_export(lambda text: write_output(target, text if target.is_stdout else compressed(text, Path(file).suffix)),
                                allocations, seed=seed, timezone=timezone, steps=not no_steps, parsable=parsable, malformed=malformed,
                                energy=energy, delimiter=delimiter, gpu_types=tuple(t.strip() for t in gpu_types.split(",") if t.strip()))
    except (ValueError, OSError) as exc:  # more malformed lines than lines, an unwritable file, a refused one (OutputRefused)
        fail(str(exc) if isinstance(exc, OutputRefused) else f"{file}: {exc}")
    click.echo(json.dumps(asdict(truth)), err=target.is_stdout)
    click.echo(f"[example-export] {truth.allocations:,} allocations, {truth.lines:,} lines -> {printable(file)}", err=True)
