"""Contracts of a user's own cluster traces: Slurm ``sacct`` exports and generic job-log CSVs.

``own_cluster_jobs`` holds every valid allocation row of every file in ``raw/clusters/`` (pending,
running and CPU-only ones included, told apart by ``category``); ``own_cluster_traces`` holds one
row per file with its line accounting. Rejected rows go to ``quarantine/own_cluster_jobs_bad_rows``
(``pipelines.contracts.sources.Quarantine``). Times are UTC (read in the file's time zone).
The rules that produce these rows are in ``pipelines.ingest.slurm`` and ``pipelines.ingest.joblog``.
"""

from __future__ import annotations

from datetime import UTC, datetime

import dataframely as dy
import polars as pl

from pipelines.contracts.base import one_of
from pipelines.contracts.clusters import trace_column
from pipelines.contracts.limits import (
    EARLIEST_RECORD_S,
    MAX_ALLOCATION_ENERGY_J,
    MAX_GPU_UTIL_PCT,
    MAX_GPUS_PER_JOB,
    MAX_ID_CHARS,
    MAX_JOB_S,
    MAX_NAME_CHARS,
    MAX_TIME_S,
    MAX_USER_CHARS,
)

#: How an allocation counts: replay candidate (GPUs, started and ended), CPU-only, not ended (pending, running,
#: requeued, suspended), or ended without ever starting (cancelled while pending, a node failure before the start).
CATEGORIES: tuple[str, ...] = ("gpu", "cpu_only", "not_ended", "never_started")
#: What the export says about the energy the scheduler measured for an allocation.
ENERGY_STATUSES: tuple[str, ...] = ("measured", "zero", "not_exported")
#: The formats a trace file can have.
FORMATS: tuple[str, ...] = ("sacct", "csv")


#: The span of a scheduler's times: from 2000-01-01 to 2200-01-01 UTC (``limits.py``; the reader also refuses a time more
#: than a day after the read).
EARLIEST_TIME = datetime.fromtimestamp(EARLIEST_RECORD_S, UTC)
LATEST_TIME = datetime.fromtimestamp(MAX_TIME_S, UTC)


def _utc(*, nullable: bool, description: str) -> dy.Datetime:
    return dy.Datetime(time_zone="UTC", time_unit="us", nullable=nullable, min=EARLIEST_TIME, max=LATEST_TIME, description=description)


def _text(limit: int, description: str, *, nullable: bool = True, regex: str | None = None) -> dy.String:
    return dy.String(nullable=nullable, max_length=limit, regex=regex, description=description)


