"""Dagster metadata of stored tables: the column schema from a table's contract, row counts, markdown previews."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl

from pipelines.contracts.base import Contract, ContractError, polars_schema
from pipelines.contracts.registry import table_contract
from pipelines.terminal import printable

PREVIEW_ROWS = 10
COLUMN_SCHEMA = "dagster/column_schema"


def column_schema(contract: Contract) -> dg.TableSchema:
    """The contract's columns as a Dagster column schema: type, description (with the unit), nullability."""
    dtypes = polars_schema(contract)
    return dg.TableSchema(
        columns=[
            dg.TableColumn(
                name,
                str(dtypes[name]),
                description=column.description,
                constraints=dg.TableColumnConstraints(nullable=column.nullable, unique=column.unique),
            )
            for name, column in contract.columns().items()
        ]
    )


def contract_metadata(key: str) -> dict[str, object]:
    """Definition metadata of the table asset stored under ``key``: its column schema, from its contract."""
    contract = table_contract(key)
    if contract is None:
        raise ContractError(f"{key}: no contract; declare the table in pipelines.contracts.registry.TABLES")
    return {COLUMN_SCHEMA: column_schema(contract)}


def table_metadata(df: pl.DataFrame, path: Path | None = None, contract: Contract | None = None) -> dict[str, Any]:
    """Row count, column schema (the contract's, else the frame's types) and a markdown preview of a table."""
    schema = column_schema(contract) if contract is not None else dg.TableSchema(
        columns=[dg.TableColumn(name=name, type=str(dtype)) for name, dtype in df.schema.items()]
    )
    meta: dict[str, Any] = {
        "dagster/row_count": df.height,
        COLUMN_SCHEMA: schema,
        "preview": dg.MetadataValue.md(markdown_preview(df.head(PREVIEW_ROWS))),
    }
    if path is not None:
        meta["path"] = dg.MetadataValue.path(str(path))
    return meta


def markdown_preview(df: pl.DataFrame) -> str:
    """``df`` as a markdown table; floats to 6 significant digits (the Parquet file keeps them whole).

    Every cell and column name is text from the data (an own trace's job names and users), so it is
    shown as written: control characters as their escapes (``pipelines.terminal.printable``: ANSI
    ``ESC[31m`` shows as ``\\x1b[31m``) and Markdown's own characters backslash-escaped (``markdown_text``), so no
    ``**bold**``, ``[link](...)``, ``|`` or HTML in a cell becomes Markdown.
    """
    if df.width == 0:
        return "(no columns)"
    header = "| " + " | ".join(markdown_text(c) for c in df.columns) + " |"
    rule = "|" + "---|" * df.width
    rows = ["| " + " | ".join(_cell(v) for v in row) + " |" for row in df.iter_rows()]
    return "\n".join([header, rule, *rows])


def _cell(value: object) -> str:
    if value is None:
        return ""
    return markdown_text(f"{value:.6g}" if isinstance(value, float) else str(value))


#: The characters that make Markdown inside a table cell (emphasis, code, links, HTML, entities, strikethrough, cell
#: breaks), and an underscore that is not inside a word (``_x_``; ``energy_j`` is plain text in CommonMark).
_MARKUP = re.compile(r"""[\\`*\[\]<>&|~]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])""")


def markdown_text(text: str) -> str:
    """``text`` as literal Markdown: ``printable`` (control characters as escapes), then each ``_MARKUP`` character
    backslash-escaped (CommonMark shows an escaped punctuation character as itself)."""
    return _MARKUP.sub(lambda m: "\\" + m.group(), printable(text))
