"""The shared options (``pipelines.cli.options``): one spelling, one default and one message in every command (issue 38)."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from pipelines.cli import load, main
from pipelines.cli.options import AliasedCommand
from pipelines.vocabulary import DEFAULT_BETA, DEFAULT_ETA, REFERENCE_GPU

PROG = "gpu-energy"


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, Path]:
    """Files the commands' required arguments name (never read: a bad knob stops them first)."""
    groups = tmp_path / "groups.csv"
    groups.write_text("group,dataset\n")
    profile = tmp_path / "profile.json"
    profile.write_text("{}")
    return {"groups": groups, "profile": profile, "export": tmp_path / "lab.sacct"}


def _commands(inputs: dict[str, Path]) -> list[list[str]]:
    """Every command with Zeus's eta knob, with its required arguments."""
    return [["simulate", "single"], ["simulate", "groups", "--groups", str(inputs["groups"])], ["whatif", str(inputs["export"])],
            ["hetero"], ["power-limit", str(inputs["profile"])]]


def _error(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int | str | None, list[str]]:
    with pytest.raises(SystemExit) as exit_:
        main(args, prog_name=PROG)
    return exit_.value.code, capsys.readouterr().err.splitlines()


@pytest.mark.parametrize("value", ["1.5", "-0.1", "nan", "inf"])
def test_a_bad_eta_knob_is_the_same_line_in_every_command(inputs: dict[str, Path], capsys: pytest.CaptureFixture[str], value: str) -> None:
    for command in _commands(inputs):
        code, err = _error([*command, "--eta-knob", value], capsys)
        shown = float(value)
        assert code == 2 and err == [f"Error: Invalid value for '--eta-knob': {shown} is not in [0, 1] "
                                     f"(see '{PROG} {' '.join(command[:2] if command[0] == 'simulate' else command[:1])} --help')"]


@pytest.mark.parametrize("command", [["simulate", "single"], ["whatif", "lab.sacct"]])
def test_a_bad_beta_knob_is_one_line_naming_it(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _error([*command, "--beta-knob", "0.5"], capsys)
    assert code == 2 and len(err) == 1 and err[0].startswith("Error: Invalid value for '--beta-knob': 0.5 is not >= 1 (or inf)")


def test_defaults_are_the_vocabularys() -> None:
    """--eta-knob, --beta-knob and the GPU options default to the vocabulary's values, in every command that has them."""
    seen = {}
    for name in ("simulate", "whatif", "hetero", "power-limit"):
        command = load(name)
        for sub in (command.commands.values() if isinstance(command, click.Group) else [command]):
            for param in sub.params:
                if param.opts[0] in ("--eta-knob", "--beta-knob", "--gpu", "--fallback-gpu") and param.default is not None:
                    seen[(name, sub.name, param.opts[0])] = param.default
    assert {k: v for k, v in seen.items() if k[2] == "--eta-knob"} == {
        ("simulate", "single", "--eta-knob"): DEFAULT_ETA, ("simulate", "groups", "--eta-knob"): DEFAULT_ETA,
        ("whatif", "whatif", "--eta-knob"): DEFAULT_ETA, ("hetero", "hetero", "--eta-knob"): DEFAULT_ETA,
        ("power-limit", "power-limit", "--eta-knob"): DEFAULT_ETA}
    assert {v for k, v in seen.items() if k[2] == "--beta-knob"} == {DEFAULT_BETA}
    assert {v for k, v in seen.items() if k[2] in ("--gpu", "--fallback-gpu")} == {REFERENCE_GPU}


def test_aliases_read_as_the_option_and_stay_out_of_help() -> None:
    @click.command(cls=AliasedCommand, aliases={"--eta": "--eta-knob"})
    @click.option("--eta-knob", type=float, default=0.5)
    @click.option("--name", default="")
    def knob(eta_knob: float, name: str) -> None:
        click.echo(json.dumps([eta_knob, name]))

    runner = CliRunner()
    assert runner.invoke(knob, ["--eta", "0.25"]).output == "[0.25, \"\"]\n"
    assert runner.invoke(knob, ["--eta=0.75", "--name", "--eta"]).output == "[0.75, \"--eta\"]\n"  # a value is not an option name
    assert runner.invoke(knob, ["--name", "x", "--eta", "1"]).output == "[1.0, \"x\"]\n"
    assert "--eta-knob" in runner.invoke(knob, ["--help"]).output and "--eta " not in runner.invoke(knob, ["--help"]).output
    for name in ("hetero", "sweep"):
        assert "--eta-knob" in runner.invoke(load(name), ["--help"]).output
        assert "--eta " not in runner.invoke(load(name), ["--help"]).output


def test_hetero_takes_eta_as_eta_knob(mirror: Path) -> None:
    a10, t4 = (str(mirror / "zeus2" / f"cifar_{gpu}.json") for gpu in ("a10", "t4"))
    outputs = [CliRunner().invoke(load("hetero"), [a10, t4, "--method", "sync", "--format", "json", *knob]).output
               for knob in (["--eta-knob", "0.8"], ["--eta", "0.8"], ["--eta=0.8"])]
    assert outputs[0] == outputs[1] == outputs[2] and json.loads(outputs[0].splitlines()[0])["eta"] == 0.8