class OwnClusterJobs(dy.Schema):
    """``own_cluster_jobs``: one row per allocation (Slurm job, array element or het-job component) of a user trace."""

    trace = trace_column(primary_key=True)
    job_id = dy.String(
        primary_key=True,
        max_length=MAX_ID_CHARS,
        description="job id: Slurm JobID (123, array element 123_7, pending array 123_[0-31], het component 123+1) or the CSV's job_id",
    )
    line = dy.Int64(min=1, description="line of the row in its source file (the header is line 1)")
    job_id_raw = _text(MAX_ID_CHARS, "Slurm JobIDRaw (an array element's own number); null if not exported")
    job_name = _text(MAX_NAME_CHARS, "job name (sacct JobName, CSV name)")
    user = _text(MAX_USER_CHARS, "user who ran the job")
    account = _text(MAX_NAME_CHARS, "Slurm account")
    slurm_partition = _text(MAX_NAME_CHARS, "Slurm partition (queue)")
    submit_time = _utc(nullable=False, description="submission (UTC)")
    start_time = _utc(nullable=True, description="start (UTC); null: never started (Unknown/None, pending)")
    end_time = _utc(nullable=True, description="end (UTC); null: not ended (Unknown, running)")
    elapsed_s = dy.Float64(nullable=True, min=0, max=MAX_JOB_S, description="Slurm Elapsed (s); null if not exported")
    state = _text(MAX_NAME_CHARS, "state normalised to its first word, upper case (CANCELLED by 12 -> CANCELLED)", nullable=False,
                  regex=r"^[A-Z][A-Z_]*$")
    state_raw = _text(MAX_NAME_CHARS, "state as written in the file", nullable=False)
    exit_code = _text(MAX_NAME_CHARS, "Slurm ExitCode (code:signal)")
    num_nodes = dy.Int64(nullable=True, min=0, max=MAX_GPUS_PER_JOB, description="nodes allocated (Slurm NNodes)")
    num_gpus = dy.Int64(min=0, max=MAX_GPUS_PER_JOB, description="GPUs allocated (AllocTRES gres/gpu, counted once; CSV num_gpus); 0: none")
    gpu_type = dy.String(nullable=True, max_length=MAX_NAME_CHARS, description="GPU type from gres/gpu:<type>=N (several types comma-separated); null: untyped")
    category = one_of(CATEGORIES, description="not_ended: end unknown; never_started: ended, start unknown; cpu_only: started and "
                      "ended, no GPU; gpu: started and ended, with GPUs")
    measured_energy_j = dy.Float64(
        nullable=True, min_exclusive=0, max=MAX_ALLOCATION_ENERGY_J,
        description="energy the scheduler measured for the allocation (J; Slurm ConsumedEnergyRaw, energy= of AllocTRES or "
        "TRESUsageInTot, or the CSV's energy_j); null: none, or exported as 0 (not collected: never a measurement)",
    )  # fmt: skip
    energy_status = one_of(ENERGY_STATUSES, description="measured: measured_energy_j > 0; zero: the export says 0 (energy not "
                           "collected); not_exported: no energy field or an empty one")
    gpu_util_pct = dy.Float64(nullable=True, min=0, max=MAX_GPU_UTIL_PCT, description="GPU utilisation Slurm recorded (gres/gpuutil of TRESUsageInTot, "
                              "highest of the allocation's steps) over its GPUs (%, 100: every GPU busy); null: not exported")

    @dy.rule()
    def end_not_before_start(cls) -> pl.Expr:
        """end_time must not be before start_time"""
        return pl.col("end_time") >= pl.col("start_time")

    @dy.rule()
    def at_most_a_year_long(cls) -> pl.Expr:
        """end_time - start_time is at most a year (limits.MAX_JOB_S)"""
        return (pl.col("end_time") - pl.col("start_time")).dt.total_seconds() <= MAX_JOB_S

    @dy.rule()
    def category_matches_times_and_gpus(cls) -> pl.Expr:
        """category is not_ended exactly when the end is unknown, else never_started when the start is, else cpu_only exactly
        when num_gpus is 0"""
        expected = (pl.when(pl.col("end_time").is_null()).then(pl.lit("not_ended"))
                    .when(pl.col("start_time").is_null()).then(pl.lit("never_started"))
                    .when(pl.col("num_gpus") == 0).then(pl.lit("cpu_only")).otherwise(pl.lit("gpu")))
        return pl.col("category") == expected

    @dy.rule()
    def energy_status_matches_energy(cls) -> pl.Expr:
        """energy_status is measured exactly when measured_energy_j is set"""
        return (pl.col("energy_status") == "measured") == pl.col("measured_energy_j").is_not_null()


def _count(description: str) -> dy.Int64:
    return dy.Int64(min=0, description=description)


class OwnClusterTraces(dy.Schema):
    """``own_cluster_traces``: one row per user trace file, with the account of every one of its lines."""

    trace = trace_column(primary_key=True)
    source_file = dy.String(description="file, relative to raw/ (clusters/<trace>.sacct or .csv)")
    format = one_of(FORMATS, description="sacct (--parsable or --parsable2) or csv (the generic job log)")
    timezone = dy.String(description="IANA time zone the file's naive times were read in (UTC: the default)")
    sha256 = dy.String(regex=r"^[0-9a-f]{64}$", description="sha256 of the file as read")
    lines = _count("lines in the file (a last line without a newline counts)")
    header_lines = dy.Int64(min=0, max=1, description="1, or 0 for a sacct --noheader export read with the field list given")
    allocations = _count("valid allocation rows: every row of own_cluster_jobs of this trace (cpu_only and not_ended included)")
    steps_skipped = _count("Slurm step rows (J.batch, J.extern, J.0, ...): skipped, never jobs")
    quarantined = _count("rows sent to quarantine/own_cluster_jobs_bad_rows")
    cpu_only = _count("ended allocations without GPUs (skipped)")
    not_ended = _count("allocations with an unknown end: pending, running, requeued, suspended (skipped)")
    never_started = _count("allocations that ended without starting: cancelled while pending, a node failure before the start (skipped)")
    gpu_allocations = _count("started and ended GPU allocations, any state")
    completed_gpu_allocations = _count("ended GPU allocations in state COMPLETED with end > start: the jobs the replay can use")
    energy_source = dy.String(nullable=True, description="the export's field of energy accounting (ConsumedEnergyRaw, AllocTRES, "
                              "TRESUsageInTot, TRESUsageInTot of the steps, energy_j); null: none")
    zero_energy_allocations = _count("allocations whose exported energy is 0 (the scheduler collected none; not a measurement)")
    measured_energy_allocations = _count("allocations with a measured energy (> 0)")

    @dy.rule()
    def every_line_accounted_for(cls) -> pl.Expr:
        """lines = header_lines + allocations + steps_skipped + quarantined"""
        return pl.col("lines") == pl.col("header_lines") + pl.col("allocations") + pl.col("steps_skipped") + pl.col("quarantined")

    @dy.rule()
    def allocations_split_into_categories(cls) -> pl.Expr:
        """allocations = cpu_only + not_ended + never_started + gpu_allocations"""
        return pl.col("allocations") == pl.col("cpu_only") + pl.col("not_ended") + pl.col("never_started") + pl.col("gpu_allocations")


