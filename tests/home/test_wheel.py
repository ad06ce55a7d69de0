"""A real user's path: build the sdist and wheel, install the wheel into a fresh venv, use it from an empty folder.

Nothing of the repository is importable there: the venv is new (no package in it but what the
wheel declares), the working directory is an empty temp folder outside the clone, and
``PYTHONPATH`` is cleared. The wheel and its dependencies are installed by uv (a test extra), which
resolves them from the package registry like pip and installs them in seconds from its cache
(pip took about a minute for the same, most of the suite's budget); no other network.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from pipelines.home.paths import HOME_MARKER, REPO_ROOT


def _run(argv: list[str], cwd: Path, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """(the fresh venv's bin folder, a clean environment) with the freshly built wheel installed."""
    tmp = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "GPU_ENERGY_HOME", "TRACES_MIRROR", "DAGSTER_HOME")}
    dist = tmp / "dist"
    # No --sdist/--wheel: uv builds the sdist, then the wheel from the unpacked sdist, so the sdist is proven complete and
    # the clone gets no build/ folder. uv, not `python -m build`: the same files, and its build environment from uv's
    # cache in 2 s instead of 5 s (pip installing setuptools into a fresh one).
    _run([sys.executable, "-m", "uv", "build", "-q", "--out-dir", str(dist), str(REPO_ROOT)], cwd=tmp, env=env)
    artifacts = sorted((p for p in dist.iterdir() if p.name != ".gitignore"), key=lambda p: p.suffix)  # uv writes a .gitignore there
    assert [p.suffix for p in artifacts] == [".gz", ".whl"], artifacts
    twine = _run([sys.executable, "-m", "twine", "check", "--strict", *map(str, artifacts)], cwd=tmp, env=env)
    assert twine.stdout.count("PASSED") == 2
    venv.create(tmp / "venv", with_pip=False)
    bin_dir = tmp / "venv" / "bin"
    _run([sys.executable, "-m", "uv", "pip", "install", "-q", "--python", str(bin_dir / "python"), str(artifacts[1])],
         cwd=tmp, env=env, timeout=600)
    return bin_dir, env


@pytest.mark.slow
def test_the_installed_wheel_works_from_an_empty_folder(installed: tuple[Path, dict[str, str]], tmp_path: Path, mirror: Path) -> None:
    bin_dir, env = installed
    work = tmp_path / "empty"
    work.mkdir()
    cli = str(bin_dir / "gpu-energy")

    help_text = _run([cli, "--help"], cwd=work, env=env).stdout
    assert help_text.startswith("Usage: gpu-energy [OPTIONS] COMMAND")
    # click wraps the help at hyphens too ("pytest-of-" / "root"): compare without any whitespace
    assert f"Datahome:{work}" in "".join(help_text.split())

    location = _run([str(bin_dir / "python"), "-c", "import pipelines; print(pipelines.__file__)"], cwd=work, env=env).stdout
    assert str(bin_dir.parent) in location and str(REPO_ROOT) not in location

    _run([cli, "init"], cwd=work, env=env)
    assert {p.name for p in work.iterdir()} >= {"raw", "assets", "figures", "workspace.yaml", "README.md", HOME_MARKER}
    sub = work / "raw"
    assert f"data home: {work} " in _run([cli, "-v", "sql", "select 1"], cwd=sub, env=env).stderr  # found from below

    runs = _run([cli, "simulate", "single", "--trace-dir", str(mirror / "zeus"), "--num-recurrence", "3"], cwd=work, env=env)
    records = [json.loads(line) for line in runs.stdout.splitlines()]
    assert len(records) >= 3 and records[0]["bs"] == 192 and sum(r["reached"] for r in records) == 3

    # whatif on a Slurm export written here: two jobs of one recurring group, a step, a pending job, a CPU job
    export = work / "lab.sacct"
    export.write_text(
        "JobID|JobName|User|Submit|Start|End|Elapsed|State|AllocTRES\n"
        "7|train|ann|2024-05-01T09:00:00|2024-05-01T09:10:00|2024-05-01T11:10:00|02:00:00|COMPLETED|cpu=8,gres/gpu:a100=2,gres/gpu=2\n"
        "7.batch|batch||2024-05-01T09:00:00|2024-05-01T09:10:00|2024-05-01T11:10:00|02:00:00|COMPLETED|cpu=8\n"
        "8|train|ann|2024-05-02T09:00:00|2024-05-02T09:05:00|2024-05-02T10:35:00|01:30:00|COMPLETED|cpu=8,gres/gpu=2\n"
        "9|eval|bob|2024-05-02T09:00:00|Unknown|Unknown|00:00:00|PENDING|\n"
        "10|prep|bob|2024-05-02T09:00:00|2024-05-02T09:00:10|2024-05-02T09:30:00|00:29:50|COMPLETED|cpu=4\n"
    )
    report = json.loads(_run([cli, "whatif", "lab.sacct", "--timezone", "Europe/Paris", "--trace-dir", str(mirror / "zeus"), "--json"],
                             cwd=work, env=env).stdout)
    assert {k: report[k] for k in ("lines", "allocations", "steps_skipped", "cpu_only", "not_ended", "quarantined", "simulated_jobs")} == {
        "lines": 6, "allocations": 4, "steps_skipped": 1, "cpu_only": 1, "not_ended": 1, "quarantined": 0, "simulated_jobs": 2}
    # job 7 names its A100s (no profile: the V100 fallback), job 8 no type: replayed as exported, one cluster
    assert report["replayed_on"] == {"a100": "v100", "untyped": "v100"} and report["recurring_groups"] == 1
    assert report["total"]["default_mwh"] > 0 and report["gpu_types"] == {"a100": 1, "untyped": 1}

    answer = _run([cli, "sql", "--format", "csv", "select 42 as answer"], cwd=work, env=env).stdout
    assert answer.splitlines() == ["answer", "42"]
    examples = _run([cli, "sql", "--list-examples"], cwd=work, env=env).stdout.split()
    assert "itp_savings_v100" in examples

    # The code location loads from the wheel in the home, as `dagster dev -w workspace.yaml` would load it.
    code = "from pipelines.definitions import defs; print(len(list(defs().resolve_asset_graph().materializable_asset_keys)))"
    assert int(_run([str(bin_dir / "python"), "-c", code], cwd=work, env=env).stdout) > 30
    assert sorted(p.name for p in (work / "assets").iterdir()) == []  # nothing written by merely loading

    # Dagster runs from the home: its workspace.yaml, its instance (.dagster_home, $DAGSTER_HOME unset),
    # its raw/ (fetched from the mirror) and assets/.
    done = _run([cli, "materialize", "--select", "+zeus_train_runs"], cwd=work, env={**env, "TRACES_MIRROR": str(mirror)})
    assert f"Dagster instance: {work.resolve() / '.dagster_home'} (the data home's" in done.stderr, done.stderr[-2000:]
    assert (work / ".dagster_home" / "history" / "runs.db").is_file()
    assert (work / "raw" / "zeus" / "summary_train.csv").is_file()
    assert sorted(p.name for p in (work / "assets").iterdir()) == ["quarantine", "zeus_train_runs.parquet"]
    rows = _run([cli, "sql", "--format", "csv", "select count(*) as n from zeus_train_runs"], cwd=work, env=env).stdout
    assert rows.splitlines() == ["n", "3759"]
