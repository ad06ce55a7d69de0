"""``python -m pipelines hetero``: the allocations as a table or JSON lines, and clear errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from pipelines.cli.hetero import cli as hetero
from pipelines.hetero.fit import GpuFit, fit_gpu
from pipelines.home.paths import REPO_ROOT
from pipelines.ingest.zeus2 import read_profile
from tests.support.hetero_peer import peer_fitcurve, peer_load_json_data, published_optimum


def profiles(mirror: Path, workload: str = "cifar") -> list[str]:
    return [str(mirror / "zeus2" / f"{workload}_{gpu}.json") for gpu in ("a10", "t4")]


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(hetero, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_json_lines_hold_every_method_under_both_models(mirror: Path) -> None:
    code, out, err = run("--profiles", *profiles(mirror, "imagenet"), "--format", "json")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [(r["method"], r["model"]) for r in rows] == [
        ("brute", "published"), ("heuristic", "published"), ("baseline", "published"),
        ("brute", "sync"), ("heuristic", "sync"), ("baseline", "sync"), ("baseline_as_written", "published"),
    ]  # fmt: skip
    brute = rows[0]
    # The peer: the published script's scipy curve_fit fits, and its cost for every split of 4096 and every
    # limit pair (a vectorised transcription of its loops, tests.support.hetero_peer.published_optimum): 1661 / 2435 at
    # 100 / 60 W, about 45,227 J. Our least-squares fits differ from curve_fit's in the last digits only.
    a10, t4 = profiles(mirror, "imagenet")
    peer_fits = [peer_fitcurve(peer_load_json_data(p)) for p in (a10, t4)]
    with_peer_coef = [
        GpuFit(f.gpu, f.workload, f.power_limits, np.array(t), np.array(a))
        for f, (_, t, a) in zip((fit_gpu(read_profile(Path(a10))), fit_gpu(read_profile(Path(t4)))), peer_fits, strict=True)
    ]
    split, limits, cost = published_optimum(with_peer_coef, pin_first=False)
    assert (tuple(brute["batch_split"]), tuple(brute["power_limits"]), brute["gpus"]) == (split, limits, ["a10", "t4"])
    assert brute["cost"] == pytest.approx(cost, rel=1e-9)
    assert brute["published_cost"] == brute["cost"]
    sync = rows[3]
    assert sync["cost"] == sync["sync_cost"] <= min(r["sync_cost"] for r in rows)
    assert all(r["idle_power_w"] == [20.0, 12.0] for r in rows)  # 0.2 x the lowest limits, 100 W and 60 W


def test_table_and_single_methods(mirror: Path) -> None:
    code, out, err = run("--profiles", *profiles(mirror), "--method", "brute")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "cifar100: a10 + t4, global batch 4096 in steps of 1, eta 0.5"
    assert lines[1].split()[:3] == ["method", "model", "batch"]
    assert lines[3].split()[:8] == ["brute", "published", "1874", "/", "2222", "100", "/", "60"]
    assert len(lines) == 4
    code, out, _ = run("--profiles", *profiles(mirror), "--method", "sync", "--format", "json", "--eta", "0.8",
                       "--idle-power", "30", "--idle-power", "10", "--granularity", "8")  # fmt: skip
    assert code == 0
    (row,) = [json.loads(line) for line in out.splitlines()]
    assert (row["method"], row["model"], row["eta"], row["granularity"], row["idle_power_w"]) == ("brute", "sync", 0.8, 8, [30.0, 10.0])
    assert all(b % 8 == 0 for b in row["batch_split"]) and sum(row["batch_split"]) == 4096


def test_profiles_may_follow_as_arguments_through_the_main_cli(mirror: Path) -> None:
    a10, t4 = profiles(mirror)
    done = subprocess.run(
        [sys.executable, "-m", "pipelines", "hetero", "--profiles", a10, t4, "--method", "baseline", "--format", "json", "--global-batch", "1024"],
        capture_output=True, text=True, cwd=REPO_ROOT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (row,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert (row["method"], row["batch_split"], row["global_batch"]) == ("baseline", [512, 512], 1024)


def test_malformed_profile_names_file_and_key(tmp_path: Path, mirror: Path) -> None:
    bad = tmp_path / "cifar_a10.json"
    bad.write_text('{"32": [{"power_limit": 300, "energy": "abc", "time": 0.2}]}')
    code, out, err = run("--profiles", str(bad), profiles(mirror)[1])
    assert code == 2 and out == ""
    assert err.strip() == 'Error: cifar_a10.json:1:40: key "32"[0].energy: expected a number, got "abc"'


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--method", "brute"], "give at least two profiles"),
        (["--global-batch", "1000", "--granularity", "64"], "not a multiple of the granularity 64"),
        (["--eta-knob", "2"], "Invalid value for '--eta-knob': 2.0 is not in [0, 1]"),
        (["--eta", "2"], "Invalid value for '--eta-knob': 2.0 is not in [0, 1]"),  # the hidden alias of earlier releases
        (["--idle-power", "5"], "1 --idle-power values for 2 GPUs"),
    ],
)
def test_bad_options(mirror: Path, args: list[str], message: str) -> None:
    given = [] if args[0] == "--method" else ["--profiles", *profiles(mirror)]
    code, _, err = run(*given, *args)
    assert code == 2
    assert message in err


def test_profiles_of_different_workloads_are_refused(mirror: Path) -> None:
    code, _, err = run("--profiles", profiles(mirror, "imagenet")[0], profiles(mirror, "cifar")[1])
    assert code == 2
    assert "profiles of different workloads: imagenet_a10.json (imagenet), cifar_t4.json (cifar100)" in err


def test_other_file_names_take_the_stem_as_gpu(tmp_path: Path, mirror: Path) -> None:
    a10, t4 = profiles(mirror)
    (tmp_path / "fast.json").write_text(Path(a10).read_text())
    (tmp_path / "slow.json").write_text(Path(t4).read_text())
    code, out, err = run("--profiles", str(tmp_path / "fast.json"), str(tmp_path / "slow.json"), "--method", "brute", "--format", "json")
    assert code == 0, err
    (row,) = [json.loads(line) for line in out.splitlines()]
    assert (row["workload"], row["gpus"], row["batch_split"]) == ("-", ["fast", "slow"], [1874, 2222])


def test_a_huge_global_batch_is_one_line_before_any_allocation(mirror: Path) -> None:
    """Issue 39, item 13: --global-batch 99999999999 was a numpy _ArrayMemoryError traceback, its memory growing with it."""
    code, out, err = run("--profiles", *profiles(mirror), "--global-batch", "99999999999")
    assert code == 2 and out == ""
    assert err.strip() == ("Error: global batch 99,999,999,999 in steps of 1 is 99,999,999,999 steps; at most 1,000,000 "
                           "(each GPU's tables hold one entry per step): give a coarser --granularity")
    assert run("--profiles", *profiles(mirror), "--global-batch", "1000000", "--granularity", "1000", "--method", "sync")[0] == 0
