"""The Parquet IO manager: round trip, partitions, atomic writes, metadata, contracts checked on write."""
# No `from __future__ import annotations`: Dagster reads the context annotation at definition time.


import warnings
from pathlib import Path

import dagster as dg
import dataframely as dy
import polars as pl
import pytest

from pipelines.contracts import registry
from pipelines.contracts.base import ContractError
from pipelines.defs.shared.io_manager import ParquetIOManager, partition_tables
from pipelines.home.atomic import write_parquet_atomic

parts = dg.StaticPartitionsDefinition(["v100", "a40"])


class Energy(dy.Schema):
    """Test tables: energy per GPU."""

    gpu = dy.String(description="GPU")
    energy_j = dy.Float64(min=0, description="energy (J)")


@pytest.fixture(autouse=True)
def register_test_contracts(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("per_gpu", "total", "negative", "per_gpu_at_once", "missing_a_partition", "one_bad_partition"):
        monkeypatch.setitem(registry.TABLES, key, Energy)


@dg.asset(partitions_def=parts)
def per_gpu(context: dg.AssetExecutionContext) -> pl.DataFrame:
    return pl.DataFrame({"gpu": [context.partition_key] * 2, "energy_j": [1.5, 2.5]})


@dg.asset
def total(per_gpu: pl.DataFrame) -> pl.DataFrame:
    return per_gpu.group_by("gpu").agg(pl.col("energy_j").sum()).sort("gpu")


def test_round_trip_with_partitions(tmp_path: Path) -> None:
    io = ParquetIOManager(root=str(tmp_path))
    for key in ("v100", "a40"):
        result = dg.materialize([per_gpu], partition_key=key, resources={"io_manager": io})
        meta = result.asset_materializations_for_node("per_gpu")[0].metadata
        assert meta["dagster/row_count"].value == 2 and "energy_j" in meta["preview"].value
        columns = meta["dagster/column_schema"].value.columns
        assert [(c.name, c.type, c.description) for c in columns] == [("gpu", "String", "GPU"), ("energy_j", "Float64", "energy (J)")]
    assert sorted(p.name for p in (tmp_path / "assets/per_gpu").iterdir()) == ["a40.parquet", "v100.parquet"]
    dg.materialize([per_gpu.to_source_asset(), total], resources={"io_manager": io})
    out = pl.read_parquet(tmp_path / "assets/total.parquet")
    assert out.to_dicts() == [{"gpu": "a40", "energy_j": 4.0}, {"gpu": "v100", "energy_j": 4.0}]


def test_failed_write_keeps_the_previous_file(tmp_path: Path) -> None:
    target = tmp_path / "t.parquet"
    write_parquet_atomic(pl.DataFrame({"a": [1, 2, 3]}), target)

    class Boom(pl.DataFrame):
        def write_parquet(self, *args: object, **kwargs: object) -> None:
            Path(str(args[0])).write_bytes(b"PAR1 half a file")
            raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_parquet_atomic(Boom({"a": [9]}), target)
    assert pl.read_parquet(target)["a"].to_list() == [1, 2, 3]
    assert [p.name for p in tmp_path.iterdir()] == ["t.parquet"]


@dg.asset
def negative() -> pl.DataFrame:
    return pl.DataFrame({"gpu": ["v100", "a40", "p100"], "energy_j": [1.0, -2.5, -1.0]})


@dg.asset
def undeclared() -> pl.DataFrame:
    return pl.DataFrame({"gpu": ["v100"], "energy_j": [1.0]})


@dg.asset
def mistyped() -> pl.DataFrame:
    return pl.DataFrame({"gpu": ["v100"], "energy_j": [1]})


def test_a_frame_breaking_its_contract_is_not_written(tmp_path: Path) -> None:
    io = ParquetIOManager(root=str(tmp_path))
    with pytest.raises(ContractError) as info:
        dg.materialize([negative], resources={"io_manager": io})
    assert str(info.value) == "negative: energy_j: must be >= 0 (value -2.5); 2 of 3 rows fail Energy (first: row 1)"
    assert not (tmp_path / "assets").exists() or not any((tmp_path / "assets").iterdir())


def test_a_table_without_a_contract_or_with_a_wrong_type_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    io = ParquetIOManager(root=str(tmp_path))
    with pytest.raises(ContractError, match=r"^undeclared: no contract; declare the table in pipelines\.contracts\.registry\.TABLES$"):
        dg.materialize([undeclared], resources={"io_manager": io})
    monkeypatch.setitem(registry.TABLES, "mistyped", Energy)
    with pytest.raises(ContractError, match=r"^mistyped: column 'energy_j' has type Int64, the contract says Float64$"):
        dg.materialize([mistyped], resources={"io_manager": io})
    assert not (tmp_path / "assets").exists() or not any((tmp_path / "assets").iterdir())


with warnings.catch_warnings():  # backfill_policy is a beta parameter of @asset
    warnings.simplefilter("ignore", dg.BetaWarning)

    @dg.asset(partitions_def=parts, backfill_policy=dg.BackfillPolicy.single_run())
    def per_gpu_at_once(context: dg.AssetExecutionContext) -> dict[str, pl.DataFrame]:
        # len(key) rows each: 3 for a40, 4 for v100 (7 in the run)
        return partition_tables(context, {key: pl.DataFrame({"gpu": [key] * len(key), "energy_j": [float(len(key))] * len(key)})
                                          for key in context.partition_keys})

    @dg.asset(partitions_def=parts, backfill_policy=dg.BackfillPolicy.single_run())
    def missing_a_partition(context: dg.AssetExecutionContext) -> dict[str, pl.DataFrame]:
        return {"v100": pl.DataFrame({"gpu": ["v100"], "energy_j": [1.0]})}

    @dg.asset(partitions_def=parts, backfill_policy=dg.BackfillPolicy.single_run())
    def one_bad_partition(context: dg.AssetExecutionContext) -> dict[str, pl.DataFrame]:
        return {"v100": pl.DataFrame({"gpu": ["v100"], "energy_j": [1.0]}), "a40": pl.DataFrame({"gpu": ["a40"], "energy_j": [-1.0]})}


def test_a_run_over_several_partitions_writes_one_file_each(tmp_path: Path) -> None:
    io = ParquetIOManager(root=str(tmp_path))
    tags = {"dagster/asset_partition_range_start": "v100", "dagster/asset_partition_range_end": "a40"}
    result = dg.materialize([per_gpu_at_once], tags=tags, resources={"io_manager": io})
    assert result.success
    meta = {e.partition: e.materialization.metadata for e in result.get_asset_materialization_events()}
    assert sorted(meta) == ["a40", "v100"]
    folder = tmp_path / "assets/per_gpu_at_once"
    for part, rows in (("a40", 3), ("v100", 4)):  # each partition its own count, path and preview, not the run's 7 rows
        assert meta[part]["dagster/row_count"].value == rows
        assert meta[part]["path"].value == str(folder / f"{part}.parquet")
        assert meta[part]["preview"].value.count(f"| {part} |") == rows
        assert meta[part]["rows_by_partition"].value == {"a40": 3, "v100": 4}
    assert pl.read_parquet(folder / "a40.parquet").to_dicts() == [{"gpu": "a40", "energy_j": 3.0}] * 3
    assert pl.read_parquet(folder / "v100.parquet").to_dicts() == [{"gpu": "v100", "energy_j": 4.0}] * 4


def test_a_mapping_must_hold_exactly_the_runs_partitions(tmp_path: Path) -> None:
    tags = {"dagster/asset_partition_range_start": "v100", "dagster/asset_partition_range_end": "a40"}
    with pytest.raises(TypeError, match=r"one DataFrame per partition of the run \['a40', 'v100'\], got \['v100'\]"):
        dg.materialize([missing_a_partition], tags=tags, resources={"io_manager": ParquetIOManager(root=str(tmp_path))})
    assert not (tmp_path / "assets/missing_a_partition").exists()


def test_one_partition_breaking_the_contract_writes_no_partition(tmp_path: Path) -> None:
    tags = {"dagster/asset_partition_range_start": "v100", "dagster/asset_partition_range_end": "a40"}
    with pytest.raises(ContractError, match=r"^one_bad_partition \(partition a40\): energy_j: must be >= 0"):
        dg.materialize([one_bad_partition], tags=tags, resources={"io_manager": ParquetIOManager(root=str(tmp_path))})
    assert not (tmp_path / "assets/one_bad_partition").exists()


def test_a_partition_stored_before_a_nullable_column_was_added_reads_it_as_null(tmp_path: Path) -> None:
    io = ParquetIOManager(root=str(tmp_path))
    for key in ("v100", "a40"):
        assert dg.materialize([per_gpu], partition_key=key, resources={"io_manager": io}).success
    old = tmp_path / "assets/per_gpu/a40.parquet"  # as an older version wrote it: no `note` column
    write_parquet_atomic(pl.read_parquet(tmp_path / "assets/per_gpu/v100.parquet").with_columns(pl.lit("new").alias("note")),
                         tmp_path / "assets/per_gpu/v100.parquet")
    assert "note" not in pl.read_parquet(old).columns
    dg.materialize([per_gpu.to_source_asset(), total], resources={"io_manager": io})
    assert pl.read_parquet(tmp_path / "assets/total.parquet").to_dicts() == [{"gpu": "a40", "energy_j": 4.0},
                                                                            {"gpu": "v100", "energy_j": 4.0}]
