"""Every file re-verified before it is read: unpacked tarball members against the hashes recorded at
unpack, pinned files against their pin; what differs is reported with both hashes and restored, and
checks that guard downstream block it."""

from __future__ import annotations

import hashlib
import json
import os
import tarfile
import warnings
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from pipelines.defs.shared.io_manager import ParquetIOManager, PathsResource
from pipelines.home.paths import ProjectPaths
from pipelines.ingest.common import IngestResult, empty_quarantine
from pipelines.sources.fetch import MANIFEST, FetchError, Status, fetch
from pipelines.sources.manifest import SOURCES_BY_NAME

RAW_TRACES = SOURCES_BY_NAME["itp/raw-traces.tar.gz"]


def member_bytes(archive: Path, name: str) -> bytes:
    with tarfile.open(archive) as tar:
        for member in tar:
            if member.isfile() and Path(member.name).name == name:
                extracted = tar.extractfile(member)
                assert extracted is not None
                return extracted.read()
    raise KeyError(name)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def unpacked(mirror: Path, tmp_path: Path) -> tuple[ProjectPaths, Path]:
    paths = ProjectPaths(tmp_path)
    assert fetch(RAW_TRACES, paths, mirror, download=False).status is Status.MIRROR
    return paths, paths.raw / "itp/raw-traces"


def test_unpack_records_every_members_hash(unpacked: tuple[ProjectPaths, Path], mirror: Path) -> None:
    _, folder = unpacked
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["archive_sha256"] == RAW_TRACES.sha256
    assert sorted(manifest["members"]) == ["LICENSE", *[f"cluster{i:02d}.csv" for i in range(1, 11)]]
    original = member_bytes(mirror / RAW_TRACES.name, "cluster04.csv")
    assert manifest["members"]["cluster04.csv"] == {"sha256": sha(original), "size": len(original)}


