"""The command line as a whole: lazy subcommands whose listed help is their own, one-line usage errors."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from pipelines.cli import SUBCOMMANDS


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_listed_help_is_the_commands_own(name: str) -> None:
    target, listed = SUBCOMMANDS[name]
    module, attr = target.split(":")
    command = getattr(importlib.import_module(module), attr)
    assert command.name == name.replace("_", "-") or command.name == name
    assert listed == command.get_short_help_str(limit=200)


def test_top_level_help_imports_no_subcommand() -> None:
    code = (
        "import sys; from pipelines.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('pipelines.') and m not in ('pipelines.cli', 'pipelines.paths')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_usage_errors_are_one_line() -> None:
    out = subprocess.run([sys.executable, "-m", "pipelines", "no-such-command"], capture_output=True, text=True, check=False)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.splitlines() == ["Error: No such command 'no-such-command'. (see 'python -m pipelines --help')"]
