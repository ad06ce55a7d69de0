"""The simulator's inputs from files: the Zeus trace folder, the materialized trace tables, group tables.

Each reader parses and validates with the ingest readers and contracts, then hands the simulator
(``pipelines.zeus``, which reads frames only) what it takes. A bad value raises ``TraceError``
(traces) or ``GroupTableError`` (groups) naming its file, line and column: the simulator never
runs on part of an input, since a run drawn by position would silently change.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from pipelines.contracts.base import polars_schema, split_valid
from pipelines.contracts.zeus import ZeusGroups
from pipelines.home.paths import ProjectPaths, default_mirror, table_path
from pipelines.ingest import text_reader
from pipelines.ingest.common import IngestError, IngestResult
from pipelines.ingest.text_reader import SMALL_TABLE_LIMITS, read_table
from pipelines.ingest.zeus import power_file, read_power, read_train
from pipelines.sources.fetch import FetchError, fetch
from pipelines.sources.manifest import SOURCES_BY_NAME
from pipelines.vocabulary import REFERENCE_GPU
from pipelines.zeus.groups import GroupTableError
from pipelines.zeus.traces import POWER_COLUMNS, POWER_TABLE, TRAIN_COLUMNS, TRAIN_TABLE, TraceError, Traces, from_frames

_ROW = "_row"


def _strict(result: IngestResult) -> pl.DataFrame:
    """The table of an ingest result; any quarantined row raises ``TraceError`` naming file, line, column and reason.

    The simulator never runs on part of a trace: a run drawn by position would silently change.
    """
    if result.quarantine.height:
        row = result.quarantine.row(0, named=True)
        reason, column = row["reason"], row["column"]
        named = f"column {column}: " if column and not reason.startswith(("column ", f"{column}:")) else ""
        more = f" ({result.quarantine.height} rows rejected in all)" if result.quarantine.height > 1 else ""
        raise TraceError(f"{row['source_file']}:{row['line']}: {named}{reason}{more}")
    return result.table


def read_trace_dir(folder: Path, gpus: tuple[str, ...] | None = None) -> Traces:
    """``summary_train.csv`` and every ``summary_power_{gpu}.csv`` (or those of ``gpus``) of ``folder``.

    Parsed and validated by the ingest readers (``pipelines.ingest.zeus``); a bad value raises
    ``TraceError`` with its file, line and column instead of being quarantined.
    """
    train_path = folder / "summary_train.csv"
    if not train_path.is_file():
        raise TraceError(f"{train_path}: no such file")
    if gpus is None:
        gpus = tuple(sorted(p.name[len("summary_power_") : -len(".csv")] for p in folder.glob("summary_power_*.csv")))
    if not gpus:
        raise TraceError(f"{folder}: no summary_power_{{gpu}}.csv files")
    for gpu in gpus:
        if not power_file(folder, gpu).is_file():
            raise TraceError(f"unknown GPU {gpu!r}: {power_file(folder, gpu)} does not exist")
    try:
        return from_frames(_strict(read_train(train_path)), _strict(read_power(folder, gpus)))
    except IngestError as exc:
        raise TraceError(str(exc)) from exc


def read_materialized(assets: Path) -> Traces:
    """The materialized ``zeus_train_runs`` and ``zeus_power_profiles`` Parquet tables of ``assets``."""
    paths = {name: table_path(assets, name) for name in (TRAIN_TABLE, POWER_TABLE)}
    for path in paths.values():
        if not path.is_file():
            raise TraceError(f"{path} does not exist: materialize zeus_train_runs and zeus_power_profiles first, or pass --trace-dir with the Zeus CSVs")
    return from_frames(pl.read_parquet(paths[TRAIN_TABLE], columns=list(TRAIN_COLUMNS)),
                       pl.read_parquet(paths[POWER_TABLE], columns=list(POWER_COLUMNS)))



def _has_power_csvs(folder: Path, gpus: Sequence[str]) -> bool:
    return (folder / "summary_train.csv").is_file() and all((folder / f"summary_power_{g}.csv").is_file() for g in gpus)


def resolve_traces(trace_dir: Path | None, home: Path, gpus: Sequence[str]) -> tuple[Traces, str]:
    """(Zeus's train and power traces, where they came from): the one resolver of the commands that replay.

    In order: ``trace_dir``; the data home's materialized ``zeus_train_runs`` / ``zeus_power_profiles``;
    its fetched ``raw/zeus/*.csv``; the local mirror (``$TRACES_MIRROR`` or ``../shared/traces``);
    else a download into a temporary folder (verified by sha256), read from there and not kept.
    The reference GPU (v100, which orders the workloads) is always read too. Raises ``TraceError``
    when none of the places has them and the download fails.
    """
    wanted = tuple(dict.fromkeys([REFERENCE_GPU, *gpus]))
    if trace_dir is not None:
        return read_trace_dir(trace_dir, gpus=wanted), str(trace_dir)
    paths = ProjectPaths(home)
    if all(paths.table(t).is_file() for t in ("zeus_train_runs", "zeus_power_profiles")):
        return read_materialized(paths.assets), f"{paths.assets} (materialized tables)"
    for folder in (paths.raw / "zeus", *([m / "zeus"] if (m := default_mirror(home)) else [])):
        if _has_power_csvs(folder, wanted):
            return read_trace_dir(folder, gpus=wanted), str(folder)
    return _download(wanted)


def _download(gpus: Sequence[str]) -> tuple[Traces, str]:
    names = ["zeus/summary_train.csv", *(f"zeus/summary_power_{g}.csv" for g in gpus)]
    unknown = [n for n in names if n not in SOURCES_BY_NAME]
    if unknown:
        raise TraceError(f"no Zeus power trace for {unknown[0].split('_')[-1].removesuffix('.csv')!r} to download: pass --trace-dir")
    with tempfile.TemporaryDirectory(prefix="gpu-energy-zeus-") as tmp:
        paths = ProjectPaths(Path(tmp))
        try:
            for name in names:
                fetch(SOURCES_BY_NAME[name], paths, None, timeout_s=30)
        except FetchError as exc:
            raise TraceError(f"the Zeus traces are not in the data home nor in a mirror, and the download failed ({exc}); "
                             "run `gpu-energy fetch` or pass --trace-dir") from None
        return read_trace_dir(paths.raw / "zeus", gpus=tuple(gpus)), "downloaded from upstream (not kept)"


def read_table_file(path: Path) -> pl.DataFrame:
    """A ``.csv``, ``.csv.xz`` or ``.parquet`` file as a frame with every CSV field as text (a CSV through the reader
    engine: ``text_reader.MAX_TABLE_BYTES`` at most, xz streamed, every line and field within ``SMALL_TABLE_LIMITS``; a
    Parquet file within the same rows and bytes, ``_check_parquet_size``)."""
    name = path.name
    if not path.is_file():
        raise TraceError(f"{path}: no such file")
    if not name.endswith((".parquet", ".csv.xz", ".csv")):
        raise TraceError(f"{path}: expected a .csv, .csv.xz or .parquet file")
    try:
        if name.endswith(".parquet"):
            _check_parquet_size(path, name)
            return pl.read_parquet(path)
        return pl.read_csv(read_table(path, name, SMALL_TABLE_LIMITS), infer_schema=False)
    except pl.exceptions.NoDataError:
        raise TraceError(f"{path}: empty file (no header, no rows)") from None
    except IngestError as exc:  # a truncated, corrupt or oversized xz stream
        raise TraceError(f"{path}: {exc.message}") from None
    except (pl.exceptions.PolarsError, OSError, ValueError) as exc:  # ValueError: pyarrow's ArrowInvalid, a footer it cannot read
        raise TraceError(f"{path}: unreadable ({' '.join(str(exc).split())[:200]})") from None


def _check_parquet_size(path: Path, name: str) -> None:
    """A Parquet group table within a CSV one's bounds, read from its footer before any column is: its rows within
    ``SMALL_TABLE_LIMITS.rows``, its columns' uncompressed bytes within ``text_reader.MAX_TABLE_BYTES`` (what it
    decompresses to in memory, as a compressed CSV is bounded by what it decompresses to)."""
    import pyarrow.parquet as pq  # type: ignore[import-untyped]  # pyarrow 26 ships no type hints (no py.typed)

    meta = pq.read_metadata(path)
    if meta.num_rows > SMALL_TABLE_LIMITS.rows:
        raise IngestError(name, f"{meta.num_rows:,} rows, more than {SMALL_TABLE_LIMITS.rows:,} (the bound on rows per file)")
    size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    if size > text_reader.MAX_TABLE_BYTES:
        raise IngestError(name, f"decompresses to {size:,} bytes, more than {text_reader.MAX_TABLE_BYTES:,} (the bound on a table "
                                "read whole)")


def read_group_file(path: Path) -> pl.DataFrame:
    """A group table from ``.csv``, ``.csv.xz`` or ``.parquet``, typed and checked (see ``conform_groups``)."""
    return conform_groups(read_table_file(path), str(path), from_text=not path.name.endswith(".parquet"))


def conform_groups(frame: pl.DataFrame, name: str = "group table", from_text: bool = False,
                   rows: pl.Series | None = None) -> pl.DataFrame:
    """Cast ``frame`` to the group contract's columns (extra columns dropped, order kept) and validate it.

    Raises ``GroupTableError`` naming the line (``from_text``: header = line 1), the row's name in
    ``rows`` (a cluster trace's: its job), or the row, and the
    column of the first bad value: a missing column, an empty table, a value that does not parse,
    or any rule of ``ZeusGroups`` (a null or NaN, end before start, a non-positive runtime ratio,
    an unknown dataset, a group with several datasets).
    """
    # The contracts load dataframely: imported here, so that the single-job path never loads it.

    schema = polars_schema(ZeusGroups)
    missing = [c for c in schema if c not in frame.columns]
    if missing:
        raise GroupTableError(f"{name}: column {missing[0]!r} is missing (has {', '.join(frame.columns)})")
    if frame.height == 0:
        raise GroupTableError(f"{name}: no jobs")

    def where(i: int) -> str:
        if rows is not None:
            return f"{name}: {rows[i]}"
        return f"{name}:{i + 2}" if from_text else f"{name}: row {i}"

    for column, dtype in schema.items():
        source = frame[column]
        unparsed = source.cast(dtype, strict=False).is_null() & source.is_not_null()
        if unparsed.any():
            i = int(unparsed.arg_true()[0])
            raise GroupTableError(f"{where(i)}: column {column!r}: cannot use {source[i]!r} as {dtype}")
    typed = frame.select([pl.col(c).cast(t, strict=False) for c, t in schema.items()])
    _, bad = split_valid(typed.with_row_index(_ROW), ZeusGroups)
    if bad.height:
        first = bad.row(0, named=True)
        column = first["column"]
        raise GroupTableError(f"{where(first[_ROW])}: column {column!r}: {first['reason'].removeprefix(f'{column}: ')}")
    return typed
