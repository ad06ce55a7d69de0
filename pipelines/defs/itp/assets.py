"""Microsoft ITP and ElasticFlow traces: the raw tarballs, the two job tables and their published facts."""

import dagster as dg
import polars as pl

from pipelines.defs.shared.ingest_assets import CheckOutcome, TableCheck, ingest_asset, raw_asset
from pipelines.ingest import itp

raw_itp_traces = raw_asset("raw_itp_traces", "itp", "Microsoft ITP raw and ElasticFlow tarballs, unpacked into separate folders.")


def _itp_totals(jobs: pl.DataFrame) -> CheckOutcome:
    hours = itp.gpu_hours(jobs)
    clusters = jobs["cluster"].n_unique()
    passed = jobs.height == itp.ITP_JOBS and round(hours, 1) == itp.ITP_GPU_HOURS and clusters == len(itp.ITP_CLUSTERS)
    return CheckOutcome(
        passed,
        f"{jobs.height} jobs, {hours:,.1f} GPU-hours, {clusters} clusters "
        f"(published: {itp.ITP_JOBS}, {itp.ITP_GPU_HOURS:,.1f}, {len(itp.ITP_CLUSTERS)})",
        {"jobs": jobs.height, "gpu_hours": hours, "clusters": clusters},
    )


itp_jobs = ingest_asset(
    itp.ITP_SPEC,
    description="Microsoft ITP raw job traces, 10 clusters, 2021-03-04 to 2021-05-03.",
    raw=raw_itp_traces,
    read=lambda p: itp.read_itp(p.raw / "itp/raw-traces"),
    sources=["itp/raw-traces.tar.gz"],
    checks=[
        TableCheck(
            "published_totals", "69,351 jobs, 1,632,719.7 GPU-hours, 10 clusters (elasticflow-traces README).", _itp_totals, blocking=True
        )
    ],
)
elasticflow_jobs = ingest_asset(
    itp.ELASTICFLOW_SPEC,
    description="ElasticFlow traces: ITP jobs with synthetic model/batch/iteration/deadline labels; 195job.csv as cluster 'testbed'.",
    raw=raw_itp_traces,
    read=lambda p: itp.read_elasticflow(p.raw / "itp/elasticflow-traces"),
    sources=["itp/elasticflow-traces.tar.gz"],
)
@dg.asset_check(
    asset=dg.AssetKey("elasticflow_jobs"),
    additional_ins={"itp_jobs": dg.AssetIn(key=dg.AssetKey("itp_jobs"))},
    blocking=True,
    description="ElasticFlow's cluster01..10 hold exactly the ITP raw jobs (id, submission, duration, GPUs).",
)
def elasticflow_same_jobs_as_itp(elasticflow_jobs: pl.DataFrame, itp_jobs: pl.DataFrame) -> dg.AssetCheckResult:
    diff = itp.elasticflow_vs_itp(elasticflow_jobs, itp_jobs)
    return dg.AssetCheckResult(passed=not any(diff.values()), metadata=diff)
