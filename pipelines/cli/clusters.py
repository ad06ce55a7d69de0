"""``python -m pipelines clusters``: your own cluster traces in ``raw/clusters/`` (add, list, remove).

``add NAME FILE`` copies the file once beside ``raw/clusters/NAME.sacct`` or ``NAME.csv``, reads
that copy (so a file that cannot be read is refused with the line and column) and hashes it, then
renames it into place and writes ``NAME.toml`` with its sha256 and options
(``pipelines.clusters.tracefiles.add_trace``); any failure is one line, and leaves a trace of that
name as it was. The Dagster sensor ``cluster_traces_sensor`` then registers the trace as a
partition and materializes it. ``remove NAME`` removes its files, its stored partitions and its
partition. Both take the Dagster home's lock (``pipelines.orchestration.lock``), so a ``materialize`` never sees a trace
change under it: while one runs they refuse in one line naming it, or wait with ``--wait``.
"""

from __future__ import annotations

import errno
import os
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, TypeVar

import click

from pipelines.cli import invoked_as
from pipelines.cli.options import fail
from pipelines.clusters import tracefiles
from pipelines.home.init import use_dagster_home
from pipelines.home.paths import default_mirror, default_paths
from pipelines.ingest.common import IngestError
from pipelines.ingest.slurm import DEFAULT_DELIMITER, check_delimiter, parse_fields
from pipelines.ingest.text_reader import ReadLimits
from pipelines.orchestration import lock
from pipelines.terminal import printable


def os_error(exc: OSError) -> str:
    """One line for an operating-system error: its message, and what to do about a full disk."""
    what = (exc.strerror or os.strerror(exc.errno)) if exc.errno else str(exc)
    return what + ("; free space on the disk of raw/clusters/" if exc.errno == errno.ENOSPC else "")


def delimiter_option(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """``--delimiter``: exactly one character, not a line break (a usage error otherwise); ``\\t`` reads as a tab."""
    value = "\t" if value == "\\t" else value
    try:
        return check_delimiter(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


#: The commands that change raw/clusters/, as the lock's holder names itself (``lock.held``: its click command path).
_CHANGES = (" clusters add", " clusters remove")


def home_locked(wait: bool) -> AbstractContextManager[None]:
    """The Dagster home's lock, held while a trace is added or removed: taken at once, else waited for (``wait``), else
    refused in one line naming the command that holds it (a running ``materialize``). Another add or remove (seconds) is
    always waited for: changes to raw/clusters/ queue one after the other."""
    folder = use_dagster_home()[0]

    def held_by(who: str) -> None:
        for _ in range(40):  # a holder names itself just after it takes the lock: read it again before deciding
            if who != lock.UNWRITTEN:
                break
            time.sleep(0.05)
            now = lock.holder(folder)
            if now is None:  # released meanwhile: the wait below takes it at once
                return
            who = now
        if not wait and not who.endswith(_CHANGES):
            fail(f"{folder / lock.LOCK_FILE} is held ({who}): a materialize reads raw/clusters/; run this again once it ends, "
                 "or add --wait")
        click.echo(f"waiting: {folder / lock.LOCK_FILE} is held ({printable(who)})", err=True)

    return lock.held(folder, held_by)


WAIT_OPTION = click.option("--wait", is_flag=True, help="While a materialize runs, wait for it to end (default: refuse).")
F = TypeVar("F", bound=Callable[..., Any])


def read_limit_options(defaults: ReadLimits, rows_note: str) -> Callable[[F], F]:
    """Add ``--max-rows``, ``--max-line-bytes`` and ``--max-bytes`` (``ReadLimits``, ``defaults`` shown) to a command that
    reads an own-trace file; ``read_limits`` makes them a ``ReadLimits``. ``rows_note``: what the line bound guards there."""
    def add(command: F) -> F:
        for option in reversed((
            click.option("--max-rows", type=click.IntRange(min=1), default=defaults.rows, show_default=True,
                         help=f"Lines of the file read at most (header included); more is an error. {rows_note}"),
            click.option("--max-line-bytes", type=click.IntRange(min=1), default=defaults.line_bytes, show_default=True,
                         help="Bytes of one line at most; a longer line is an error."),
            click.option("--max-bytes", type=click.IntRange(min=1), default=defaults.decompressed_bytes, show_default=True,
                         help="Bytes a compressed file may decompress to at most; more is an error."),
        )):
            command = option(command)
        return command

    return add


def read_limits(max_rows: int, max_line_bytes: int, max_bytes: int) -> ReadLimits:
    return ReadLimits(rows=max_rows, line_bytes=max_line_bytes, decompressed_bytes=max_bytes)


@click.group("clusters")
def cli() -> None:
    """Your own cluster traces (raw/clusters/): add a Slurm export or job-log CSV, list them, remove one."""


@cli.command("add")
@click.argument("name")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["sacct", "csv"]), default=None, help="[default: csv for .csv, else sacct]")
@click.option("--timezone", default="UTC", show_default=True, help="IANA time zone of the file's times (the cluster's clock).")
@click.option("--fields", default=None, help="A sacct --noheader export's field list, as given to --format.")
@click.option("--delimiter", default=DEFAULT_DELIMITER, show_default=True, callback=delimiter_option,
              help="The character given to sacct's --delimiter (a --parsable/--parsable2 export).")
