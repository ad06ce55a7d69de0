"""Helpers shared by every contract: polars schema, descriptions, row validation with human reasons.

A contract is a ``dataframely.Schema`` subclass: one class attribute per column, each with its
type, constraints and ``description=`` (with the unit). This module reads contracts; it has no
Dagster import, so the ingest readers, the simulator and the figures use it as well.

* ``polars_schema(C)`` / ``empty(C)``: the column names and polars types, an empty frame of them.
* ``descriptions(C)``: column -> description.
* ``conform(frame, C)``: the contract's columns of ``frame`` in contract order, cast to its types.
* ``split_valid(frame, C)``: (rows passing every rule, one row per failing row with ``column``
  and a human ``reason`` such as ``duration: must be >= 0 (value -3)``); columns that are not in
  the contract (``_line``) ride along.
* ``validate(frame, C, name=...)``: the frame as stored, or ``ContractError`` naming the table,
  column and check (missing, extra or mistyped columns, and rule failures with a count and the
  first offending row).
* ``one_of(values, ...)``: a string column restricted to a closed set of values.
* ``subset(C, name, columns, doc)``: a contract of some of ``C``'s columns, declared there once
  (figure data that plots part of a table).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Sequence
from typing import Any

import dataframely as dy
import polars as pl

Contract = type[dy.Schema]

#: Metadata key of a ``one_of`` column: its allowed values (shown in failure reasons).
ONE_OF = "one_of"
_VALUE_CHARS = 80  # a failing value is quoted up to this many characters
_ROW = "__contract_row"
_FAILING_ROW = "__failing_row"


class ContractError(ValueError):
    """A frame that does not satisfy its table's contract; the message names table, column and check."""


def polars_schema(contract: Contract) -> pl.Schema:
    """Column names and polars types of ``contract``, in declaration order."""
    return _schema(contract)


@functools.cache
def _schema(contract: Contract) -> pl.Schema:
    return contract.create_empty().schema


def empty(contract: Contract) -> pl.DataFrame:
    """A frame with no rows and the contract's columns."""
    return pl.DataFrame(schema=_schema(contract))


def descriptions(contract: Contract) -> dict[str, str]:
    """Column -> its description (with the unit); an undescribed column maps to ""."""
    return {name: column.description or "" for name, column in contract.columns().items()}


def conform(frame: pl.DataFrame, contract: Contract) -> pl.DataFrame:
    """The contract's columns of ``frame``, in contract order, cast to the contract's types (extra columns dropped)."""
    return frame.select([pl.col(name).cast(dtype) for name, dtype in _schema(contract).items()])


def one_of(values: Sequence[str], *, description: str, nullable: bool = False, primary_key: bool = False) -> dy.String:
    """A string column whose values must be among ``values`` (a failure reason lists them)."""
    allowed = tuple(values)
    return dy.String(
        nullable=nullable,
        primary_key=primary_key,
        check={ONE_OF: lambda col: col.is_in(allowed)},
        metadata={ONE_OF: allowed},
        description=description,
    )


def subset(contract: Contract, name: str, columns: Sequence[str], doc: str) -> Contract:
    """A contract of ``columns`` of ``contract`` (types, checks and descriptions as declared there; no row rules)."""
    declared = contract.columns()
    attrs: dict[str, object] = {"__doc__": doc, "__module__": contract.__module__}
    attrs.update({c: copy.copy(declared[c]) for c in columns})
    return type(name, (dy.Schema,), attrs)


# ---------------------------------------------------------------------------------------------
# row validation


@functools.cache
def _without_primary_key(contract: Contract) -> Contract:
    """``contract`` with every column's ``primary_key`` off (same types, checks and row rules)."""
    columns: dict[str, object] = {}
    for name, column in contract.columns().items():
        copied = copy.copy(column)
        copied.primary_key = False
        columns[name] = copied
    return type(f"{contract.__name__}Rows", (contract,), columns)


