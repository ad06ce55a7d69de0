"""Cluster traces in one job frame, and the statistics the trace-characterization figures draw.

Plain polars, no plotting. Every trace becomes rows of ``TraceJobs`` (GPU jobs only):

* ITP (``itp_jobs``): clusters cluster01..10; submit = submission_time (s since the collection
  start, 2021-03-04); no queue or final state.
* ElasticFlow (``elasticflow_jobs``): its cluster01..10 are exactly the ITP jobs (asset check
  ``elasticflow_same_jobs_as_itp``), so only its own 195-job testbed trace is added, as
  "ElasticFlow testbed" (same time origin as ITP).
* AcmeTrace (``acme_jobs``): Seren and Kalos as two traces; GPU jobs (gpu_num > 0) only, as in
  the AcmeTrace paper; submit = seconds since midnight UTC of the trace's first submission;
  queue = ``queue`` (s); state with TIMEOUT and NODE_FAIL counted as FAILED.
* Alibaba (``alibaba_groups``): duration = end - start; submit = start (s since trace start);
  no GPU count, queue or state.
* Your own traces (``own_cluster_jobs``): one trace per name, its GPU allocations that started;
  cluster = the Slurm partition (else the trace's name); submit = seconds since midnight UTC of
  the trace's first submission; queue = start - submit; state COMPLETED, CANCELLED, FAILED (every
  other end state) or null (still running).

A trace with no rows is left out and named in the notes ``cluster_jobs`` returns.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from pipelines.contracts.base import empty, polars_schema
from pipelines.contracts.figures import StateShares, SummaryStatistics, TraceJobs
from pipelines.vocabulary.units import S_PER_DAY, S_PER_H, duration_s

#: Columns, types and units of the job frame: the contract ``TraceJobs``.
JOB_COLUMNS = polars_schema(TraceJobs)
TRACE_ORDER: tuple[str, ...] = ("ITP", "ElasticFlow testbed", "Acme Seren", "Acme Kalos", "Alibaba")
ACME_TRACES: tuple[str, ...] = ("Acme Seren", "Acme Kalos")
ITP_ORIGIN = "2021-03-04 (ITP collection start)"
STATES: tuple[str, ...] = ("COMPLETED", "CANCELLED", "FAILED")
#: The raw files without which the Acme / Alibaba traces are empty (for notes).
ACME_FILES = "raw/acme/trace_seren.csv and raw/acme/trace_kalos.csv"
ALIBABA_FILE = "raw/zeus/alibaba_groups.csv.xz"


def _conform(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.select([pl.col(c).cast(t) if c in frame.columns else pl.lit(None, dtype=t).alias(c) for c, t in JOB_COLUMNS.items()])


def itp_jobs(itp: pl.DataFrame) -> pl.DataFrame:
    return _conform(
        itp.filter(pl.col("num_gpu") > 0).select(
            pl.lit("ITP").alias("trace"), "cluster", pl.lit(ITP_ORIGIN).alias("origin"),
            pl.col("submission_time").alias("submit_s"), pl.col("duration").alias("duration_s"), "num_gpu",
        )
    )


def elasticflow_testbed_jobs(elasticflow: pl.DataFrame) -> pl.DataFrame:
    return _conform(
        elasticflow.filter((pl.col("cluster") == "testbed") & (pl.col("num_gpu") > 0)).select(
            pl.lit("ElasticFlow testbed").alias("trace"), "cluster", pl.lit(ITP_ORIGIN).alias("origin"),
            pl.col("submission_time").alias("submit_s"), pl.col("duration").alias("duration_s"), "num_gpu",
        )
    )


def acme_gpu_jobs(acme: pl.DataFrame) -> pl.DataFrame:
    """GPU jobs of ``acme_jobs``, one trace per cluster, submit times from that cluster's first midnight (UTC)."""
    gpu = acme.filter(pl.col("gpu_num") > 0)
    if gpu.height == 0:
        return empty(TraceJobs)
    day0 = pl.col("submit_time").min().over("cluster").dt.truncate("1d")
    return _conform(
        gpu.select(
            (pl.lit("Acme ") + pl.col("cluster").str.to_titlecase()).alias("trace"),
            pl.col("cluster").str.to_titlecase().alias("cluster"),
            (day0.dt.strftime("%Y-%m-%d") + pl.lit(" 00:00 UTC")).alias("origin"),
            duration_s(pl.col("submit_time") - day0).alias("submit_s"),
            pl.col("duration").alias("duration_s"),
            pl.col("gpu_num").alias("num_gpu"),
            pl.col("queue").alias("queue_s"),
            pl.when(pl.col("state").is_in(["TIMEOUT", "NODE_FAIL"])).then(pl.lit("FAILED")).otherwise(pl.col("state")).alias("state"),
        )
    )


