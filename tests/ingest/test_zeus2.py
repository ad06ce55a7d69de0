"""The Zeus² profile reader: the four published files as a typed table, and clear errors for malformed JSON."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from pipelines.ingest.zeus2 import (
    PROFILE_FILES,
    SCHEMA,
    ProfileFormatError,
    profile_name,
    read_profile,
    read_profile_folder,
    read_profiles,
)


@pytest.fixture(scope="module")
def profiles(mirror: Path) -> pl.DataFrame:
    return read_profile_folder(mirror / "zeus2")


def test_the_four_files_as_one_table(profiles: pl.DataFrame, mirror: Path) -> None:
    assert profiles.schema == pl.Schema(SCHEMA)
    counts = profiles.group_by("workload", "gpu", maintain_order=True).len().rows()
    # cifar: 6 batch sizes (32..1024); imagenet: 5 (32..512); A10 at 5 limits, T4 at 3
    assert counts == [("cifar100", "a10", 30), ("cifar100", "t4", 18), ("imagenet", "a10", 25), ("imagenet", "t4", 15)]
    # every entry of every file is a row, with its numbers unchanged
    for name in PROFILE_FILES:
        raw = json.loads((mirror / "zeus2" / name).read_text())
        expected = [(int(b), e["power_limit"], e["energy"], e["time"]) for b, entries in raw.items() for e in entries]
        workload, gpu = profile_name(name)
        got = profiles.filter((pl.col("workload") == workload) & (pl.col("gpu") == gpu))
        assert got.select("batch_size", "power_limit", "energy_j", "time_s").rows() == expected


def test_file_order_is_kept(profiles: pl.DataFrame) -> None:
    a10 = profiles.filter((pl.col("gpu") == "a10") & (pl.col("workload") == "cifar100"))
    assert a10["power_limit"].unique(maintain_order=True).to_list() == [300, 250, 200, 150, 100]
    assert a10.row(0) == ("a10", "cifar100", 32, 300, 23.417000000015832, 0.2491474151611328)
    t4 = profiles.filter((pl.col("gpu") == "t4") & (pl.col("workload") == "imagenet"))
    assert t4["power_limit"].unique(maintain_order=True).to_list() == [70, 65, 60]
    assert t4["batch_size"].unique(maintain_order=True).to_list() == [32, 64, 128, 256, 512]


@pytest.mark.parametrize(
    ("name", "expected"),
    [("cifar_a10.json", ("cifar100", "a10")), ("imagenet_T4.json", ("imagenet", "t4")), ("squad_v100.json", ("squad", "v100"))],
)
def test_profile_name(name: str, expected: tuple[str, str]) -> None:
    assert profile_name(Path("/x") / name) == expected


GOOD_ENTRY = '{"power_limit": 300, "energy": 1.5, "time": 0.25}'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '{\n  "32": [' + GOOD_ENTRY + '],\n  "64": [' + GOOD_ENTRY + ", " + GOOD_ENTRY.replace("300", "250")
            + ', {"power_limit": 200, "energy": "abc", "time": 1}]\n}',
            'cifar_a10.json:3:{}: key "64"[2].energy: expected a number, got "abc"',
        ),
        ('{"32": [' + GOOD_ENTRY, 'cifar_a10.json:1:58: key "32": invalid JSON: expected \',\' or \']\', found end of file'),
        ('{"32": [{"power_limit": 300, "energy": NaN, "time": 1}]}', 'key "32"[0].energy: invalid JSON: NaN is not a JSON number'),
        ('{"32": [' + GOOD_ENTRY + '],\n "32": [' + GOOD_ENTRY + "]}", 'cifar_a10.json:2:2: key "32": duplicate key'),
        ('{"32": [' + GOOD_ENTRY + '],\n "3x2": []}', 'cifar_a10.json:2:2: key "3x2": batch size must be a positive integer, got "3x2"'),
        ('{"0": [' + GOOD_ENTRY + "]}", 'key "0": batch size must be a positive integer, got "0"'),
        ('{"32": [{"power_limit": 300, "time": 1}]}', 'key "32"[0]: missing energy'),
        ('{"32": [{"power_limit": true, "energy": 1, "time": 1}]}', 'key "32"[0].power_limit: expected a number, got true'),
        ('{"32": [{"power_limit": 300.5, "energy": 1, "time": 1}]}', "power limit must be a whole number of watts, got 300.5"),
        ('{"32": [{"power_limit": 300, "energy": 1, "time": 0}]}', 'key "32"[0].time: expected a positive finite number, got 0'),
        ('{"32": [{"power_limit": 300, "energy": -1, "time": 1}]}', 'key "32"[0].energy: expected a non-negative finite number, got -1'),
        ('{"32": [' + GOOD_ENTRY + ", " + GOOD_ENTRY + "]}", 'key "32"[1].power_limit: power limit 300 W appears twice for batch size 32'),
        ('{"32": {"power_limit": 300}}', 'key "32": expected a non-empty list'),
        ('{"32": [7]}', 'key "32"[0]: expected an object with power_limit, energy, time, got 7'),
        ("[]", "cifar_a10.json:1:1: expected a non-empty object"),
        ("", "cifar_a10.json:1:1: the file is empty"),
        ('{"32": [' + GOOD_ENTRY + "]} []", "cifar_a10.json:1:61: invalid JSON: extra data after the top-level object"),
        ("[" * 50, "cifar_a10.json: JSON nested 50 levels deep, more than 32 (the bound on JSON depth)"),
    ],
)
def test_malformed_profiles_name_file_position_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "cifar_a10.json"
    path.write_text(text)
    if "{}" in message:  # the column of the bad value, counted from the text
        message = message.format(text.splitlines()[2].index('"abc"') + 1)
    with pytest.raises(ProfileFormatError) as caught:
        read_profile(path)
    assert message in str(caught.value)
    assert str(caught.value).startswith("cifar_a10.json:")
    assert isinstance(caught.value, ValueError)


def test_position_points_at_the_bad_value(tmp_path: Path) -> None:
    text = '{\n "32": [\n  {"power_limit": 300, "energy": 1, "time": "slow"}\n ]\n}'
    path = tmp_path / "imagenet_t4.json"
    path.write_text(text)
    with pytest.raises(ProfileFormatError) as caught:
        read_profile(path)
    err = caught.value
    assert (err.line, err.path) == (3, ("32", 0, "time"))
    assert text.splitlines()[err.line - 1][err.column - 1 :].startswith('"slow"')


def test_unreadable_and_misnamed_files(tmp_path: Path) -> None:
    with pytest.raises(ProfileFormatError, match=r"^cifar_a10.json: unreadable file: \[Errno 2\]"):
        read_profile(tmp_path / "cifar_a10.json")
    (tmp_path / "profile.json").write_text("{}")
    with pytest.raises(ProfileFormatError, match="file name is not <workload>_<gpu>.json"):
        read_profile(tmp_path / "profile.json")


def test_explicit_names_and_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "anything.json"
    path.write_text('{"32": [' + GOOD_ENTRY + "]}")
    frame = read_profile(path, workload="cifar100", gpu="a10")
    assert frame.rows() == [("a10", "cifar100", 32, 300, 1.5, 0.25)]
    (tmp_path / "cifar_a10.json").write_text('{"32": [' + GOOD_ENTRY + "]}")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "cifar_a10.json").write_text('{"32": [' + GOOD_ENTRY + "]}")
    with pytest.raises(ProfileFormatError, match="a second profile for workload 'cifar100' on GPU 'a10'"):
        read_profiles([tmp_path / "cifar_a10.json", tmp_path / "sub" / "cifar_a10.json"])


def test_a_profile_over_the_json_bound_is_one_line_and_one_quarantine_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Zeus² profiles are read under the one bound on a JSON document (``bounded_json``): a larger file is refused by its
    size before a byte is read, and the folder's ingest keeps it as one quarantine row with its first line."""
    from pipelines.ingest import bounded_json
    from pipelines.ingest.zeus2 import ingest_profile_folder

    monkeypatch.setattr(bounded_json, "MAX_JSON_BYTES", 1000)
    text = '{"32": [' + ", ".join([GOOD_ENTRY.replace("300", str(100 + i)) for i in range(20)]) + "]}"
    assert len(text) > 1000
    (tmp_path / "cifar_a10.json").write_text(text)
    with pytest.raises(ProfileFormatError) as caught:
        read_profile(tmp_path / "cifar_a10.json")
    assert str(caught.value) == "cifar_a10.json: larger than 1,000 bytes (the bound on a Zeus² profile)"
    result = ingest_profile_folder(tmp_path, ["cifar_a10.json"])
    assert result.table.height == 0
    row = result.quarantine.row(0, named=True)
    assert (row["source_file"], row["line"], row["reason"]) == (f"{tmp_path.name}/cifar_a10.json", 1,
                                                                 "larger than 1,000 bytes (the bound on a Zeus² profile)")
    assert row["raw"] == text[:2000]
