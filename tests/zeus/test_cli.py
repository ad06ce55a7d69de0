"""``python -m pipelines simulate``: output identical line for line to the published simulator, clear errors."""

from __future__ import annotations

import json
import lzma
import math
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from pipelines.cli.simulate import cli as simulate
from pipelines.home.paths import REPO_ROOT
from tests.support.cli import run_main
from tests.support.zeus_peer import Peer, elasticflow_groups


def line(run: tuple, group: str | None = None) -> str:
    bs, limit, energy, time, reached = run
    record = {"bs": bs, "pl": limit, "energy": energy, "time": time, "reached": reached}
    return json.dumps(record if group is None else {"group": group, **record})


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m pipelines simulate ARGS`` as a process of its own."""
    return subprocess.run([sys.executable, "-m", "pipelines", "simulate", *args], capture_output=True, text=True, cwd=REPO_ROOT, check=False)


def run_here(capsys: pytest.CaptureFixture[str], *args: str) -> subprocess.CompletedProcess[str]:
    """The same command in this process (``tests.support.cli.run_main``)."""
    return run_main(capsys, "simulate", *args)


@pytest.fixture(scope="module")
def peer(mirror: Path):
    return Peer(mirror / "zeus")


def test_single_prints_the_published_history(peer, mirror: Path) -> None:
    from zeus._legacy.job import Job

    expected = [line(r) for r in peer.single("rtx6000", Job("squad", "bert_base_uncased", "adamw", 84.0, 6, 32), 0.3, 3.0, 11)]
    done = run_cli(
        "single", "--dataset", "squad", "--model", "bert_base_uncased", "--optimizer", "adamw", "--target-metric", "84.0",
        "--max-epochs", "6", "--b0", "32", "--gpu", "rtx6000", "--eta-knob", "0.3", "--beta-knob", "3.0", "--seed", "11",
        "--trace-dir", str(mirror / "zeus"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == expected
    assert len(expected) >= 96  # 2 x |B| x |P| = 2 x 6 x 8 recurrences


def test_groups_prints_the_published_history(peer, mirror: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    groups = elasticflow_groups(mirror / "itp" / "elasticflow-traces.tar.gz")
    sizes = groups.group_by("group").len()
    chosen = sizes.filter(pl.col("group").str.starts_with("cluster05-") & (pl.col("len") <= 40))["group"]
    subset = groups.filter(pl.col("group").is_in(chosen.implode()))
    path = tmp_path / "groups.csv.xz"
    path.write_bytes(lzma.compress(subset.write_csv().encode()))
    expected = [line(r, group) for group, runs in peer.groups(subset, "a40", 0.8, 1.5) for r in runs]
    done = run_here(capsys, "groups", "--groups", str(path), "--gpu", "a40", "--eta-knob", "0.8", "--beta-knob", "1.5", "--trace-dir", str(mirror / "zeus"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == expected
    assert len(chosen) >= 40 and len(expected) > subset.height


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["single", "--dataset", "mnist"], "unknown dataset 'mnist'"),
        (["single", "--gpu", "h100"], "unknown GPU 'h100'"),
        (["single", "--b0", "100"], "b0 100 is not a batch size of librispeech/deepspeech2/adamw on v100"),
        (["single", "--target-metric", "41.5"], "no runs of librispeech/deepspeech2/adamw at target metric 41.5"),
    ],
)
def test_bad_single_input_exits_2_with_one_line(mirror: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(simulate, [*args, "--trace-dir", str(mirror / "zeus")])
    assert result.exit_code == 2
    assert result.stdout == "" and message in result.stderr and result.stderr.count("\n") == 1


def test_empty_group_file_exits_2(mirror: Path, tmp_path: Path) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("group,start_time,end_time,dataset,runtime_ratio\n")
    result = CliRunner().invoke(simulate, ["groups", "--groups", str(path), "--trace-dir", str(mirror / "zeus")])
    assert result.exit_code == 2 and "no jobs" in result.stderr and result.stderr.count("\n") == 1


def test_baseline_policies_run_from_the_cli(mirror: Path) -> None:
    result = CliRunner().invoke(simulate, ["single", "--policy", "default", "--num-recurrence", "5", "--trace-dir", str(mirror / "zeus")])
    assert result.exit_code == 0
    runs = [json.loads(x) for x in result.stdout.splitlines()]
    assert {(r["bs"], r["pl"]) for r in runs} == {(192, 250)} and sum(r["reached"] for r in runs) == 5


def _artifact_example_args(mirror: Path) -> list[str]:
    """The arguments of run_single.py's example command in the Zeus artifact README, verbatim."""
    readme = (mirror.parent / "docs" / "zeus-nsdi23-artifacts-readme.md").read_text()
    block = readme.split("python run_single.py", 1)[1].split("```", 1)[0]
    return block.replace("\\\n", " ").split()