def test_an_edited_member_is_found_reported_and_restored_even_with_size_and_mtime_kept(
    unpacked: tuple[ProjectPaths, Path], mirror: Path
) -> None:
    paths, folder = unpacked
    member = folder / "cluster01.csv"
    original = member.read_bytes()
    stat = member.stat()
    edited = original.replace(b",2429,", b",9999,", 1)  # same length: size and mtime cannot tell
    assert edited != original and len(edited) == len(original)
    member.write_bytes(edited)
    os.utime(member, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    heard: list[str] = []
    result = fetch(RAW_TRACES, paths, mirror, download=False, warn=heard.append)
    assert result.status is Status.REPAIRED and member.read_bytes() == original
    assert heard == list(result.notes) == [
        f"itp/raw-traces/cluster01.csv: sha256 {sha(edited)} instead of {sha(original)} recorded at unpack; "
        f"restored from itp/raw-traces.tar.gz (sha256 {RAW_TRACES.sha256})"
    ]
    assert fetch(RAW_TRACES, paths, mirror, download=False).status is Status.CACHED


def test_a_deleted_member_is_restored_not_cached(unpacked: tuple[ProjectPaths, Path], tmp_path: Path) -> None:
    paths, folder = unpacked
    original = (folder / "cluster07.csv").read_bytes()
    (folder / "cluster07.csv").unlink()
    # no mirror now: the verified archive in raw/ is enough
    result = fetch(RAW_TRACES, paths, tmp_path / "no-mirror", download=False)
    assert result.status is Status.REPAIRED and (folder / "cluster07.csv").read_bytes() == original
    assert result.notes[0].startswith("itp/raw-traces/cluster07.csv: missing instead of ")


def test_a_hand_edited_pinned_file_is_reported_with_both_hashes_before_it_is_replaced(mirror: Path, tmp_path: Path) -> None:
    source = SOURCES_BY_NAME["zeus/summary_power_v100.csv"]
    paths = ProjectPaths(tmp_path)
    fetch(source, paths, mirror, download=False)
    target = source.raw_path(paths)
    edited = target.read_bytes().replace(b"cifar100", b"cifar101", 1)
    target.write_bytes(edited)
    seen: list[tuple[str, bytes]] = []
    result = fetch(source, paths, mirror, download=False, warn=lambda m: seen.append((m, target.read_bytes())))
    assert result.status is Status.MIRROR and target.read_bytes() == (mirror / source.name).read_bytes()
    [(message, at_warning)] = seen
    assert at_warning == edited  # warned while the edited file was still in place
    assert message == (
        f"zeus/summary_power_v100.csv: {target} has sha256 {sha(edited)}, not the pinned {source.sha256} "
        f"(edited by hand?); replacing it with a verified copy from {mirror / source.name}"
    )


def test_with_no_mirror_the_error_is_the_sha256_mismatch(mirror: Path, tmp_path: Path) -> None:
    source = SOURCES_BY_NAME["zeus/summary_train.csv"]
    paths = ProjectPaths(tmp_path)
    fetch(source, paths, mirror, download=False)
    target = source.raw_path(paths)
    edited = target.read_bytes() + b"extra\n"
    target.write_bytes(edited)
    with pytest.raises(FetchError) as info:
        fetch(source, paths, None, download=False, warn=lambda m: None)
    message = str(info.value)
    assert message.startswith(f"zeus/summary_train.csv: sha256 mismatch: {target} has {sha(edited)}, the pin is {source.sha256}")
    assert "no origin" not in message and target.read_bytes() == edited  # left as it was

    # A mirror whose copy fails verification replaces nothing, and nothing says it would.
    bad_mirror = tmp_path / "bad_mirror"
    (bad_mirror / "zeus").mkdir(parents=True)
    (bad_mirror / source.name).write_bytes(b"not the trace\n")
    seen: list[str] = []
    with pytest.raises(FetchError, match=f"sha256 mismatch: {target} has {sha(edited)}.*{bad_mirror / source.name}"):
        fetch(source, paths, bad_mirror, download=False, warn=seen.append)
    assert seen == [] and target.read_bytes() == edited


# ---------------------------------------------------------------------------------------------
# in Dagster: verified before every ingest; the checks that guard downstream block it


def _defs_assets(*names: str) -> list[dg.AssetsDefinition]:
    from pipelines.defs.itp import assets

    return [getattr(assets, n) for n in names]


def _materialize(root: Path, assets: list, raise_on_error: bool = True) -> dg.ExecuteInProcessResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dg.materialize(
            assets,
            resources={"io_manager": ParquetIOManager(root=str(root)), "paths": PathsResource(root=str(root))},
            raise_on_error=raise_on_error,
        )


def _downstream_of_itp() -> dg.AssetsDefinition:
    @dg.asset(deps=["itp_jobs"], name="after_itp")
    def after_itp() -> dg.MaterializeResult:
        return dg.MaterializeResult()

    return after_itp


def test_ingest_verifies_members_before_reading(mirror: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACES_MIRROR", str(mirror))
    raw, ingest = _defs_assets("raw_itp_traces", "itp_jobs")
    _materialize(tmp_path, [raw])
    member = tmp_path / "raw/itp/raw-traces/cluster01.csv"
    member.write_bytes(member.read_bytes().replace(b",2429,", b",123456789,", 1))  # the edit
    result = _materialize(tmp_path, [ingest])  # the ingest alone, raw not re-run
    itp = pl.read_parquet(tmp_path / "assets/itp_jobs.parquet")
    assert itp.height == 69_351 and 123456789 not in itp["duration"].to_list()
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks["published_totals"] and checks["records_accounted"]
    restored = result.asset_materializations_for_node("ingest_itp_jobs")[0].metadata["replaced_or_restored_before_reading"].value
    assert len(restored) == 1 and restored[0].startswith("itp/raw-traces/cluster01.csv: sha256 ")


def test_failed_published_totals_block_downstream(mirror: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipelines.ingest import itp

    monkeypatch.setenv("TRACES_MIRROR", str(mirror))
    real = itp.read_itp

    def one_job_short(folder: Path) -> IngestResult:
        result = real(folder)
        return IngestResult(result.table.slice(1), result.quarantine, result.lines_in - 1, result.files)

    monkeypatch.setattr(itp, "read_itp", one_job_short)
    raw, ingest = _defs_assets("raw_itp_traces", "itp_jobs")
    result = _materialize(tmp_path, [raw, ingest, _downstream_of_itp()], raise_on_error=False)
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks == {"published_totals": False, "quarantine_share": True, "records_accounted": True, "no_rows_quarantined": True}
    assert not result.success
    assert [e.step_key for e in result.get_step_success_events()] == ["raw_itp_traces"]  # after_itp never ran


def test_unaccounted_records_block_downstream(tmp_path: Path) -> None:
    from pipelines.defs.itp.assets import raw_itp_traces
    from pipelines.defs.shared.ingest_assets import ingest_asset
    from pipelines.ingest.itp import ITP_SPEC

    rows = pl.DataFrame({"cluster": ["c"], "job_id": ["a"], "submission_time": [1], "duration": [2], "num_gpu": [1]})
    lost = ingest_asset(
        ITP_SPEC, description="a reader that loses a record", raw=raw_itp_traces,
        read=lambda p: IngestResult(rows, empty_quarantine(), lines_in=2, files=["x.csv"]),
    )  # fmt: skip
    result = _materialize(tmp_path, [lost, _downstream_of_itp()], raise_on_error=False)
    evaluation = {e.check_name: e for e in result.get_asset_check_evaluations()}["records_accounted"]
    assert not evaluation.passed and evaluation.description == "2 records in 1 files; 1 in the table, 0 quarantined (+1 unaccounted)"
    assert not result.success and result.get_step_success_events() == []
