"""One CSV of ``raw/measured`` that cannot be read at all is one quarantine row, and the folder's other files are read
(issue 54 item 1: one bad file made every whatif fail with its error); a file given by name (``--profiles``) still
raises that row's one line."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from pipelines.clusters.profiles import with_measured
from pipelines.ingest.common import IngestError
from pipelines.ingest.simulator_inputs import read_trace_dir
from pipelines.ingest.zeus import read_measured

H100 = Path(__file__).parents[1] / "clusters" / "h100_profile.csv"


def _rows(path: Path) -> int:
    """The data rows of a measured profile, read with the csv module (the fixture has no time-only row)."""
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert all(row["method"] != "none" for row in rows)
    return len(rows)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    measured = tmp_path / "measured"
    measured.mkdir()
    (measured / "h100.csv").write_bytes(H100.read_bytes())
    (measured / "bad.csv").write_text("foo,bar\n1,2\n")
    return measured


def test_the_pipeline_quarantines_the_bad_file_and_reads_the_others(folder: Path) -> None:
    result = read_measured(folder)
    assert result.table.height == _rows(H100) == 50
    assert set(result.table["gpu"]) == {"h100"}
    assert result.quarantine.select("source_file", "line", "column", "raw").rows() == [("measured/bad.csv", 1, "dataset", "foo,bar")]
    assert result.quarantine["reason"][0] == "missing column (header has ['foo', 'bar']); unexpected columns ['foo', 'bar']"


def test_whatif_s_folder_leaves_it_out_with_one_note_and_a_named_file_still_fails(folder: Path, mirror: Path) -> None:
    traces = read_trace_dir(mirror / "zeus")
    profiles = with_measured(traces, [], folder, source_name="measured")
    assert "h100" in profiles.names()
    notes = [note for note in profiles.notes if "bad.csv" in note]
    assert notes == ["measured/bad.csv:1: missing column (header has ['foo', 'bar']); unexpected columns ['foo', 'bar'] (left out)"]
    with pytest.raises(IngestError) as caught:
        with_measured(traces, [folder / "bad.csv"], None)
    assert str(caught.value) == (f"{folder / 'bad.csv'}:1: column 'dataset': missing column (header has ['foo', 'bar']); "
                                 "unexpected columns ['foo', 'bar']")


def test_a_file_over_the_size_bound_is_refused_by_its_size_without_being_read(folder: Path) -> None:
    """17 MiB (sparse), over the 16 MiB bound on a profile file: one row, no raw text read back beyond the first MiB."""
    with (folder / "huge.csv").open("wb") as f:
        f.truncate(17 << 20)
    result = read_measured(folder)
    assert result.table.height == 50
    by_file = {row["source_file"]: row for row in result.quarantine.iter_rows(named=True)}
    assert by_file["measured/huge.csv"]["reason"] == "larger than 16,777,216 bytes (the bound on a profile file)"
    assert by_file["measured/huge.csv"]["line"] == 1