def test_the_artifact_example_command_pastes_in(peer, mirror: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from zeus._legacy.job import Job

    args = _artifact_example_args(mirror)
    assert "--b_0" in args and "--eta_knob" in args  # the underscore spellings, as published
    done = run_here(capsys, "single", *args, "--trace-dir", str(mirror / "zeus"))
    assert done.returncode == 0, done.stderr
    expected = [line(r) for r in peer.single("v100", Job("librispeech", "deepspeech2", "adamw", 40.0, 16, 192), 0.5, 2.0, 1)]
    assert done.stdout.splitlines() == expected
    assert "--b_0" not in run_here(capsys, "single", "--help").stdout  # hidden aliases


def test_dataset_alone_takes_its_published_job(peer, mirror: Path) -> None:
    from zeus._legacy.job import Job

    result = CliRunner().invoke(
        simulate, ["single", "--dataset", "cifar100", "--gpu", "a40", "--num_recurrence=12", "--trace-dir", str(mirror / "zeus")]
    )
    assert result.exit_code == 0, result.stderr
    # run_alibaba.py's cifar100 job: shufflenetv2, adadelta, target 0.6, 100 epochs, b0 = min(1024, largest profiled).
    expected = [line(r) for r in peer.single("a40", Job("cifar100", "shufflenetv2", "adadelta", 0.6, 100, 1024), 0.5, 2.0, 1, 12)]
    assert result.stdout.splitlines() == expected


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--eta-knob", "1.5"], "--eta-knob"),
        (["--eta_knob", "nan"], "--eta-knob"),
        (["--beta-knob", "0"], "--beta-knob"),
        (["--num-recurrence", "0"], "--num-recurrence"),
        (["--num-recurrence", "-1"], "--num-recurrence"),
        (["--target-metric", "inf"], "--target-metric"),
        (["--seed", "-3"], "--seed"),
    ],
)
def test_out_of_range_options_fail_in_one_line_naming_the_option(mirror: Path, args: list[str], option: str, capsys: pytest.CaptureFixture[str]) -> None:
    done = run_here(capsys, "single", *args, "--trace-dir", str(mirror / "zeus"))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and f"'{option}'" in done.stderr


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("empty.csv", b"", "empty file"),
        ("corrupt.csv.xz", b"\xfd7zXZ\x00 not really xz", "corrupt xz stream"),
        ("inf.csv", b"group,start_time,end_time,dataset,runtime_ratio\ng,0,10,cifar100,inf\n", "inf.csv:2: column 'runtime_ratio'"),
    ],
)
def test_bad_group_files_fail_in_one_line(mirror: Path, tmp_path: Path, name: str, content: bytes, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    done = run_here(capsys, "groups", "--groups", str(path), "--trace-dir", str(mirror / "zeus"))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and message in done.stderr


def test_output_is_strict_json(capsys: pytest.CaptureFixture[str]) -> None:
    """A non-finite number is refused, never printed as ``Infinity`` (not JSON); finite ones keep full precision."""
    from pipelines.cli.simulate import _emit

    _emit([{"energy": 0.1 + 0.2, "time": 3.0}])
    assert [json.loads(x) for x in capsys.readouterr().out.splitlines()] == [{"energy": 0.30000000000000004, "time": 3.0}]
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        _emit([{"energy": math.inf}])