def alibaba_jobs(groups: pl.DataFrame) -> pl.DataFrame:
    return _conform(
        groups.select(
            pl.lit("Alibaba").alias("trace"), pl.lit("all groups").alias("cluster"), pl.lit("trace start").alias("origin"),
            pl.col("start_time").alias("submit_s"), (pl.col("end_time") - pl.col("start_time")).alias("duration_s"),
        )
    )


def _seconds(later: str, earlier: str) -> pl.Expr:
    return duration_s(pl.col(later) - pl.col(earlier))


def own_jobs(own: pl.DataFrame) -> pl.DataFrame:
    """GPU allocations of ``own_cluster_jobs`` that started, one trace per name (see the module docstring)."""
    gpu = own.filter((pl.col("num_gpus") > 0) & pl.col("start_time").is_not_null())
    if gpu.height == 0:
        return empty(TraceJobs)
    day0 = pl.col("submit_time").min().over("trace").dt.truncate("1d")
    state = (pl.when(pl.col("end_time").is_null()).then(None)
             .when(pl.col("state").is_in(["COMPLETED", "CANCELLED"])).then(pl.col("state")).otherwise(pl.lit("FAILED")))
    return _conform(
        gpu.select(
            pl.col("trace"),
            pl.coalesce("slurm_partition", "trace").alias("cluster"),
            (day0.dt.strftime("%Y-%m-%d") + pl.lit(" 00:00 UTC")).alias("origin"),
            duration_s(pl.col("submit_time") - day0).alias("submit_s"),
            _seconds("end_time", "start_time").alias("duration_s"),
            pl.col("num_gpus").alias("num_gpu"),
            _seconds("start_time", "submit_time").alias("queue_s"),
            state.alias("state"),
        )
    )


def cluster_jobs(
    itp: pl.DataFrame, elasticflow: pl.DataFrame, acme: pl.DataFrame, alibaba: pl.DataFrame, own: pl.DataFrame | None = None
) -> tuple[pl.DataFrame, list[str]]:
    """All traces as GPU jobs in ``JOB_COLUMNS`` (``own``: your own traces, ``own_cluster_jobs``), and one note per trace empty here."""
    parts = {
        "ITP": itp_jobs(itp),
        "ElasticFlow testbed": elasticflow_testbed_jobs(elasticflow),
        "AcmeTrace (Seren, Kalos)": acme_gpu_jobs(acme),
        "Alibaba": alibaba_jobs(alibaba),
    }
    if own is not None and own.height:
        parts["your traces"] = own_jobs(own)
    hints = {"AcmeTrace (Seren, Kalos)": f"needs {ACME_FILES}", "Alibaba": f"needs {ALIBABA_FILE}"}
    notes = [f"{name}: no jobs, left out ({hints.get(name, 'empty input table')})" for name, part in parts.items() if part.height == 0]
    return pl.concat(list(parts.values())), notes


def traces_present(jobs: pl.DataFrame, order: Sequence[str] = TRACE_ORDER) -> list[str]:
    present = set(jobs["trace"].unique().to_list())
    return [t for t in order if t in present] + sorted(present - set(order))


