"""The ``own_cluster_summary`` asset: what ``whatif`` reports, for every trace in raw/clusters, from the stored tables.

The asset is invoked directly on the session's ingested Zeus tables (the published power profiles plus
the synthetic H100 fixture as a measured profile, as the ingest of raw/measured stores it) and a
generated export read as the pipeline reads raw/clusters; its rows must equal whatif's on the file.
"""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import polars as pl

from pipelines.clusters import tracefiles, whatif
from pipelines.clusters.profiles import with_measured
from pipelines.contracts.base import validate
from pipelines.contracts.owncluster import OwnClusterSummary
from pipelines.defs.clusters import own_cluster_summary as summary_module
from pipelines.defs.clusters.own_cluster_summary import own_cluster_summary
from pipelines.defs.shared.dask import DaskResource
from pipelines.ingest.zeus import read_measured
from pipelines.zeus.traces import from_frames
from tests.support.sacct_export import write_export

H100 = Path(__file__).with_name("h100_profile.csv")


#: The asset's samples here (its own: ``SUMMARY_SAMPLES``, 20): its report against whatif's of the same samples, 4 of them,
#: a fifth of make test's time for this test.
SAMPLES = 4


def test_the_summary_asset_is_whatifs_report_per_trace(ingested, tmp_path: Path, monkeypatch) -> None:
    paths, _ = ingested
    monkeypatch.setattr(summary_module, "SUMMARY_SAMPLES", SAMPLES)
    train = pl.read_parquet(paths.table("zeus_train_runs"))
    measured_folder = tmp_path / "measured"
    measured_folder.mkdir()
    (measured_folder / "h100.csv").write_text(H100.read_text())
    power = pl.concat([pl.read_parquet(paths.table("zeus_power_profiles")), read_measured(measured_folder).table], how="vertical_relaxed")
    raw = tmp_path / "raw"
    (raw / "clusters").mkdir(parents=True)
    write_export(raw / "clusters" / "lab.sacct", 400, seed=9, energy="measured", span_days=10, timezone="UTC")
    (trace,), _ = tracefiles.user_traces(raw)
    result = trace.read()

    output = own_cluster_summary(dg.build_asset_context(), samples_dask=DaskResource(scheduler="none"), own_cluster_jobs=result.table,
                                 own_cluster_traces=result.summary_row(), zeus_train_runs=train, zeus_power_profiles=power)
    table = validate(output.value, OwnClusterSummary, name="own_cluster_summary")
    assert set(table["row"]) == {"a100", "v100", "a40", "h100", "untyped", "all"} and set(table["trace"]) == {"lab"}
    assert dict(table.select("row", "replayed_on").rows())["h100"] == "h100"  # the measured profile, as whatif --profiles
    assert (table["samples"] == SAMPLES).all()

    report = whatif.run(result, with_measured(from_frames(train, pl.read_parquet(paths.table("zeus_power_profiles"))), [H100], None),
                           whatif.Options(samples=SAMPLES))[0]
    expected = whatif.summary_frame(report)
    assert json.dumps(table.drop("replayed_on").sort("row").to_dicts()) == json.dumps(expected.drop("replayed_on").sort("row").to_dicts())
    saved = output.metadata["energy_saved"].value  # what the UI shows: each trace's saving with its interval
    assert saved["lab"]["energy_saved_pct_interval"] == report["total"]["energy_saved_pct_interval"]