def _keys_distinct(frame: pl.DataFrame, contract: Contract) -> bool:
    """True when ``frame``'s complete primary keys are provably distinct: as many distinct key hashes as such rows.

    The key hash is a function of the key's values (the columns' hashes xor-ed), so equal keys hash
    equal and distinct hashes prove distinct keys. A row with a null key part fails the key columns'
    nullability on its own and is left out.
    """
    key = contract.primary_key()
    digest = pl.col(key[0]).hash(seed=0)
    for i, column in enumerate(key[1:], start=1):
        digest = digest ^ pl.col(column).hash(seed=i)
    if not any(frame[c].null_count() for c in key):  # the common case: a null count is free
        return bool(frame.select(digest.n_unique()).item() == frame.height)
    complete = pl.all_horizontal([pl.col(c).is_not_null() for c in key])
    distinct, rows = frame.select(digest.filter(complete).n_unique().alias("distinct"), complete.sum().alias("rows")).row(0)
    return bool(distinct == rows)


@functools.cache
def _carrying(contract: Contract, extras: tuple[str, ...]) -> Contract:
    """``contract`` plus untyped, unchecked columns ``extras``, so that they ride along through ``filter``."""
    columns = {f"extra_{i}": dy.Any(alias=name) for i, name in enumerate(extras)}
    return type(f"{contract.__name__}Carrying", (contract,), columns)


def _row_rule(contract: Contract, rule: str) -> tuple[str | None, str]:
    """(first column a schema-level rule reads, what it means: the first line of its function's docstring)."""
    function = getattr(getattr(contract, rule, None), "validation_fn", None)
    if function is None:
        return None, "row rule failed"
    doc = (function.__doc__ or "").strip()
    columns = function(contract).meta.root_names()
    return (columns[0] if columns else None), (doc.splitlines()[0] if doc else "row rule failed")


def _value(column: str) -> pl.Expr:
    return pl.col(column).cast(pl.String).str.slice(0, _VALUE_CHARS).fill_null("null")


def _reason(contract: Contract, rule: str) -> tuple[str | None, pl.Expr]:
    """(column the rule is about, human reason of a failure as an expression over the failing row)."""
    if "|" not in rule:
        if rule == "primary_key":
            key = contract.primary_key()
            return key[0], pl.lit(f"duplicate key ({', '.join(key)})")
        column, meaning = _row_rule(contract, rule)
        return column, pl.lit(f"{rule}: {meaning}")
    column, check = rule.split("|", 1)
    spec: Any = contract.columns()[column]
    value = _value(column)
    bounds = {"min": ">=", "min_exclusive": ">", "max": "<=", "max_exclusive": "<"}
    if check == "nullability":
        return column, pl.lit(f"{column}: must not be null")
    if check in bounds:
        return column, pl.format(f"{column}: must be {bounds[check]} {getattr(spec, check)} (value {{}})", value)
    if check == "nan":
        return column, pl.lit(f"{column}: must not be NaN")
    if check == "inf":
        return column, pl.format(f"{column}: must be finite (value {{}})", value)
    if check in ("min_length", "max_length"):
        word = "at least" if check == "min_length" else "at most"
        return column, pl.format(
            f"{column}: must have {word} {getattr(spec, check)} characters (value {{}}, {{}} characters)", value, pl.col(column).str.len_chars()
        )
    if check == "regex":  # not pl.format: a pattern's braces ({0,47}) would be read as placeholders
        return column, pl.concat_str(pl.lit(f"{column}: must match {spec.regex} (value "), value, pl.lit(")"))
    if check == "unique":
        return column, pl.format(f"{column}: must be unique (value {{}} repeats)", value)
    if check == f"check__{ONE_OF}":
        allowed = ", ".join((spec.metadata or {}).get(ONE_OF, ()))
        return column, pl.format(f"{column}: must be one of {allowed} (value {{}})", value)
    return column, pl.format(f"{column}: fails {check.removeprefix('check__')} (value {{}})", value)


_BOUNDS = ("min", "min_exclusive", "max", "max_exclusive")


