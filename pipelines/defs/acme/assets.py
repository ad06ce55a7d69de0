"""AcmeTrace (Seren, Kalos): the raw files, the job table and the published cluster summary."""

import dagster as dg
import polars as pl

from pipelines.defs.shared.ingest_assets import CheckOutcome, TableCheck, ingest_asset, raw_asset
from pipelines.home.paths import ProjectPaths
from pipelines.ingest import acme
from pipelines.ingest.common import IngestResult

raw_acme_traces = raw_asset("raw_acme_traces", "acme", "AcmeTrace cluster_summary.csv and the Seren/Kalos job CSVs (optional).")


def _acme_identities(jobs: pl.DataFrame) -> CheckOutcome:
    counts = acme.identity_violations(jobs)
    bad = int(counts.select(pl.sum("duration_ne_end_minus_start") + pl.sum("gpu_time_ne_duration_x_gpus")).item()) if counts.height else 0
    return CheckOutcome(
        bad == 0,
        "duration = end - start (within 1 s) and gpu_time = duration x gpu_num",
        {"violations_by_cluster": counts.to_dicts()},
    )


def _read_acme(p: ProjectPaths) -> IngestResult | None:
    seren, kalos = p.raw / "acme/trace_seren.csv", p.raw / "acme/trace_kalos.csv"
    if not seren.exists() and not kalos.exists():
        return None
    return acme.read_jobs(seren if seren.exists() else None, kalos if kalos.exists() else None)


acme_jobs = ingest_asset(
    acme.SEREN_SPEC,
    description="AcmeTrace Seren and Kalos job traces in one schema, timestamps in UTC. Empty until the job CSVs are supplied.",
    raw=raw_acme_traces,
    read=_read_acme,
    optional_sources=["acme/trace_seren.csv", "acme/trace_kalos.csv"],
    checks=[
        TableCheck(
            "duration_and_gpu_time_identities",
            "duration = end - start and gpu_time = duration x gpu_num (AcmeTrace definitions). Warns when a row violates either (the "
            "documented Kalos example row does: its duration is end - submit); the rows are kept and counted per cluster.",
            _acme_identities,
            severity=dg.AssetCheckSeverity.WARN,
        )
    ],
)
acme_cluster_summary = ingest_asset(
    acme.SUMMARY_SPEC,
    description="AcmeTrace's published per-cluster summary (Seren, Kalos; Philly, Helios, PAI for comparison).",
    raw=raw_acme_traces,
    read=lambda p: acme.read_cluster_summary(p.raw / "acme/cluster_summary.csv"),
    sources=["acme/cluster_summary.csv"],
)
