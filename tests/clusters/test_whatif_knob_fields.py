"""whatif's knobs written once (issue 53, item 2): each field of ``whatif_knobs.Options`` with a ``Knob`` is one option of
``whatif``, and its range is checked where ``Options`` is made, in the words click uses on the command line."""

from __future__ import annotations

import math
from dataclasses import fields
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from pipelines.cli import load
from pipelines.clusters import whatif
from pipelines.clusters.whatif_knobs import KnobError, Options
from pipelines.vocabulary.ranges import Range


def test_every_knob_is_one_option_of_whatif_under_its_field_name() -> None:
    knobs = {f.name: f.metadata["knob"] for f in fields(Options) if "knob" in f.metadata}
    params = {p.name: p for p in load("whatif").params}
    assert len(knobs) == 21
    for name, knob in knobs.items():
        assert name in params, name
        assert params[name].opts[0] == knob.flag
    # the one documented rename: the artifact's --eta-knob is eta from here on
    assert params["eta"].opts == ["--eta-knob"]
    assert params["samples"].default == 20 and params["top"].default == 10 and params["eta_dirty"].default == 0.9
    assert whatif.Options is Options


OUT_OF_RANGE = [
    ({"samples": 0}, "--samples", "0 is not in the range x>=1."),
    ({"top": -1}, "--top", "-1 is not in the range x>=0."),
    ({"cluster_gpus": 0}, "--cluster-gpus", "0 is not in the range x>=1."),
    ({"eta": 1.5}, "--eta-knob", "1.5 is not in [0, 1]"),
    ({"eta_dirty": math.nan}, "--eta-dirty", "nan is not in [0, 1]"),
    ({"beta": 0.5}, "--beta-knob", "0.5 is not >= 1 (or inf)"),
    ({"min_gpu_util_pct": 100.5}, "--min-gpu-util", "100.5 is not in [0, 100]"),
    ({"horizon_days": 0.0}, "--horizon", "0.0 is not a number of days in (0, 36,500]"),
    ({"price_per_kwh": -0.1}, "--price-per-kwh", "-0.1 is not in [0, 1e+06]"),
]


@pytest.mark.parametrize(("given", "flag", "problem"), OUT_OF_RANGE)
def test_a_knob_out_of_range_is_refused_when_options_are_made(given: dict[str, float], flag: str, problem: str) -> None:
    with pytest.raises(KnobError) as refused:
        Options(**given)  # type: ignore[arg-type]
    assert (refused.value.flag, refused.value.problem) == (flag, problem)
    assert str(refused.value) == f"{flag}: {problem}"


@pytest.mark.parametrize(("given", "flag", "problem"), OUT_OF_RANGE)
def test_the_command_line_refuses_the_same_value_in_the_same_words(tmp_path: Path, given: dict[str, float], flag: str,
                                                                   problem: str) -> None:
    """The option made from the knob refuses what ``Options`` refuses, before reading the export (an empty file here)."""
    export = tmp_path / "cluster.sacct"
    export.write_text("")
    (value,) = given.values()
    result = CliRunner().invoke(load("whatif"), [str(export), flag, str(value)])
    assert result.exit_code == 2
    assert f"Invalid value for '{flag}': {problem}" in result.output


def test_the_edges_of_each_range_are_accepted() -> None:
    edges = Options(samples=1, seed=0, top=0, eta=0.0, eta_dirty=1.0, beta=math.inf, min_gpu_util_pct=100.0, horizon_days=36_500.0,
                    cluster_gpus=1, price_per_kwh=0.0)
    assert (edges.samples, edges.beta, edges.horizon_days) == (1, math.inf, 36_500.0)


def test_whole_numbers_are_worded_as_clicks_int_range() -> None:
    """The library's message for a whole number is the one the command line prints (click's own ``IntRange``)."""
    for lo, value in ((1, 0), (0, -3)):
        with pytest.raises(click.BadParameter) as clicks:
            click.IntRange(min=lo).convert(value, None, None)
        assert Range(lo, integer=True).problem(value) == clicks.value.message