def _failed(rule: str, rules: Sequence[str]) -> pl.Expr:
    """Whether a failing row failed ``rule``; a NaN or an infinity that fails its column's NaN or
    infinity rule fails the bounds too, but is reported by that rule only."""
    failed = pl.col(rule) == "invalid"
    column, _, check = rule.partition("|")
    if check in _BOUNDS:
        for special in (f"{column}|nan", f"{column}|inf"):
            if special in rules:
                failed &= pl.col(special) != "invalid"
    return failed


def split_valid(frame: pl.DataFrame, contract: Contract) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(rows of ``frame`` passing every rule of ``contract``, the failing rows' reasons).

    ``frame`` has the contract's columns with its types, plus any others (``_line``, ...), which
    are kept on the good rows. The second frame has, per failing row in input order, those other
    columns, ``column`` (of the first failed rule; for a rule over several columns the first it
    reads) and ``reason`` (every failed rule, ``; ``-separated, e.g. ``duration: must be >= 0
    (value -3)`` or ``end_not_before_start: end_time must not be before start_time``).
    Row order is kept.
    """
    extras = tuple(c for c in frame.columns if c not in _schema(contract))
    # dataframely's primary-key rule groups every key (the costliest rule by far on a large table); when the
    # key hashes already prove the keys distinct the rule cannot fail, so the other rules run without it.
    checked = _without_primary_key(contract) if contract.primary_key() and _keys_distinct(frame, contract) else contract
    carrying = _carrying(checked, (*extras, _ROW))
    indexed = frame.with_row_index(_ROW)
    passed, failure = carrying.filter(indexed)
    good = passed.select(frame.columns)
    bad_schema = {**{c: frame.schema[c] for c in extras}, "column": pl.String(), "reason": pl.String()}
    if len(failure) == 0:
        return good, pl.DataFrame(schema=bad_schema)
    details = failure.details()
    # column rules first (in column order), then the key, then rules over several columns: the first failure names the column
    rules = sorted((c for c in details.columns if c not in indexed.columns), key=lambda r: 0 if "|" in r else 1 if r == "primary_key" else 2)
    reasons = [(_reason(contract, r), _failed(r, rules)) for r in rules]
    bad = details.sort(_ROW).select(
        *extras,
        pl.coalesce([pl.when(failed).then(pl.lit(col)) for (col, _), failed in reasons if col is not None])
        .cast(pl.String)
        .alias("column")
        if any(col is not None for (col, _), _ in reasons)
        else pl.lit(None, pl.String).alias("column"),
        pl.concat_str([pl.when(failed).then(text) for (_, text), failed in reasons], separator="; ", ignore_nulls=True).alias(
            "reason"
        ),
    )
    return good, bad


def validate(frame: pl.DataFrame, contract: Contract, *, name: str) -> pl.DataFrame:
    """``frame`` if it satisfies ``contract`` exactly (same columns, types, every rule); else ``ContractError``.

    The message names ``name`` (the table or figure), the column and the check, e.g.
    ``zeus_cluster_summary: jobs: must be >= 0 (value -1); 1 of 96 rows fail ZeusClusterSummary (first: row 3)``.
    """
    expected = _schema(contract)
    missing = [c for c in expected if c not in frame.columns]
    if missing:
        raise ContractError(f"{name}: column {missing[0]!r} is missing ({contract.__name__} has {', '.join(expected)})")
    extra = [c for c in frame.columns if c not in expected]
    if extra:
        raise ContractError(f"{name}: column {extra[0]!r} is not in the contract {contract.__name__} (declare and describe it there)")
    for column, column_spec in contract.columns().items():
        if not column_spec.validate_dtype(frame.schema[column]):
            raise ContractError(f"{name}: column {column!r} has type {frame.schema[column]}, the contract says {expected[column]}")
    _, bad = split_valid(frame.with_row_index(_FAILING_ROW), contract)
    if bad.height:
        first = bad.row(0, named=True)
        raise ContractError(
            f"{name}: {first['reason']}; {bad.height} of {frame.height} rows fail {contract.__name__} (first: row {first[_FAILING_ROW]})"
        )
    return frame