@click.option("--replace", is_flag=True, help="Replace a trace of that name.")
@click.option("--cluster-gpus", type=click.IntRange(min=1), default=None,
              help="GPUs of the cluster, for the idle draw of cluster power (at least the trace's peak concurrent GPUs)  "
                   "[default: the trace's peak concurrent GPUs]")
@read_limit_options(ReadLimits(), "The memory guard: the trace's materialization holds its whole table and quarantine.")
@WAIT_OPTION
def add(name: str, file: Path, fmt: str | None, timezone: str, fields: str | None, delimiter: str, replace: bool,
        cluster_gpus: int | None, max_rows: int, max_line_bytes: int, max_bytes: int, wait: bool) -> None:
    """Copy FILE into raw/clusters/ as trace NAME, recording its sha256 and how to read it.

    FILE may be compressed (.gz, .xz, .zst): it is kept so, and read streamed.
    """
    if not file.is_file():
        fail(f"{file}: no such file" if not file.exists() else
             f"{file}: not a regular file (a FIFO, device or stdin): clusters add keeps a copy of a file; save the export to a file first")
    try:
        tracefiles.check_name(name)
        file_format = tracefiles.format_of(file, fmt)
        field_list = tuple(parse_fields(fields)) if fields else None
        with home_locked(wait):
            added, result = tracefiles.add_trace(default_paths().raw, name, file, fmt=file_format, timezone=timezone, fields=field_list,
                                                 replace=replace, delimiter=delimiter, cluster_gpus=cluster_gpus,
                                                 limits=read_limits(max_rows, max_line_bytes, max_bytes))
    except (IngestError, tracefiles.TraceFileError, ValueError) as exc:
        fail(str(exc))
    except OSError as exc:  # ENOSPC, EIO, a permission: the old trace is as it was
        fail(f"{file}: not added ({os_error(exc)}); trace {name!r} is as it was")
    except KeyboardInterrupt:
        click.echo(f"Error: interrupted; {file} not added, trace {name!r} is as it was", err=True)
        sys.exit(130)
    c = result.counts
    gpus = f"; {cluster_gpus:,} GPUs" if cluster_gpus is not None else ""
    click.echo(f"added trace {name}: {added.path} (sha256 {added.recorded_sha256}; {file_format}, times in {timezone}{gpus})")
    click.echo(f"  {c.lines:,} lines = {c.header_lines} header + {c.allocations:,} allocations + {c.steps_skipped:,} steps + "
               f"{c.quarantined:,} quarantined; {c.completed_gpu_allocations:,} COMPLETED GPU jobs to replay")
    click.echo(f"  a running `dagster dev` (`make dev`) picks it up within a minute (sensor cluster_traces_sensor); "
               f"or run `{invoked_as('materialize')}`.")


@cli.command("list")
def list_traces() -> None:
    """The traces present: public ones whose files are here, and yours (with their options)."""
    raw = default_paths().raw
    click.echo("public: " + (", ".join(tracefiles.public_traces(raw, default_mirror())) or "none"))
    traces, problems = tracefiles.user_traces(raw)
    for t in traces:
        fields = f", fields {','.join(t.fields)}" if t.fields else ""
        delimiter = f", delimiter {t.delimiter!r}" if t.delimiter != DEFAULT_DELIMITER else ""
        gpus = f", {t.cluster_gpus:,} GPUs" if t.cluster_gpus is not None else ""
        click.echo(f"{t.name}: {t.source_file} ({t.format}, times in {t.timezone}{fields}{delimiter}{gpus})")
    for problem in problems:
        click.echo(f"not used: {printable(problem)}", err=True)


@cli.command("remove")
@click.argument("name")
@WAIT_OPTION
def remove(name: str, wait: bool) -> None:
    """Remove trace NAME: its files in raw/clusters/ (data and sidecar), its stored partitions, its report and its trace and own_trace partitions."""
    from pipelines.definitions import loaded  # Dagster and the asset graph: only for this command
    from pipelines.defs.clusters.partitions import OWN_TRACE_DIMENSION, TRACE_DIMENSION, forget_trace
    from pipelines.defs.figures.own_cluster_report import PREFIX
    from pipelines.orchestration.dagster_storage import StorageError, home_instance

    paths = default_paths()
    with home_locked(wait):
        try:
            removed = tracefiles.remove_trace(paths.raw, name)
            reports = [p for p in (paths.figures / f"{PREFIX}{name}.html", paths.figures / f"{PREFIX}{name}.json") if p.is_file()]
            for path in reports:
                path.unlink()
        except tracefiles.TraceFileError as exc:
            fail(str(exc))
        except OSError as exc:
            fail(f"trace {name!r}: not removed ({os_error(exc)})")
        graph = loaded().resolve_asset_graph()
        try:
            with home_instance() as instance:
                registered = [d for d in (TRACE_DIMENSION, OWN_TRACE_DIMENSION) if instance.has_dynamic_partition(d, name)]
                stored = forget_trace(instance, [(k, graph.get(k).partitions_def) for k in graph.materializable_asset_keys], paths, name)
        except StorageError as exc:
            fail(str(exc))
    if not (removed or reports or stored or registered):
        fail(f"trace {name!r}: nothing to remove (no file raw/clusters/{name}.*, no stored partition); `clusters list` names the traces")
    click.echo(f"removed trace {name}: {len(removed)} file(s) in raw/clusters/ ({', '.join(p.name for p in removed) or 'none left'}), "
               f"{len(stored)} stored partition file(s), {len(reports)} report file(s)"
               + (f", its {' and '.join(registered)} partition{'s' if len(registered) > 1 else ''}" if registered else ""))
