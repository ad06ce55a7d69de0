"""The ``own_cluster_report`` asset: ``whatif --html``'s page per trace under figures/, with whatif's numbers beside it.

Invoked directly (as tests/clusters/test_own_cluster_summary_asset.py does) on the session's
ingested Zeus tables and a generated export read as the pipeline reads raw/clusters.
"""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from pipelines.clusters import tracefiles, whatif
from pipelines.clusters.profiles import profiles_of
from pipelines.defs.clusters.own_cluster_summary import SUMMARY_SAMPLES
from pipelines.defs.figures.own_cluster_report import PREFIX, own_cluster_report
from pipelines.defs.shared.dask import DaskResource
from pipelines.defs.shared.io_manager import PathsResource
from pipelines.zeus.traces import from_frames
from tests.support.sacct_export import write_export


@pytest.mark.slow
def test_the_report_asset_writes_each_traces_page_and_its_numbers(ingested, tmp_path: Path) -> None:
    paths, _ = ingested
    train, power = pl.read_parquet(paths.table("zeus_train_runs")), pl.read_parquet(paths.table("zeus_power_profiles"))
    home = tmp_path / "home"
    (home / "raw" / "clusters").mkdir(parents=True)
    (home / "figures").mkdir()
    stale = home / "figures" / f"{PREFIX}gone.html"
    stale.write_text("a trace removed since")
    write_export(home / "raw" / "clusters" / "lab.sacct", 300, seed=12, span_days=8, timezone="UTC")
    (trace,), _ = tracefiles.user_traces(home / "raw")
    result = trace.read()

    output = own_cluster_report(dg.build_asset_context(), paths=PathsResource(root=str(home)), samples_dask=DaskResource(scheduler="none"),
                                own_cluster_jobs=result.table, own_cluster_traces=result.summary_row(), zeus_train_runs=train,
                                zeus_power_profiles=power)
    page, numbers = home / "figures" / f"{PREFIX}lab.html", home / "figures" / f"{PREFIX}lab.json"
    assert page.is_file() and numbers.is_file() and not stale.exists()
    expected = whatif.run(result, profiles_of(from_frames(train, power)), whatif.Options(samples=SUMMARY_SAMPLES))[0]
    stored = json.loads(numbers.read_text())
    assert stored.pop("zeus_traces").startswith("the data home's")
    assert json.dumps(stored) == json.dumps(expected)
    text = page.read_text()
    assert result.sha256 in text and "clusters/lab.sacct" in text and text.count('src="data:image/png;base64,') == 3
    meta = output.metadata
    assert meta["reports"].value == ["lab"] and meta["lab_path"].value == str(page)
    (check,) = output.check_results
    assert (check.check_name, check.passed, check.description) == ("wrote_reports", True, "1 report(s): lab")
    shown = meta["lab"].value
    assert shown.startswith("![energy saved](data:image/png;base64,iVBORw0KGgo") and page.resolve().as_uri() in shown
    assert f"{expected['total']['energy_saved_pct']:.1f} %" in shown


@pytest.mark.parametrize("traces", [0, 1], ids=["no-trace", "no-completed-gpu-job"])
def test_no_report_fails_its_warn_check_saying_why_and_what_would_make_one(ingested, tmp_path: Path, traces: int) -> None:
    paths, _ = ingested
    train, power = pl.read_parquet(paths.table("zeus_train_runs")), pl.read_parquet(paths.table("zeus_power_profiles"))
    home = tmp_path / "home"
    (home / "raw" / "clusters").mkdir(parents=True)
    export = home / "raw" / "clusters" / "lab.sacct"
    write_export(export, 40, seed=5)
    export.write_text(export.read_text().replace("|COMPLETED|", "|FAILED|"))  # a cluster where every job failed: nothing to replay
    (trace,), _ = tracefiles.user_traces(home / "raw")
    result = trace.read()
    assert result.counts.completed_gpu_allocations == 0 and result.table.height == 40
    summary = result.summary_row().head(traces)  # lab registered, or no trace of yours at all
    output = own_cluster_report(dg.build_asset_context(), paths=PathsResource(root=str(home)), samples_dask=DaskResource(scheduler="none"),
                                own_cluster_jobs=result.table, own_cluster_traces=summary, zeus_train_runs=train, zeus_power_profiles=power)
    (check,) = output.check_results
    why = ("No report: lab: no COMPLETED GPU job to replay" if traces else
           "No report: no trace of yours: add a Slurm sacct export or a job-log CSV (`gpu-energy clusters add NAME FILE`, or drop it "
           "into raw/clusters/ while `make dev` runs)")
    assert (check.check_name, check.passed, check.severity, check.description) == ("wrote_reports", False, dg.AssetCheckSeverity.WARN, why)
    assert output.metadata["reports"].value == [] and output.metadata["no_report"].value == why
