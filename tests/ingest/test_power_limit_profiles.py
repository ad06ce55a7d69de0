"""Zeus's profile files (ZeusMonitor logs, saved JSON) and measured CSVs read as power-limit profiles; bad ones named by file, line, field."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pipelines.ingest.common import IngestError
from pipelines.ingest.power_limit_profiles import profile_format, read_profile, read_zeus_json, read_zeus_log
from pipelines.measure.harness import write_profile
from pipelines.zeus.limit_selectors import Measurement
from tests.support.measured_profiles import GPU, profile_rows

HEADER = "start_time,window_name,elapsed_time,gpu0_energy,gpu1_energy\n"
GOOD_LOG = (HEADER
            + "10.0,__GlobalPowerLimitOptimizer_300,33.5,4000.25,4100.5\n"
            + "50.0,epoch_0,100.0,9000.0,9100.0\n"
            + "60.0,__GlobalPowerLimitOptimizer_275,34.0,3900.0,0\n")


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_log_sums_the_gpus_and_skips_other_windows(tmp_path: Path) -> None:
    profile = read_profile(write(tmp_path, "a40.csv", GOOD_LOG))
    assert profile.format == "zeus-log" and profile.world_size == 2
    assert profile.measurements == (Measurement(300, 8100.75, 33.5), Measurement(275, 3900.0, 34.0))


@pytest.mark.parametrize(("text", "where", "message"), [
    (HEADER.replace("window_name", "window") + "1,__GlobalPowerLimitOptimizer_300,3,4,5\n", ":1: column 'window_name'", "no 'window_name'"),
    (HEADER + "1,,3,4,5\n1,__GlobalPowerLimitOptimizer_275,3,4,5\n", ":2: column 'window_name'", "missing window name"),
    (HEADER + "1,__GlobalPowerLimitOptimizer_300,3,4,5\n1,__GlobalPowerLimitOptimizer_275,3,n/a,5\n", ":3: column 'gpu0_energy'",
     "energy is not a number: 'n/a'"),
    (HEADER + "1,__GlobalPowerLimitOptimizer_300,3,4,5\n1,__GlobalPowerLimitOptimizer_275,-3,4,5\n", ":3: column 'elapsed_time'",
     "time is negative: -3"),
    (HEADER + "1,__GlobalPowerLimitOptimizer_300,3,4,5\n", ":2: column 'window_name'", "one power limit only (300 W)"),
    (HEADER + "1,__GlobalPowerLimitOptimizer_300,3,4,5\n2,__GlobalPowerLimitOptimizer_300,3,4,5\n", ":3: column 'window_name'",
     "measured twice (first at line 2)"),
    (HEADER + "1,__GlobalPowerLimitOptimizer_300,3,4,5\n2,__GlobalPowerLimitOptimizer_2x5,3,4,5\n", ":3: column 'window_name'",
     "not a positive whole number"),
    (HEADER + "1,__GlobalPowerLimitOptimizer_300,3,0,0\n2,__GlobalPowerLimitOptimizer_250,3,4,5\n", ":2: column 'gpu0_energy,gpu1_energy'",
     "energy summed over the GPUs is zero"),
    (HEADER + "1,__GlobalPowerLimitOptimizer_300,3,4\n", ":2:", "4 fields where the header has 5"),
    (HEADER + "1,__GlobalPowerLimitOptimizer_300,inf,4,5\n", ":2: column 'elapsed_time'", "time is not finite"),
    (HEADER + "1,epoch,3,4,5\n", ": ", "no measurement"),
])
def test_bad_log_names_file_line_and_field(tmp_path: Path, text: str, where: str, message: str) -> None:
    path = write(tmp_path, "log.csv", text)
    with pytest.raises(IngestError) as caught:
        read_zeus_log(path, "measured/log.csv")
    assert str(caught.value).startswith(f"measured/log.csv{where}"), str(caught.value)
    assert message in str(caught.value)


GOOD_JSON = """{
    "measurements": [
        {
            "power_limit": 250,
            "energy": 1900.5,
            "time": 9.99
        },
        {"power_limit": 225, "energy": 1832, "time": 10.7}
    ]
}
"""


def test_json_reads_zeus_profile(tmp_path: Path) -> None:
    profile = read_profile(write(tmp_path, "v100.json", GOOD_JSON))
    assert profile.format == "zeus-json" and profile.world_size is None
    assert profile.measurements == (Measurement(250, 1900.5, 9.99), Measurement(225, 1832.0, 10.7))


@pytest.mark.parametrize(("old", "new", "where", "message"), [
    ('"energy": 1832', '"energy": "lots"', ":8: column 'energy'", 'energy is not a number: "lots"'),
    ('"energy": 1832', '"energy": true', ":8: column 'energy'", "energy is not a number: true"),
    ('"time": 9.99', '"time": -9.99', ":6: column 'time'", "time is negative: -9.99"),
    ('"power_limit": 250,', '"power_limit": 250.5,', ":4: column 'power_limit'", "not a whole number"),
    ('"power_limit": 225, ', "", ":8: column 'power_limit'", "missing field 'power_limit'"),
    ('"power_limit": 225', '"power_limit": 250', ":8: column 'power_limit'", "measured twice (first at line 4)"),
    ('"time": 9.99', '"time": NaN', ":6: column 'time'", "time is not finite"),
    ('"measurements"', '"measurement"', ":1: column 'measurements'", 'expected an object {"measurements"'),
    ("]\n}", "\n}", ":10:", "not JSON"),
])
def test_bad_json_names_file_line_and_field(tmp_path: Path, old: str, new: str, where: str, message: str) -> None:
    assert old in GOOD_JSON
    path = write(tmp_path, "p.json", GOOD_JSON.replace(old, new))
    with pytest.raises(IngestError) as caught:
        read_zeus_json(path, "p.json")
    assert str(caught.value).startswith(f"p.json{where}"), str(caught.value)
    assert message in str(caught.value)


def test_json_with_one_limit_only(tmp_path: Path) -> None:
    path = write(tmp_path, "p.json", '{"measurements": [\n  {"power_limit": 300, "energy": 5.0, "time": 1.0}\n]}')
    with pytest.raises(IngestError, match=r"^p.json:2: column 'power_limit': one power limit only \(300 W\)"):
        read_zeus_json(path, "p.json")


def test_measured_csv_one_batch_size(tmp_path: Path) -> None:
    path = write_profile(profile_rows(limits=(200, 300, 250)).filter(pl.col("batch_size").is_in([64, 128])), tmp_path / "lab.csv")
    assert profile_format(path) == "measured"
    with pytest.raises(IngestError, match="batch sizes 64, 128: pick one with --batch-size"):
        read_profile(path)
    with pytest.raises(IngestError, match=r"no batch size 32 \(it has 64, 128\)"):
        read_profile(path, batch_size=32)
    profile = read_profile(path, batch_size=64)
    assert profile.world_size == 1 and profile.label == f"{GPU} cifar100 (shufflenetv2, adadelta) batch size 64"
    # highest limit first; one epoch's energy (average power x time per epoch) and time
    assert [m.power_limit_w for m in profile.measurements] == [300, 250, 200]
    row = profile_rows(limits=(300,)).filter(pl.col("batch_size") == 64).row(0, named=True)
    assert profile.measurements[0] == Measurement(300, row["average_power"] * row["time_per_epoch"], row["time_per_epoch"])


def test_measured_csv_one_limit_only(tmp_path: Path) -> None:
    path = write_profile(profile_rows(limits=(300,)).filter(pl.col("batch_size") == 64), tmp_path / "lab.csv")
    with pytest.raises(IngestError, match=r"^lab.csv: column 'power_limit': one power limit only \(300 W\)"):
        read_profile(path, "lab.csv")
