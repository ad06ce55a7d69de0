"""``python -m pipelines sql``: run SQL over the asset views and print the result."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import duckdb
import polars as pl

from pipelines.cli import invoked_as
from pipelines.ingest.common import IngestError
from pipelines.ingest.compressed import read_at_most
from pipelines.sql.views import READ_ONLY, connect, first_line, sql_file, stream_sql, view_names
from pipelines.sql.watchdog import QueryTimeout, interruptible, memory_cap
from pipelines.terminal import clip_input, json_safe, printable

#: Rows the table format prints by default; the rest are counted, not held (``--rows``).
PREVIEW_ROWS = 50
#: Seconds a query may run by default before it is interrupted (``--timeout``).
TIMEOUT_S = 300.0
#: Bytes of SQL read from ``--file`` (or one statement of the shell) at most: a script, not a data file.
MAX_SQL_BYTES = 16 * 2**20


def flatten_nested(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with every list, array or struct column written as JSON text (CSV holds no nesting)."""
    nested = [name for name, dtype in frame.schema.items() if dtype.is_nested()]
    if not nested:
        return frame
    return frame.with_columns(
        pl.Series(name, [None if v is None else json.dumps(v, default=str) for v in frame[name].to_list()], dtype=pl.String)
        for name in nested
    )


