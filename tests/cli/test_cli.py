"""The command line as a whole: lazy subcommands whose listed help is their own, one-line usage errors."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.cli import SUBCOMMANDS, load
from pipelines.home.paths import REPO_ROOT


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_listed_help_is_the_commands_own(name: str) -> None:
    command = load(name)
    assert command.name == name
    assert SUBCOMMANDS[name] == command.get_short_help_str(limit=200)


def test_every_module_of_the_cli_package_is_a_listed_command() -> None:
    modules = {p.stem for p in (REPO_ROOT / "pipelines" / "cli").glob("*.py") if p.stem not in ("__init__", "options")}
    assert modules == {name.replace("-", "_") for name in SUBCOMMANDS}
    assert not hasattr(importlib.import_module("pipelines.cli.options"), "cli")  # the shared options, no command


def test_top_level_help_imports_no_subcommand() -> None:
    code = (
        "import sys; from pipelines.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('pipelines.')\n"
        "             and m not in ('pipelines.cli', 'pipelines.home', 'pipelines.home.paths', 'pipelines.home.interrupt')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_usage_errors_are_one_line() -> None:
    out = subprocess.run([sys.executable, "-m", "pipelines", "no-such-command"], capture_output=True, text=True, check=False)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.splitlines() == ["Error: No such command 'no-such-command'. (see 'python -m pipelines --help')"]


def test_measure_profile_without_torch_names_make_setup_measure(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['torch'] = None\n"  # as if torch were not installed
        "from pipelines.cli import main\n"
        f"main(['measure', 'profile', '--workload', 'cifar100', '--batch-sizes', '32', '--device', 'cpu', '--out', {str(tmp_path / 'x.csv')!r}])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "Error: measure profile needs torch, which is not installed: run `make setup-measure` (pip install -e '.[measure]', torch==2.13.0)"
    ]
    assert not (tmp_path / "x.csv").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["simulate", "single", "--trace-dir", "{mirror}/zeus", "--num-recurrence", "2"],
        ["simulate", "groups", "--trace-dir", "{mirror}/zeus", "--groups", "{groups}"],
        ["sql", "select 42"],
    ],
    ids=["simulate single", "simulate groups", "sql"],
)
def test_fast_commands_import_no_pandas_pandera_or_dagster(argv: list[str], mirror: Path, tmp_path: Path) -> None:
    groups = tmp_path / "groups.csv"
    groups.write_text("group,start_time,end_time,dataset,runtime_ratio\ng,0,10,cifar100,1.0\n")
    args = [a.format(mirror=mirror, groups=groups) for a in argv]
    code = (
        "import sys\nfrom pipelines.cli import main\n"
        f"try:\n    main({args!r})\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "print('LOADED', sorted(m for m in ('pandas', 'pandera', 'dagster') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=tmp_path,
                         env={**os.environ, "GPU_ENERGY_HOME": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "LOADED []"
