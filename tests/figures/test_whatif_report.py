"""The figures and the HTML page of a ``whatif`` report, in-process (the browser test is tests/cli/test_whatif_html_browser.py).

``whatif.run(..., keep_power=True)`` reports the same numbers as without the power; its power is the replay of sample 1,
so with one sample the plotted peaks are the report's; the plot of energy saved holds each row's
median and interval; the page escapes what the export says and fetches nothing.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipelines.clusters import whatif
from pipelines.clusters.profiles import profiles_of
from pipelines.ingest.simulator_inputs import read_trace_dir
from pipelines.ingest.slurm import read_sacct
from pipelines.report import figures
from pipelines.report import html as whatif_html
from pipelines.vocabulary.units import KW_PER_W
from tests.support.sacct_export import write_export


@pytest.fixture(scope="module")
def read(tmp_path_factory: pytest.TempPathFactory, mirror: Path) -> tuple[Any, Any]:
    path = tmp_path_factory.mktemp("report") / "lab.sacct"
    write_export(path, 400, seed=4, timezone="UTC", span_days=6)
    result = read_sacct(path, trace="lab", source_file='<img src=x onerror="alert(1)">.sacct', timezone="UTC")
    return result, profiles_of(read_trace_dir(mirror / "zeus"))


def test_the_power_is_sample_1s_and_the_numbers_are_whatifs(read: tuple[Any, Any]) -> None:
    result, profiles = read
    one = whatif.Options(samples=1)
    report, power = whatif.run(result, profiles, one, keep_power=True)
    assert json.dumps(report) == json.dumps(whatif.run(result, profiles, one)[0])
    assert power["gpu"].unique().to_list() == ["all"] and set(power["policy"]) == {"default", "zeus"}
    for policy in ("default", "zeus"):  # one sample: the report's peaks are the plotted replay's
        peak = power.filter(pl.col("policy") == policy)["mean_power_w"].max() * KW_PER_W  # type: ignore[operator]
        assert peak == pytest.approx(report["total"][f"{policy}_peak_kw"], rel=1e-12)
    _, timeline = figures.power_timeline(report, power)
    assert timeline.filter(pl.col("policy") == "default")["power_kw"].max() == pytest.approx(report["total"]["default_peak_kw"], rel=1e-12)
    _, curves = figures.load_duration_curve(report, power)
    assert curves["power_kw"].max() == pytest.approx(report["total"]["default_peak_kw"], rel=1e-12)

    every = whatif.Options(samples=2, gpus=("v100", "a40"))
    report, power = whatif.run(result, profiles, every, keep_power=True)
    assert json.dumps(report) == json.dumps(whatif.run(result, profiles, every)[0])
    assert figures.power_panels(report, power) == [("every job on the V100", "v100"), ("every job on the A40", "a40")]


def test_the_savings_plot_holds_each_rows_median_and_interval(read: tuple[Any, Any]) -> None:
    result, profiles = read
    report = whatif.run(result, profiles, whatif.Options(samples=3))[0]
    _, data = figures.savings_with_intervals(report)
    rows = {**report["gpus"], figures.WHOLE: report["total"]}
    assert data["row"].to_list() == list(rows)
    for rec in data.iter_rows(named=True):
        g = rows[rec["row"]]
        for name in ("energy_saved_pct", "energy_saved_kwh"):
            assert [rec[f"{name}_p05"], rec[name], rec[f"{name}_p95"]] == [g[f"{name}_interval"][0], g[name], g[f"{name}_interval"][1]]
            if g.get("interval_note"):  # a row of few jobs: no interval, and the report says why
                assert rec[f"{name}_p05"] is None and rec[f"{name}_p95"] is None and g["jobs"] < whatif.MIN_JOBS_FOR_INTERVAL
            else:
                assert rec[f"{name}_p05"] <= rec[name] <= rec[f"{name}_p95"]


def test_the_page_escapes_the_export_and_fetches_nothing(read: tuple[Any, Any]) -> None:
    result, profiles = read
    report, power = whatif.run(result, profiles, whatif.Options(samples=2), keep_power=True)
    provenance = whatif_html.Provenance.now(report["file"], "ab" * 32, {"--samples": "2"}, "gpu-energy whatif x --html y")
    page = whatif_html.render(report, power, provenance)
    assert report["file"] not in page and html.escape(report["file"]) in page
    assert "<script" not in page and "http://" not in page and "https://" not in page
    assert re.findall(r'src="([^":]*):', page) == ["data"] * 3  # three images, each a data URI
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert 'data-path="[&quot;total&quot;, &quot;energy_saved_kwh&quot;]"' in page
    assert provenance.version and provenance.created.endswith("UTC") and "ab" * 32 in page
