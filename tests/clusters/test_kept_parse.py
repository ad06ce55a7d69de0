"""whatif's kept parse (issue 56): the export parsed once into partitions by recurring group, reused with other knobs,
the report the same from it as from a fresh read, and the cache bounded, listed and cleared."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipelines.clusters import kept, tracefiles, whatif
from pipelines.clusters.profiles import Profiles, profiles_of
from pipelines.home import cache
from pipelines.ingest.own_cluster import OwnTraceResult
from pipelines.ingest.simulator_inputs import read_trace_dir
from pipelines.ingest.text_reader import ReadLimits
from pipelines.scaleout.schedulers import connect
from tests.support.cli import run_main
from tests.support.sacct_export import write_export

TZ = "America/New_York"


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("kept") / "lab.sacct"
    truth = write_export(path, 1200, seed=11, timezone=TZ, malformed=3)
    return path, truth


def how(path: Path, timezone: str = TZ, limits: ReadLimits | None = None) -> kept.Reading:
    return kept.reading(whatif.trace_name_for(path), "sacct", timezone, None, "|", whatif.REPORT_COLUMNS, limits)


def read(path: Path, root: Path | None, partitions: int | None = None, timezone: str = TZ):
    return kept.read(path, how(path, timezone), source_file=str(path), root=root, partitions=partitions)


def test_the_partitions_hold_every_row_once_and_no_group_in_two(export, tmp_path: Path) -> None:
    path, truth = export
    fresh, line = read(path, tmp_path, partitions=4)
    assert line is not None and "parse kept" in line
    (folder,) = (tmp_path / "whatif").iterdir()
    entry = cache.load(folder)
    assert entry is not None and entry.meta["partitions"] == 4
    parts = [kept.partition(entry, i) for i in range(4)]
    assert sum(p.height for p in parts) == truth.allocations == fresh.counts.allocations  # malformed lines are quarantined, not counted
    assert all(p.height for p in parts)  # 1,200 allocations over 4 partitions: none empty
    # a named job's group is user/name/GPUs (mapping.own_group): each such triple lies in one partition only
    named = [set(p.filter(pl.col("user").is_not_null() & pl.col("job_name").is_not_null())
                 .select(pl.format("{}/{}/{}", "user", "job_name", "num_gpus")).to_series().to_list()) for p in parts]
    for i in range(4):
        for j in range(i + 1, 4):
            assert not named[i] & named[j]
    assert sum(len(n) for n in named) > 20
    # every line number once, and in file order within a partition
    lines = pl.concat([p["line"] for p in parts])
    assert lines.n_unique() == lines.len() and all(p["line"].is_sorted() for p in parts)


def test_a_second_read_loads_the_same_table_without_parsing(export, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, _ = export
    fresh, _ = read(path, tmp_path, partitions=3)
    monkeypatch.setattr(tracefiles, "read_trace", lambda *a, **k: pytest.fail("parsed again"))
    again, line = read(path, tmp_path, partitions=3)
    assert line is not None and line.startswith("parse reused: kept ") and "3 partitions" in line
    assert_frame_equal(again.table, fresh.table)
    assert_frame_equal(again.quarantine, fresh.quarantine)
    assert again.quarantine.height == 3
    assert again.counts == fresh.counts and (again.trace, again.format, again.timezone) == (fresh.trace, fresh.format, fresh.timezone)


@pytest.mark.parametrize("damage", ["rows.parquet", "meta.json"])
def test_a_kept_parse_damaged_on_disk_is_dropped_and_the_file_read_afresh(export, tmp_path: Path, damage: str) -> None:
    """A kept file cut short or edited (here: replaced by text) is never a traceback: the entry is dropped, the export read
    again and kept anew, and the line says so."""
    path, _ = export
    fresh, _ = read(path, tmp_path)
    (folder,) = (tmp_path / "whatif").iterdir()
    (folder / damage).write_text("not what was kept\n")
    again, line = read(path, tmp_path)
    assert line is not None and line.startswith("parse kept in ")
    assert ("the parse kept there was unreadable" in line) == (damage == "rows.parquet")  # an unreadable meta.json: no entry
    assert_frame_equal(again.table, fresh.table)
    assert read(path, tmp_path)[1].startswith("parse reused: ")  # kept anew, whole


def test_another_reading_or_other_bytes_is_another_entry(export, tmp_path: Path) -> None:
    path, _ = export
    read(path, tmp_path)
    utc, line = read(path, tmp_path, timezone="UTC")
    assert line is not None and "parse kept" in line
    changed = tmp_path / "lab.sacct"
    changed.write_bytes(path.read_bytes() + b"\n")
    _, line = read(changed, tmp_path)
    assert line is not None and "parse kept" in line
    assert len(list((tmp_path / "whatif").iterdir())) == 3
    assert utc.timezone == "UTC"


def test_a_kept_parse_still_meets_the_row_bound(export, tmp_path: Path) -> None:
    path, truth = export
    read(path, tmp_path)
    with pytest.raises(ValueError, match=f"more than {truth.lines - 1:,} lines"):
        kept.read(path, how(path, limits=ReadLimits(rows=truth.lines - 1)), source_file=str(path), root=tmp_path)


def test_a_fifo_is_read_as_it_streams_and_not_kept(export, tmp_path: Path) -> None:
    """A path that is not a regular file cannot be hashed before its read (/dev/zero never ends): read once, kept nowhere."""
    path, truth = export
    fifo = tmp_path / "export.sacct"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(path.read_bytes()))
    writer.start()
    try:
        result, line = kept.read(fifo, how(fifo), source_file=str(fifo), root=tmp_path / "cache")
    finally:
        writer.join(timeout=30)
    assert line is None and not (tmp_path / "cache").exists()
    assert result.counts.lines == truth.lines and result.counts.allocations == truth.allocations


def test_no_cache_keeps_nothing(export, tmp_path: Path) -> None:
    path, truth = export
    result, line = read(path, None)
    assert line is None and not (tmp_path / "whatif").exists()
    assert result.counts.lines == truth.lines


def fresh_and_kept(path: Path, root: Path, mirror: Path) -> tuple[Profiles, whatif.Options, OwnTraceResult, OwnTraceResult, str | None]:
    """What the report tests compare: the published profiles, 3 draws, the export read afresh, and its parse kept in 5
    partitions then loaded (with the line that said so)."""
    fresh, _ = read(path, None)
    read(path, root, partitions=5)
    loaded, line = read(path, root, partitions=5)
    return profiles_of(read_trace_dir(mirror / "zeus")), whatif.Options(samples=3, timezone_source="given"), fresh, loaded, line


def test_the_report_from_partitions_is_the_fresh_reads(export, tmp_path: Path, mirror: Path) -> None:
    """Item 4 on a small export: the report (JSON) of a kept parse in 5 partitions is the fresh read's, key for key."""
    profiles, options, fresh, loaded, line = fresh_and_kept(export[0], tmp_path, mirror)
    assert line is not None and "5 partitions" in line
    one, _ = whatif.run(fresh, profiles, options)
    two, _ = whatif.run(loaded, profiles, options)
    assert json.dumps(one, sort_keys=True, default=str) == json.dumps(two, sort_keys=True, default=str)