@click.command("sql")
@click.argument("query", required=False)
@click.option("--file", "file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help=f"Read the SQL from a file (at most {MAX_SQL_BYTES // 2**20} MiB).")
@click.option("--example", default=None, help="Run a shipped example query by name (see --list-examples).")
@click.option("--list-examples", is_flag=True, help="List the shipped example queries and exit.")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True,
              help="table: the first --rows rows and the row count; csv and json: every row, streamed.")
@click.option("--rows", "preview_rows", type=click.IntRange(min=0), default=PREVIEW_ROWS, show_default=True,
              help="Rows the table format prints (the others are counted, not printed).")
@click.option("--shell", is_flag=True,
              help="Read statements (each ended by ';') from standard input, with a prompt on a terminal, and print each "
                   "one's result as a table (make sql).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0), default=TIMEOUT_S, show_default=True,
              help="Seconds a statement may run before it is interrupted (0: no limit).")
@click.option("--memory-limit", default=None, metavar="SIZE",
              help="DuckDB's memory limit, e.g. 4GB (default: half this machine's RAM); a query needing more fails.")
@click.option("--allow-read", "allow_read", multiple=True, type=click.Path(exists=True, path_type=Path), metavar="PATH",
              help="Also read files under PATH (repeatable); by default only the data home and the upstream mirror.")
def cli(query: str | None, file: Path | None, example: str | None, list_examples: bool, fmt: str, preview_rows: int,
        shell: bool, timeout_s: float, memory_limit: str | None, allow_read: tuple[Path, ...]) -> None:
    """Run QUERY (or --file, or --example) over in-memory DuckDB views of every materialized table.

    The session is read-only: files are read (the views, and read_parquet(getvariable('home') ||
    '/figures/x.parquet')), never written, and only under the data home, the upstream mirror and
    --allow-read folders. Ctrl-C or --timeout interrupts a statement.
    """
    examples = {p.name.removesuffix(".sql"): p for p in sql_file("examples").iterdir() if p.name.endswith(".sql")}
    if list_examples:
        for name in sorted(examples):
            click.echo(name)
        return
    if shell:
        if any(x is not None for x in (query, file, example)):
            raise click.UsageError("--shell reads the statements from standard input: give no QUERY, --file or --example")
        _shell(_connect(allow_read, memory_limit), preview_rows, timeout_s)
        return
    if sum(x is not None for x in (query, file, example)) != 1:
        raise click.UsageError("give exactly one of QUERY, --file, --example or --shell")
    if example is not None and example not in examples:
        raise click.BadParameter(f"no example {example!r}; examples: {', '.join(sorted(examples))}", param_hint="'--example'")
    text = examples[example].read_text() if example is not None else read_sql_file(file) if file is not None else query
    assert text is not None
    con = _connect(allow_read, memory_limit)
    cap = memory_cap(con)  # before the statement runs: the connection takes no other query while its result streams
    frames = stream_sql(con, text)
    try:
        with interruptible(con, timeout_s, memory_bytes=cap):
            if fmt == "csv":
                for i, frame in enumerate(frames):
                    sys.stdout.write(flatten_nested(frame).write_csv(include_header=i == 0))
            elif fmt == "json":
                _write_json(frames)
            else:
                _write_preview(frames, preview_rows)
    except duckdb.CatalogException as exc:
        # not in parentheses: clip_input would cut the list as if it quoted input
        raise click.ClickException(f"{one_line(exc)}; views: {', '.join(view_names(con))}; "
                                   f"a missing table may not be materialized yet: {invoked_as('materialize')}") from exc
    except duckdb.Error as exc:
        raise click.ClickException(one_line(exc)) from exc
    except QueryTimeout as exc:
        raise click.ClickException(str(exc)) from exc


def _connect(allow_read: tuple[Path, ...], memory_limit: str | None) -> duckdb.DuckDBPyConnection:
    """``connect``'s session for the command line; a memory limit DuckDB does not take is a usage error."""
    try:
        return connect(quiet=True, allow_read=allow_read, memory_limit=memory_limit)
    except duckdb.Error as exc:
        if memory_limit is not None and "memory" in str(exc).lower():
            raise click.BadParameter(first_line(exc), param_hint="'--memory-limit'") from exc
        raise


def read_sql_file(path: Path, limit: int = MAX_SQL_BYTES) -> str:
    """The text of ``path``, read ``limit`` bytes at most (``/dev/zero`` ends as soon as the limit is passed; a FIFO with
    no writer after ``STREAM_IDLE_S``); an empty one is refused (no statement: nothing would run)."""
    try:
        data = read_at_most(path, limit + 1)
    except IngestError as exc:
        raise click.BadParameter(printable(str(exc)), param_hint="'--file'") from None
    if not data.strip():
        raise click.BadParameter(f"{printable(str(path))} is empty: no SQL to run", param_hint="'--file'")
    if len(data) > limit:
        raise click.BadParameter(f"{printable(str(path))} holds more than {limit // 2**20} MiB: a SQL script, not data, "
                                 "is read with --file", param_hint="'--file'")
    try:
        return data.decode()
    except UnicodeDecodeError as exc:
        raise click.BadParameter(f"{printable(str(path))} is not UTF-8 text (byte {exc.start})", param_hint="'--file'") from exc


#: The exception's name that starts the last line of a Python traceback (``pipelines.sql.views.ReadRefused: ...``).
_EXCEPTION_NAME = re.compile(r"^[\w.]+: ")


def one_line(exc: duckdb.Error) -> str:
    """DuckDB's message in one line, with what to do when it is the read-only session's refusal.

    An error raised inside a registered file system comes back as a Python traceback: its last line is the message.
    """
    lines = [line for line in str(exc).splitlines() if line.strip()] or [type(exc).__name__]
    message = _EXCEPTION_NAME.sub("", lines[-1]) if lines[0].startswith("Traceback") else lines[0]
    if "LocalFileSystem has been disabled" in message:
        message += (f" (the SQL session is read-only: it writes no file, and reads files through {READ_ONLY}:// only, "
                    "e.g. read_parquet(getvariable('home') || '/figures/NAME.parquet'))")
    return clip_input(message)


def _write_json(frames: Iterator[pl.DataFrame]) -> None:
    """One JSON array of row objects, written a frame at a time; NaN and infinities as ``json_safe`` writes them."""
    sys.stdout.write("[")
    first = True
    for frame in frames:
        rows = frame_json(frame)[1:-1]  # the frame's array without its brackets
        if rows:
            sys.stdout.write(rows if first else "," + rows)
            first = False
    sys.stdout.write("]\n")


def frame_json(frame: pl.DataFrame) -> str:
    """``frame`` as a JSON array of row objects. A float that is NaN or infinite is the string ``"NaN"``,
    ``"Infinity"`` or ``"-Infinity"`` (polars alone writes null, as it writes a missing value). Frames with such
    floats (or floats inside lists and structs) go through ``json.dumps``; others stay in polars."""
    floats = [name for name, dtype in frame.schema.items() if dtype.is_float()]
    nested_floats = any(dtype.is_nested() and "Float" in str(dtype) for dtype in frame.schema.values())
    if not nested_floats and not (floats and frame.select(pl.any_horizontal(pl.col(floats).is_finite().not_())).to_series().any()):
        return frame.write_json()
    return json.dumps(json_safe(frame.to_dicts()), default=str, allow_nan=False)


def _write_preview(frames: Iterator[pl.DataFrame], preview_rows: int) -> None:
    """The first ``preview_rows`` rows as a table, then the row count (the other rows are counted as they stream by)."""
    kept: list[pl.DataFrame] = []
    total = 0
    for frame in frames:
        if total < preview_rows or not kept:
            kept.append(frame.head(max(preview_rows - total, 0)))
        total += frame.height
    preview = pl.concat(kept, how="vertical")
    with pl.Config(tbl_rows=-1, tbl_cols=-1, fmt_str_lengths=80, tbl_width_chars=200, tbl_hide_dataframe_shape=True):
        click.echo(preview)
    shown = f"; the first {preview.height:,} shown (--rows, or --format csv for all)" if preview.height < total else ""
    click.echo(f"{total:,} row{'s' if total != 1 else ''}{shown}")


def _shell(con: duckdb.DuckDBPyConnection, preview_rows: int, timeout_s: float) -> None:
    """Statements from standard input, each run when complete (a line ending in ';', or the end of the input) and its
    result printed as ``_write_preview``; an error prints one line and the shell goes on. Exit status 1 when a statement
    failed and the input was a script (not a terminal)."""
    interactive = sys.stdin.isatty()
    if interactive:
        click.echo(f"read-only SQL over {len(view_names(con))} views (`show tables` lists them); end a statement with ';'; "
                   "Ctrl-D quits", err=True)
    failed, buffer = False, ""
    while (line := _read_line(interactive, "...> " if buffer else "sql> ")) is not None:
        buffer += line
        if len(buffer) > MAX_SQL_BYTES:
            raise click.ClickException(f"a statement of more than {MAX_SQL_BYTES // 2**20} MiB on standard input "
                                       "(a statement ends with ';')")
        if buffer.rstrip().endswith(";"):
            done, ok = _run_statements(con, buffer, preview_rows, timeout_s)
            buffer = "" if done else buffer
            failed |= not ok
    if buffer.strip():
        failed |= not _run_statements(con, buffer, preview_rows, timeout_s, last=True)[1]
    if failed and not interactive:
        sys.exit(1)


def _read_line(interactive: bool, prompt: str) -> str | None:
    """The next line of standard input with its line break; None at its end."""
    if not interactive:
        return sys.stdin.readline(MAX_SQL_BYTES + 1) or None
    try:
        return input(prompt) + "\n"
    except EOFError:
        return None


def _run_statements(con: duckdb.DuckDBPyConnection, text: str, preview_rows: int, timeout_s: float, *,
                    last: bool = False) -> tuple[bool, bool]:
    """Run ``text``'s statements, printing each result: (whether ``text`` was complete, whether every statement ran).

    A ';' inside a quoted string ends no statement: unless ``last``, such ``text`` waits for more lines.
    """
    try:
        statements = con.extract_statements(text)
    except duckdb.ParserException as exc:
        if not last and "unterminated" in str(exc).lower():
            return False, True
        click.echo(f"Error: {one_line(exc)}", err=True)
        return True, False
    ok = True
    for statement in statements:
        try:
            with interruptible(con, timeout_s, memory_bytes=memory_cap(con)):
                _write_preview(stream_sql(con, statement.query), preview_rows)
        except QueryTimeout as exc:
            ok = False
            click.echo(f"Error: {exc}", err=True)
        except duckdb.Error as exc:
            ok = False
            click.echo(f"Error: {one_line(exc)}", err=True)
    return True, ok