def ecdf(jobs: pl.DataFrame, value: str, by: Sequence[str], weight: str | None = None) -> pl.DataFrame:
    """Empirical CDF of ``value`` per group ``by``: one row per distinct value, ``cdf`` = share <= value.

    With ``weight`` the share is of the summed weight (e.g. GPU time), else of jobs. Null values
    (and null weights) are left out. Columns: *by, value, cdf (fraction in (0, 1]), n (rows behind the group).
    """
    keep = pl.col(value).is_not_null() & (pl.col(weight).is_not_null() if weight else pl.lit(True))
    total = pl.col(weight).sum() if weight else pl.len()
    return (
        jobs.filter(keep)
        .group_by([*by, value])
        .agg(total.cast(pl.Float64).alias("_w"), pl.len().alias("_n"))
        .sort([*by, value])
        .with_columns(
            (pl.col("_w").cum_sum().over(list(by)) / pl.col("_w").sum().over(list(by))).alias("cdf"),
            pl.col("_n").sum().over(list(by)).alias("n"),
        )
        .drop("_w", "_n")
    )


def submissions(jobs: pl.DataFrame, short_span_s: float = 7 * S_PER_DAY) -> pl.DataFrame:
    """Jobs submitted per bin, per trace and cluster; bins are days, or hours for a trace spanning < ``short_span_s``.

    Columns: trace, cluster, origin, bin (``"day"`` or ``"hour"``), bin_start (bins since origin), jobs.
    """
    span = pl.col("submit_s").max().over("trace") - pl.col("submit_s").min().over("trace")
    width = pl.when(span < short_span_s).then(pl.lit(S_PER_H)).otherwise(pl.lit(S_PER_DAY))
    return (
        jobs.filter(pl.col("submit_s").is_not_null())
        .with_columns(
            pl.when(span < short_span_s).then(pl.lit("hour")).otherwise(pl.lit("day")).alias("bin"),
            (pl.col("submit_s") / width).floor().cast(pl.Int64).alias("bin_start"),
        )
        .group_by("trace", "cluster", "origin", "bin", "bin_start")
        .len("jobs")
        .sort("trace", "cluster", "bin_start")
    )


# ---------------------------------------------------------------------------------------------
# AcmeTrace: the published cluster_summary and the same statistics from our own ingest

#: (column of cluster_summary, label, unit) of the statistics the summary figure draws.
SUMMARY_STATISTICS: tuple[tuple[str, str, str], ...] = (
    ("job_num", "jobs", "count"),
    ("gpu_job_num", "GPU jobs", "count"),
    ("avg_run_time_gpu", "mean GPU-job duration", "s"),
    ("med_run_time_gpu", "median GPU-job duration", "s"),
    ("max_run_time_gpu", "longest GPU job", "s"),
    ("avg_que_time_gpu", "mean queueing delay", "s"),
    ("med_que_time_gpu", "median queueing delay", "s"),
    ("avg_gpu_num", "mean GPUs per GPU job", "GPUs"),
    ("med_gpu_num", "median GPUs per GPU job", "GPUs"),
    ("max_gpu", "most GPUs of one job", "GPUs"),
)
_RATE_COLUMNS: dict[tuple[str, str], str] = {
    ("GPU jobs", "COMPLETED"): "complete_rate_gpu",
    ("GPU jobs", "CANCELLED"): "cancel_rate_gpu",
    ("GPU jobs", "FAILED"): "fail_rate_gpu",
    ("GPU time", "COMPLETED"): "complete_rate_gpu_time",
    ("GPU time", "CANCELLED"): "cancel_rate_gpu_time",
    ("GPU time", "FAILED"): "fail_rate_gpu_time",
}
PUBLISHED = "published"
INGEST = "our ingest"


