"""``python -m pipelines sql``: run SQL over the asset views and print the result."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
import duckdb
import polars as pl

from pipelines.cli import invoked_as
from pipelines.sql.views import connect, run_sql, sql_file, view_names


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
@click.option("--file", "file", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Read the SQL from a file.")
@click.option("--example", default=None, help="Run a shipped example query by name (see --list-examples).")
@click.option("--list-examples", is_flag=True, help="List the shipped example queries and exit.")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
def cli(query: str | None, file: Path | None, example: str | None, list_examples: bool, fmt: str) -> None:
    """Run QUERY (or --file, or --example) over in-memory DuckDB views of every materialized table."""
    examples = {p.name.removesuffix(".sql"): p for p in sql_file("examples").iterdir() if p.name.endswith(".sql")}
    if list_examples:
        for name in sorted(examples):
            click.echo(name)
        return
    if sum(x is not None for x in (query, file, example)) != 1:
        raise click.UsageError("give exactly one of QUERY, --file or --example")
    if example is not None and example not in examples:
        raise click.BadParameter(f"no example {example!r}; examples: {', '.join(sorted(examples))}", param_hint="'--example'")
    text = examples[example].read_text() if example is not None else file.read_text() if file is not None else query
    assert text is not None
    con = connect(quiet=True)
    try:
        result = run_sql(con, text)
    except duckdb.CatalogException as exc:
        raise click.ClickException(f"{str(exc).splitlines()[0]} (views: {', '.join(view_names(con))}; "
                                   f"a missing table may not be materialized yet: {invoked_as('materialize')})") from exc
    except duckdb.Error as exc:
        raise click.ClickException(str(exc).splitlines()[0]) from exc
    if fmt == "csv":
        sys.stdout.write(flatten_nested(result).write_csv())
    elif fmt == "json":
        sys.stdout.write(result.write_json() + "\n")
    else:
        with pl.Config(tbl_rows=-1, tbl_cols=-1, fmt_str_lengths=80, tbl_width_chars=200):
            click.echo(result)
