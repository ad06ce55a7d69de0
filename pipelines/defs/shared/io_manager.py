"""The Parquet IO manager every table asset uses, and the paths resource.

Parquet is the source of truth: ``assets/<key>.parquet`` for a table, ``assets/<key>/<partition>.parquet``
for a partitioned one; every write is atomic (temp file + rename). We write our own IO manager because
dagster-polars 0.27 does not load with polars 2.

A run over several partitions returns ``{partition key: frame}``; its asset passes the mapping through
``partition_tables`` so that each partition's materialization carries its own row count, path and
preview (the IO manager, which writes the files, can only add metadata common to every partition).

Every table follows its contract (``pipelines.contracts.registry.table_contract``): the IO manager
validates each output against it before writing (and writes nothing when it fails), and
``contract_metadata`` gives an asset definition its column schema (types, descriptions with
units, nullability), so the UI shows it before anything is materialized.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import dagster as dg
import polars as pl

from pipelines.contracts.base import ContractError, empty, validate
from pipelines.contracts.registry import table_contract
from pipelines.defs.shared.metadata import table_metadata
from pipelines.home.atomic import write_parquet_atomic
from pipelines.home.paths import ProjectPaths, default_paths, table_path

#: Definition metadata of a partitioned table each of whose partitions stands alone (your own traces): a load reads the
#: partitions present, no rows for the absent ones (a trace whose file could not be read), and
#: ``python -m pipelines materialize`` runs each partition in a run of its own (``pipelines.orchestration.dagster_runs.plan_runs``),
#: so that one partition's failure is its own.
PARTITIONS_STAND_ALONE = "partitions_stand_alone"


class PathsResource(dg.ConfigurableResource):
    """The project folders; ``root`` empty means the repository (or ``$GPU_ENERGY_HOME``)."""

    root: str = ""

    def paths(self) -> ProjectPaths:
        return ProjectPaths(Path(self.root).resolve()) if self.root else default_paths()


class ParquetIOManager(dg.ConfigurableIOManager):
    """Stores polars DataFrames as zstd Parquet under ``<root>/assets``, atomically, each checked against its contract.

    A run over several partitions (a single-run backfill, ``BackfillPolicy.single_run()``) returns
    a ``{partition key: DataFrame}`` mapping with exactly the run's partition keys; each is written
    to its own file. A one-partition run may return the frame itself. Every frame is validated
    before any file is written. Loading partitions that are not stored is an error, except for a
    table declaring ``PARTITIONS_STAND_ALONE`` in its definition metadata: absent partitions read as no rows.
    Partitions are concatenated by column name: one stored before a nullable column was added reads it as null.
    """

    root: str = ""

    def _base(self) -> Path:
        return (ProjectPaths(Path(self.root).resolve()) if self.root else default_paths()).assets

    def path(self, key: dg.AssetKey, partition_key: str | None) -> Path:
        """Where the table ``key`` (its partition ``partition_key``, if any) is stored."""
        return table_path(self._base(), "/".join(key.path), partition_key)

    def handle_output(self, context: dg.OutputContext, obj: pl.DataFrame | dict[str, pl.DataFrame] | None) -> None:
        if obj is None:
            return
        key = context.asset_key.to_user_string()
        contract = table_contract(key)
        if contract is None:
            raise ContractError(f"{key}: no contract; declare the table in pipelines.contracts.registry.TABLES")
        if isinstance(obj, dict):
            expected = set(context.asset_partition_keys) if context.has_asset_partitions else set()
            if set(obj) != expected or not all(isinstance(v, pl.DataFrame) for v in obj.values()):
                raise TypeError(f"{key}: a mapping output must hold one DataFrame per partition of the run {sorted(expected)}, "
                                f"got {sorted(obj)}")
            for part, frame in sorted(obj.items()):
                validate(frame, contract, name=f"{key} (partition {part})")  # all before anything is written
            for part, frame in sorted(obj.items()):
                write_parquet_atomic(frame, self.path(context.asset_key, part))
            # Common to the run's partitions; each one's row count, path and preview come from partition_tables.
            context.add_output_metadata({"rows_by_partition": dg.MetadataValue.json({k: v.height for k, v in sorted(obj.items())})})
            return
        if not isinstance(obj, pl.DataFrame):
            raise TypeError(f"{key}: expected a polars DataFrame, got {type(obj)!r}")
        partition = context.partition_key if context.has_asset_partitions else None
        where = f"{key} (partition {partition})" if partition is not None else key
        validate(obj, contract, name=where)  # raises before anything is written
        path = write_parquet_atomic(obj, self.path(context.asset_key, partition))
        context.add_output_metadata(table_metadata(obj, path, contract))

    def load_present(self, key: dg.AssetKey, partition_keys: Iterable[str]) -> pl.DataFrame:
        """The stored partitions ``partition_keys`` of the table ``key`` (a ``PARTITIONS_STAND_ALONE`` one), no rows for the
        absent ones: no rows at all, with the table's columns, when none is stored."""
        present = [pl.read_parquet(p) for p in (self.path(key, pk) for pk in partition_keys) if p.exists()]
        contract = table_contract(key.to_user_string())
        return pl.concat(present, how="diagonal_relaxed") if present else empty(contract) if contract else pl.DataFrame()

    def load_input(self, context: dg.InputContext) -> pl.DataFrame:
        key = context.asset_key
        if context.has_asset_partitions:
            upstream = context.upstream_output
            if upstream is not None and (upstream.definition_metadata or {}).get(PARTITIONS_STAND_ALONE):
                return self.load_present(key, context.asset_partition_keys)
            paths = [self.path(key, pk) for pk in context.asset_partition_keys]
            missing = [str(p) for p in paths if not p.exists()]
            if missing:
                raise FileNotFoundError(f"{key.to_user_string()}: partitions not materialized: {missing[:5]}")
            return pl.concat([pl.read_parquet(p) for p in paths], how="diagonal_relaxed")
        path = self.path(key, None)
        if not path.exists():
            raise FileNotFoundError(f"{key.to_user_string()}: {path} does not exist; materialize it first")
        return pl.read_parquet(path)


def partition_tables(
    context: dg.AssetExecutionContext, frames: Mapping[str, pl.DataFrame], asset_key: dg.AssetKey | None = None
) -> dict[str, pl.DataFrame]:
    """``frames`` ({partition key: frame}, what a multi-partition run returns), each partition's own metadata attached.

    Each partition's materialization gets its frame's row count, its file's path and its preview
    (``table_metadata``), so that ``dagster/row_count`` is the partition's, not the run's total.
    The path is the one the asset's IO manager (a ``ParquetIOManager``) writes the partition to.
    """
    key = asset_key or context.asset_key
    manager = context.resources.io_manager
    if not isinstance(manager, ParquetIOManager):
        raise TypeError(f"{key.to_user_string()}: partition_tables needs the ParquetIOManager, got {type(manager).__name__}")
    contract = table_contract(key.to_user_string())
    for part, frame in sorted(frames.items()):
        context.add_asset_metadata(table_metadata(frame, manager.path(key, part), contract), asset_key=key, partition_key=part)
    return dict(frames)
