"""``python -m pipelines power-limit``: Zeus's choice from any of the three profile formats, as text or JSON; bad input one line."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipelines.cli import load, main
from tests.support.zeus_plo import load_profile

# 4 GPUs' worth of energy: ZeusCost's MaxPower is 4 x 300 W, which makes time weigh 4x more than for 1 GPU
PROFILE = {"measurements": [{"power_limit": 300, "energy": 4000.0, "time": 10.0}, {"power_limit": 250, "energy": 3000.0, "time": 11.0},
                            {"power_limit": 200, "energy": 2000.0, "time": 15.0}]}


def run(*args: str) -> dict:
    result = CliRunner().invoke(load("power-limit"), [*args, "--json"])
    assert result.exit_code == 0, result.output
    out: dict = json.loads(result.output)
    return out


def test_gpus_is_the_world_size_of_a_json_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from zeus.optimizer.power_limit import ZeusCost

    path = tmp_path / "profile.json"
    path.write_text(json.dumps(PROFILE))
    one, four = run(str(path)), run(str(path), "--gpus", "4")
    # 1 GPU: costs 0.5 x E + 0.5 x 300 x T = 3500, 3150, 3250 J; 4 GPUs: 8000, 8100, 10000 J
    assert (one["power_limit_w"], four["power_limit_w"]) == (250, 300)
    assert one["power_limit_w"] == load_profile(monkeypatch, path, ZeusCost(0.5, 1))
    assert four["power_limit_w"] == load_profile(monkeypatch, path, ZeusCost(0.5, 4), gpus=4)
    assert {k: one[k] for k in ("selector", "energy_j", "time_s", "saved_vs_max_pct")} == {
        "selector": "zeus-cost", "energy_j": 3000.0, "time_s": 11.0, "saved_vs_max_pct": 25.0}
    assert [m["cost_j"] for m in one["measurements"]] == [3500.0, 3150.0, 3250.0]
    assert run(str(path), "--selector", "energy")["power_limit_w"] == 200
    assert run(str(path), "--selector", "time")["power_limit_w"] == 300
    assert run(str(path), "--selector", "max-slowdown", "--max-slowdown", "1.1")["power_limit_w"] == 250
    assert run(str(path), "--eta-knob", "1")["power_limit_w"] == 200


def test_zeus_log_world_size_is_its_gpu_columns(mirror: Path) -> None:
    log = mirror / "zeus/profile_data/A40+resnet50+gpu0,1,2,3.csv"
    out = run(str(log))
    assert out["world_size"] == 4 and out["power_limit_w"] == 150 and len(out["measurements"]) == 9
    result = CliRunner().invoke(load("power-limit"), [str(log), "--batch-size", "32"])
    assert result.exit_code == 2 and result.output.strip().endswith("is a ZeusMonitor log, which has no batch sizes")
    result = CliRunner().invoke(load("power-limit"), [str(log), "--gpus", "2"])
    assert result.exit_code == 2
    assert result.output.strip().endswith("holds the energy of 4 GPU(s); --gpus is for a JSON profile")
    text = CliRunner().invoke(load("power-limit"), [str(log)]).output
    assert "chosen power limit: 150 W: energy 3,738.3 J (13.4 % saved vs 300 W)" in text
    assert text.count("<- chosen") == 1


def test_bad_profile_is_one_line_with_file_line_field(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    path.write_text("start_time,window_name,elapsed_time,gpu0_energy\n1,__GlobalPowerLimitOptimizer_300,3,4\n"
                    "2,__GlobalPowerLimitOptimizer_275,3,four\n")
    done = subprocess.run([sys.executable, "-m", "pipelines", "power-limit", str(path)], capture_output=True, text=True, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [f"Error: {path}:3: column 'gpu0_energy': energy is not a number: 'four'"]


def test_bad_knob_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(PROFILE))
    with pytest.raises(SystemExit) as exit_:
        main(["power-limit", str(path), "--eta-knob", "2"], prog_name="gpu-energy")
    assert exit_.value.code == 2 and capsys.readouterr().err.splitlines() == [
        "Error: Invalid value for '--eta-knob': 2.0 is not in [0, 1] (see 'gpu-energy power-limit --help')"]


def test_the_worked_example_of_the_docs_is_what_the_command_prints(mirror: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipelines.home.paths import REPO_ROOT

    page = (REPO_ROOT / "docs/measure.md").read_text()
    command, printed = re.search(r'```sh\ncp .*?\n\.venv/bin/python -m pipelines (power-limit .*?)\n```\n\n```text\n(.*?)```', page, re.S).groups()
    name = "V100+bert-base-uncased+gpu0.csv"
    (tmp_path / "raw/measured").mkdir(parents=True)
    shutil.copy(mirror / "zeus/profile_data" / name, tmp_path / "raw/measured" / name)
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(command)
    result = CliRunner().invoke(load("power-limit"), argv[1:])
    assert result.exit_code == 0 and result.output == printed
    rows = {(r["power_limit_w"]) for r in run(*argv[1:])["measurements"]}
    assert rows == {250, 225, 200, 175, 150, 125, 100}
    # the table of the other selectors on the same file
    for option, limit in (("--selector energy", 125), ("--selector time", 250), ("--selector max-slowdown", 200),
                          ("--selector max-slowdown --max-slowdown 1.5", 125), ("--eta-knob 0.9", 150)):
        assert f"| `{option}`" in page and run(argv[1], *option.split())["power_limit_w"] == limit, option


def test_measured_csv_with_batch_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from zeus.optimizer.power_limit import ZeusCost

    from pipelines.measure.harness import write_profile
    from pipelines.measure.zeus_json import write_zeus_profiles
    from tests.support.measured_profiles import profile_rows

    rows = profile_rows()
    csv = write_profile(rows, tmp_path / "lab.csv")
    json_of = {int(p.name.split(".bs")[1].split(".")[0]): p for p in write_zeus_profiles(rows, csv)}
    result = CliRunner().invoke(load("power-limit"), [str(csv)])
    assert result.exit_code == 2 and "pick one with --batch-size" in result.output
    for bs in (32, 1024):
        out = run(str(csv), "--batch-size", str(bs))
        assert out["format"] == "measured" and out["world_size"] == 1 and f"batch size {bs}" in out["label"]
        assert out["power_limit_w"] == load_profile(monkeypatch, json_of[bs], ZeusCost(0.5, 1))