@pytest.mark.slow
def test_the_report_from_partitions_on_a_local_cluster_is_the_fresh_reads_in_process(export, tmp_path: Path, mirror: Path) -> None:
    """Item 4 on a LocalCluster: the kept parse in 5 partitions, its draws on the cluster's workers, gives the in-process
    report of a fresh read, but the runner line."""
    profiles, options, fresh, loaded, line = fresh_and_kept(export[0], tmp_path, mirror)
    assert line is not None and line.startswith("parse reused: ")
    here, _ = whatif.run(fresh, profiles, options)
    with connect("local", workers=1) as runner:
        there, _ = whatif.run(loaded, profiles, options, runner)
    assert there["runner"] != here["runner"] and "local cluster" in there["runner"]
    assert json.dumps({**there, "runner": ""}, sort_keys=True, default=str) == json.dumps({**here, "runner": ""}, sort_keys=True, default=str)


def test_the_bound_drops_the_least_recently_used_first(tmp_path: Path) -> None:
    def entry(key: str, size: int, used_s: float) -> Path:
        with cache.publish(tmp_path / "whatif" / key, {"key": key}) as tmp:
            (tmp / "data").write_bytes(b"x" * size)
        os.utime(tmp_path / "whatif" / key / cache.META, (used_s, used_s))
        return tmp_path / "whatif" / key

    old, mid, new = entry("a", 1000, 1_000), entry("b", 1000, 2_000), entry("c", 1000, 3_000)
    meta = len((old / cache.META).read_bytes())
    dropped = cache.bound(tmp_path, 2 * (1000 + meta), keep=new)
    assert [e.key for e in dropped] == ["a"] and not old.exists() and mid.exists() and new.exists()
    # the one just used is kept even when it alone is over the bound
    assert [e.key for e in cache.bound(tmp_path, 0, keep=new)] == ["b"] and new.exists()


def test_a_failed_write_leaves_no_entry(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), cache.publish(tmp_path / "whatif" / "k", {}) as tmp:
        (tmp / "part").write_bytes(b"half")
        raise RuntimeError("killed mid-write")
    assert list((tmp_path / "whatif").iterdir()) == []


def test_the_bound_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache.MAX_BYTES_ENV, "12345")
    assert cache.max_bytes() == 12345
    monkeypatch.setenv(cache.MAX_BYTES_ENV, "a lot")
    with pytest.raises(ValueError, match=r"\$GPU_ENERGY_CACHE_BYTES='a lot': give a number of bytes"):
        cache.max_bytes()
    monkeypatch.delenv(cache.MAX_BYTES_ENV)
    assert cache.max_bytes() == cache.DEFAULT_MAX_BYTES


def test_whatif_says_it_reused_the_parse_and_cache_lists_and_clears(export, mirror: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = export
    args = ("whatif", str(path), "--timezone", TZ, "--trace-dir", str(mirror / "zeus"), "--json", "--samples", "1", "--scheduler", "none")
    first = run_main(capsys, *args)
    second = run_main(capsys, *args, "--eta-knob", "0.3")
    third = run_main(capsys, *args)
    assert first.returncode == second.returncode == third.returncode == 0, first.stderr + second.stderr
    assert "[whatif] parse kept in " in first.stderr
    assert [line for line in second.stderr.splitlines() if "[whatif] parse" in line][0].startswith("[whatif] parse reused: kept ")
    assert json.loads(second.stdout)["eta"] == 0.3
    assert third.stdout == first.stdout  # the same knobs: the same report from the kept parse
    listed = run_main(capsys, "cache", "list", "--json")
    (entry,) = [json.loads(line) for line in listed.stdout.splitlines()]
    assert entry["kind"] == "whatif" and entry["source_file"] == str(path) and entry["bytes"] > 0
    cleared = run_main(capsys, "cache", "clear")
    assert cleared.returncode == 0 and "removed 1 entry (" in cleared.stderr
    assert run_main(capsys, "cache", "list", "--json").stdout == ""
    fresh = run_main(capsys, *args, "--no-cache")
    assert fresh.stdout == first.stdout and "[whatif] parse" not in fresh.stderr
    assert run_main(capsys, "cache", "list", "--json").stdout == ""
