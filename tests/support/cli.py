"""``python -m pipelines ARGS`` run in this process (``pipelines.cli.main``, the same entry point): its exit status and
what it printed, without starting an interpreter and importing the package again (0.6 s a command). For tests of what
a command prints and returns; what only a process shows (its imports, signals, children) stays a subprocess."""

from __future__ import annotations

import contextlib
import io
import subprocess
from pathlib import Path

import pytest

from pipelines.cli import main


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> subprocess.CompletedProcess[str]:
    """The command's exit status, stdout and stderr, as ``subprocess.run(..., capture_output=True, text=True)`` gives them."""
    capsys.readouterr()  # what the test printed before is not the command's
    try:
        main(list(args), prog_name="python -m pipelines")
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["python", "-m", "pipelines", *args], code, out, err)


def one_error_line(args: list[str], home: Path) -> str:
    """The one line ``python -m pipelines ARGS`` prints on stderr with ``home`` as its data home: exit code 2, nothing on
    stdout, one line on stderr (the command's refusal)."""
    with pytest.MonkeyPatch.context() as env, pytest.raises(SystemExit) as exit_:
        env.setenv("GPU_ENERGY_HOME", str(home))
        with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:
            main(args, prog_name="gpu-energy")
    assert exit_.value.code == 2 and out.getvalue() == "", err.getvalue()
    lines = err.getvalue().splitlines()
    assert len(lines) == 1, err.getvalue()[-2000:]
    return lines[0]