def _interval(description: str, *, nullable: bool = True) -> dict[str, dy.Float64]:
    """A figure's median over the samples and its 90 % interval: ``<name>``, ``<name>_p05``, ``<name>_p95``."""
    return {"": dy.Float64(nullable=nullable, description=f"{description}: median over the samples"),
            "_p05": dy.Float64(nullable=nullable, description=f"{description}: 5th percentile over the samples"),
            "_p95": dy.Float64(nullable=nullable, description=f"{description}: 95th percentile over the samples")}


#: The figures of a row of ``own_cluster_summary``, each with its interval (``whatif`` prints and --json gives the same).
SUMMARY_FIGURES: dict[str, str] = {
    "default_kwh": "energy under Default (kWh)",
    "zeus_kwh": "energy under Zeus (kWh)",
    "energy_saved_kwh": "energy Zeus saves (kWh)",
    "energy_saved_pct": "energy Zeus saves (% of Default)",
    "time_saved_pct": "job time Zeus saves (% of Default; negative: longer)",
    "steady_state_saved_pct": "energy Zeus saves once every recurring group's optimizer has converged (% of Default; the "
                              "workload x GPU asymptote weighted by the row's Default energy per workload)",
    "default_peak_kw": "Default's peak cluster power (kW, highest 5-minute mean)",
    "zeus_peak_kw": "Zeus's peak cluster power (kW)",
    "headroom_gpus": "more GPUs under Default's peak at Zeus's p99",
    "fleet_energy_saved_pct": "energy Zeus saves counting the cluster's idle GPUs too (% of Default's jobs + idle; null: no "
                              "cluster size or idle draw)",
}


class OwnClusterSummary(dy.Schema):
    """``own_cluster_summary``: per user trace, what ``whatif`` reports: a row per exported GPU type (or GPU) and the cluster's.

    Every figure is the median over ``samples`` draws of the workload assignment and the
    optimizer's seeds, with its 5th and 95th percentile (``pipelines.clusters.samples``). The
    measured columns compare the scheduler's own meter with the model (on the row the model of the
    measured jobs is: ``all`` as exported, else the first GPU); null where the export has none.
    """

    trace = trace_column(primary_key=True)
    row = dy.String(primary_key=True, description="exported GPU type (untyped: none), the GPU (every job on each), or all (the cluster)")
    gpu_mode = one_of(("as-exported", "every-gpu"), description="as-exported: each job on its own GPU's profile, else the fallback; "
                      "every-gpu: every job on each GPU")
    replayed_on = dy.String(nullable=True, description="profile the row's jobs replay on; null for all")
    own_profile = dy.Bool(nullable=True, description="the row's GPU type has its own profile (false: the fallback); null for all")
    energy_model = one_of(("anchored", "runtime-ratio"), description="anchored: each job's energy is the replay's power for its "
                          "workload and GPU x its GPU-hours as exported; runtime-ratio: sized as the Zeus artifact (pipelines.clusters.anchoring)")
    jobs = dy.Int64(min=0, description="COMPLETED GPU jobs replayed in the row")
    gpu_hours = dy.Float64(min=0, description="their GPU-hours as exported (duration x GPUs, h)")
    low_util_jobs = dy.Int64(min=0, description="COMPLETED GPU jobs below the GPU utilisation threshold (idle allocations, not replayed)")
    low_util_gpu_hours = dy.Float64(min=0, description="their GPU-hours as exported (h)")
    low_util_kwh = dy.Float64(nullable=True, min=0, description="their energy at the profile GPU's idle draw (kWh); null: no idle draw")
    samples = dy.Int64(min=1, description="draws behind the medians and intervals")
    seed = dy.Int64(min=0, description="base seed of the draws")
    cluster_gpus = dy.Int64(nullable=True, min=1, description="the cluster's GPUs behind the idle draw (pipelines.clusters.capacity)")
    locals().update({f"{name}{suffix}": column for name, description in SUMMARY_FIGURES.items()
                     for suffix, column in _interval(description).items()})
    measured_jobs = dy.Int64(nullable=True, min=0, description="replayed jobs with a measured energy (> 0)")
    measured_kwh = dy.Float64(nullable=True, min=0, description="their energy as the scheduler measured it (kWh)")
    locals().update({f"modelled_default_kwh{suffix}": column
                     for suffix, column in _interval("the modelled Default energy of the same jobs (kWh)").items()})
    measured_ratio_median = dy.Float64(nullable=True, description="measured / modelled Default per job: median over the jobs")
    measured_ratio_p25 = dy.Float64(nullable=True, description="measured / modelled Default per job: 25th percentile over the jobs")
    measured_ratio_p75 = dy.Float64(nullable=True, description="measured / modelled Default per job: 75th percentile over the jobs")