def acme_summary_from_jobs(acme: pl.DataFrame) -> pl.DataFrame:
    """``acme_cluster_summary``'s columns computed from ``acme_jobs`` (one row per cluster present).

    GPU job: gpu_num > 0, CPU job: gpu_num = 0. Rates are shares of GPU jobs (or of their GPU time)
    by final state, TIMEOUT and NODE_FAIL counted as failed. Times in s, GPU time in GPU-s; nulls
    (a job that never started) are left out of means and medians.
    """
    failed = pl.col("state").is_in(["FAILED", "TIMEOUT", "NODE_FAIL"])
    gpu, cpu = pl.col("gpu_num") > 0, pl.col("gpu_num") == 0

    def state_rates(mask: pl.Expr, suffix: str) -> list[pl.Expr]:
        n = mask.sum()
        return [
            ((mask & (pl.col("state") == "COMPLETED")).sum() / n).alias(f"complete_rate_{suffix}"),
            ((mask & (pl.col("state") == "CANCELLED")).sum() / n).alias(f"cancel_rate_{suffix}"),
            ((mask & failed).sum() / n).alias(f"fail_rate_{suffix}"),
        ]

    if acme.height == 0:
        return pl.DataFrame(schema={"cluster": pl.String, **{c: pl.Float64 for c, _, _ in SUMMARY_STATISTICS}})
    gpu_time = pl.col("gpu_time").filter(gpu).sum()
    by_state_time = {
        "complete": pl.col("gpu_time").filter(gpu & (pl.col("state") == "COMPLETED")).sum(),
        "cancel": pl.col("gpu_time").filter(gpu & (pl.col("state") == "CANCELLED")).sum(),
        "fail": pl.col("gpu_time").filter(gpu & failed).sum(),
    }
    frame = acme.group_by("cluster").agg(
        pl.len().alias("job_num"),
        cpu.sum().alias("cpu_job_num"),
        gpu.sum().alias("gpu_job_num"),
        pl.col("duration").filter(gpu).mean().alias("avg_run_time_gpu"),
        pl.col("queue").filter(gpu).mean().alias("avg_que_time_gpu"),
        pl.col("gpu_num").filter(gpu).mean().alias("avg_gpu_num"),
        pl.col("duration").filter(gpu).median().alias("med_run_time_gpu"),
        pl.col("queue").filter(gpu).median().alias("med_que_time_gpu"),
        pl.col("gpu_num").filter(gpu).median().alias("med_gpu_num"),
        pl.col("duration").filter(gpu).max().cast(pl.Float64).alias("max_run_time_gpu"),
        pl.col("gpu_num").max().cast(pl.Float64).alias("max_gpu"),
        *state_rates(gpu, "gpu"),
        *[v.alias(f"{k}_gpu_time") for k, v in by_state_time.items()],
        *[(v / gpu_time).alias(f"{k}_rate_gpu_time") for k, v in by_state_time.items()],
        pl.col("duration").filter(cpu).mean().alias("avg_run_time_cpu"),
        pl.col("queue").filter(cpu).mean().alias("avg_que_time_cpu"),
        pl.col("duration").filter(cpu).median().alias("med_run_time_cpu"),
        pl.col("queue").filter(cpu).median().alias("med_que_time_cpu"),
        *state_rates(cpu, "cpu"),
    )
    order = {"seren": 0, "kalos": 1}
    return (
        frame.with_columns(pl.col("cluster").str.to_titlecase())
        .sort(pl.col("cluster").str.to_lowercase().replace_strict(order, default=9, return_dtype=pl.Int64))
    )


def summary_statistics(published: pl.DataFrame, computed: pl.DataFrame) -> pl.DataFrame:
    """``SUMMARY_STATISTICS`` of both summaries in long form: cluster, source, statistic, label, unit, value."""
    parts = []
    for frame, source in ((published, PUBLISHED), (computed, INGEST)):
        for column, label, unit in SUMMARY_STATISTICS:
            if column in frame.columns and frame.height:
                parts.append(frame.select(
                    "cluster", pl.lit(source).alias("source"), pl.lit(column).alias("statistic"), pl.lit(label).alias("label"),
                    pl.lit(unit).alias("unit"), pl.col(column).cast(pl.Float64).alias("value"),
                ))
    return pl.concat(parts).filter(pl.col("value").is_not_null()) if parts else empty(SummaryStatistics)


def state_shares(published: pl.DataFrame, computed: pl.DataFrame) -> pl.DataFrame:
    """Final-state shares of GPU jobs and of GPU time: cluster, source, basis, state, share (fraction).

    Clusters whose summary has no state rates (PAI publishes none) are left out.
    """
    parts = []
    for frame, source in ((published, PUBLISHED), (computed, INGEST)):
        for (basis, state), column in _RATE_COLUMNS.items():
            if column in frame.columns and frame.height:
                parts.append(frame.select(
                    "cluster", pl.lit(source).alias("source"), pl.lit(basis).alias("basis"), pl.lit(state).alias("state"),
                    pl.col(column).cast(pl.Float64).alias("share"),
                ))
    return pl.concat(parts).filter(pl.col("share").is_not_null()) if parts else empty(StateShares)
