"""Limits: sane bounds per column, length limits on text, a size cap on decompression; Zeus² profiles
quarantined like the CSV sources."""

from __future__ import annotations

import json
import lzma
from pathlib import Path

import pytest

from pipelines.ingest.common import IngestError
from pipelines.ingest.simulator_inputs import read_table_file
from pipelines.ingest.text_reader import read_bytes
from pipelines.ingest.zeus import read_measured
from pipelines.ingest.zeus2 import PROFILE_FILES, ingest_profile_folder
from pipelines.zeus.traces import TraceError

POWER_HEADER = "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power"


def test_measured_profiles_reject_infinite_values_unknown_datasets_and_impossible_power(tmp_path: Path) -> None:
    folder = tmp_path / "measured"
    folder.mkdir()
    (folder / "h100.csv").write_text("\n".join([
        POWER_HEADER,
        "cifar100,shufflenetv2,32,adadelta,300,10.0,inf",       # 2
        "cifar100,shufflenetv2,64,adadelta,300,1e400,200",      # 3: overflows to inf
        "cifar100,shufflenetv2,128,adadelta,300,10.0,200",      # 4: fine
        "mnist,lenet,128,adadelta,300,10.0,200",                # 5: not a Zeus workload
        "cifar100,shufflenetv2,256,adadelta,300000,10.0,200",   # 6: a 300 kW power limit
        "cifar100,shufflenetv2,512,adadelta,300,10.0,25000",    # 7: 25 kW drawn by one GPU
        "cifar100,shufflenetv2,1024,adadelta,300,1e9,200",      # 8: a 31-year epoch
    ]) + "\n")  # fmt: skip
    result = read_measured(folder)
    assert result.table["batch_size"].to_list() == [128]
    reasons = dict(zip(result.quarantine["line"], result.quarantine["reason"], strict=True))
    assert reasons == {
        2: "average_power: must be finite (value inf)",
        3: "time_per_epoch: must be finite (value inf)",
        5: "dataset: must be one of cifar100, imagenet, squad, librispeech, movielens-1m, sentiment140 (value mnist)",
        6: "power_limit: must be <= 2000 (value 300000)",
        7: "average_power: must be <= 2000 (value 25000.0)",
        8: "time_per_epoch: must be <= 10000000.0 (value 1000000000.0)",
    }


def test_itp_rows_beyond_sane_bounds_are_quarantined(tmp_path: Path) -> None:
    from pipelines.ingest.common import ingest_bytes
    from pipelines.ingest.itp import ITP_SPEC

    data = b"job_id,submission_time,duration,num_gpu\na,1,2,3\nb,1,2,1000000\nc,1,99999999999,1\n"
    result = ingest_bytes(data, ITP_SPEC, source_file="cluster01.csv", extras={"cluster": "cluster01"})
    assert result.table["job_id"].to_list() == ["a"]
    assert result.quarantine["reason"].to_list() == [
        "num_gpu: must be <= 100000 (value 1000000)",
        "duration: must be <= 31622400 (value 99999999999)",
    ]


def test_xz_decompression_is_capped(tmp_path: Path) -> None:
    path = tmp_path / "alibaba_groups.csv.xz"
    path.write_bytes(lzma.compress(b"group,start_time,end_time,dataset,runtime_ratio\n" + b"0" * 20_000_000))
    assert path.stat().st_size < 10_000  # a bomb: kilobytes that expand to 20 MB
    with pytest.raises(IngestError, match=r"^alibaba_groups\.csv\.xz: decompresses to more than 1,000,000 bytes \(the cap"):
        read_bytes(path, path.name, max_bytes=1_000_000)
    assert len(read_bytes(path, path.name, max_bytes=30_000_000)) == 48 + 20_000_000
    two = tmp_path / "two.csv.xz"  # concatenated streams are one file (as lzma.decompress reads them)
    two.write_bytes(lzma.compress(b"a,b\n") + lzma.compress(b"1,2\n"))
    assert read_bytes(two, two.name) == b"a,b\n1,2\n"


def test_simulate_reads_group_files_through_the_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipelines.ingest import text_reader

    path = tmp_path / "groups.csv.xz"
    path.write_bytes(lzma.compress(b"group,start_time,end_time,dataset,runtime_ratio\n" + b"g,1,2,squad,1.0\n" * 100_000))
    monkeypatch.setattr(text_reader, "MAX_TABLE_BYTES", 10_000)
    with pytest.raises(TraceError) as caught:
        read_table_file(path)
    assert str(caught.value) == (f"{path}: decompresses to more than 10,000 bytes (the cap on decompressed size; the bound on a "
                                 "table read whole); refusing it as a possible decompression bomb")
    plain = tmp_path / "groups.csv"  # a plain file over the bound: refused by its size before a byte is read
    plain.write_bytes(b"group,start_time,end_time,dataset,runtime_ratio\n" + b"g,1,2,squad,1.0\n" * 1000)
    with pytest.raises(TraceError) as caught:
        read_table_file(plain)
    assert str(caught.value) == f"{plain}: larger than 10,000 bytes (the bound on a table read whole)"


def test_a_malformed_zeus2_profile_is_quarantined_and_the_others_kept(mirror: Path, tmp_path: Path) -> None:
    folder = tmp_path / "zeus2"
    folder.mkdir()
    for name in PROFILE_FILES:
        (folder / name).write_bytes((mirror / "zeus2" / name).read_bytes())
    doc = json.loads((folder / "cifar_t4.json").read_text())
    doc[next(iter(doc))][1]["energy"] = -5
    (folder / "cifar_t4.json").write_text(json.dumps(doc, indent=1))
    result = ingest_profile_folder(folder)
    assert set(result.table.select("workload", "gpu").unique().iter_rows()) == {("cifar100", "a10"), ("imagenet", "a10"), ("imagenet", "t4")}
    q = result.quarantine.row(0, named=True)
    assert result.quarantine.height == 1 and (q["source_file"], q["column"]) == ("zeus2/cifar_t4.json", "energy_j")
    assert q["reason"] == f'key "{next(iter(doc))}"[1].energy: expected a non-negative finite number, got -5'
    assert q["raw"].strip() == '"energy": -5,' and q["line"] > 1
    assert result.unaccounted == 0 and result.lines_in == 30 + 25 + 15 + 1
