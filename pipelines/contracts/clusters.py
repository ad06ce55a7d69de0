"""Contracts of the cluster layer: cluster traces as Zeus workloads, and the Zeus replay over them.

Energy is in J for the whole job (per-GPU energy x num_gpu), time in s, power limits in W.
"""

from __future__ import annotations

import dataframely as dy
import polars as pl

from pipelines.contracts.base import one_of
from pipelines.contracts.limits import MAX_GPUS_PER_JOB, MAX_ID_CHARS, MAX_NAME_CHARS, MAX_TIME_S
from pipelines.vocabulary import POLICIES, REPLAYED_POLICIES, TRACE_NAME_REGEX, ZEUS_DATASETS


def trace_column(*, primary_key: bool = False) -> dy.String:
    """The ``trace`` column of the cluster tables: a public trace or a user trace's name."""
    return dy.String(
        primary_key=primary_key,
        regex=TRACE_NAME_REGEX,
        description="trace: alibaba, itp, elasticflow, acme, or a user trace (raw/clusters/<trace>.sacct or .csv)",
    )


class ClusterWorkloadJobs(dy.Schema):
    """``cluster_workload_jobs``: every cluster trace's jobs as recurring groups of Zeus workloads (docs: Cluster traces and replay)."""

    trace = trace_column(primary_key=True)
    cluster = dy.String(primary_key=True, max_length=MAX_NAME_CHARS, description="cluster of the trace (alibaba-pai, cluster01..10, "
                        "testbed, seren, kalos; a user trace: its name)")
    group = dy.String(max_length=MAX_ID_CHARS, description="recurring group: jobs replayed as recurrences of one job")
    job_id = dy.String(primary_key=True, max_length=MAX_ID_CHARS, description="job id in the trace (alibaba: group#k in start order)")
    start_time_s = dy.Float64(min=0, max=MAX_TIME_S,
                              description="job start (s; acme and user traces: since 1970 UTC, others: since the trace's origin)")
    end_time_s = dy.Float64(min=0, max=MAX_TIME_S, description="job end (s, same origin as start_time_s)")
    num_gpu = dy.Int64(min=0, max=MAX_GPUS_PER_JOB, description="GPUs of the job (alibaba: 1, not in the file)")
    dataset = one_of(ZEUS_DATASETS, description="Zeus workload the job plays")
    runtime_ratio = dy.Float64(min=0, description="job runtime / mean runtime of the trace's jobs of the same workload (ratio)")
    line = dy.Int64(nullable=True, min=1, description="line of the job in its user trace's file (own_cluster_jobs.line; the "
                    "header is line 1); null for the public traces")

    @dy.rule()
    def end_not_before_start(cls) -> pl.Expr:
        """end_time_s must not be before start_time_s"""
        return pl.col("end_time_s") >= pl.col("start_time_s")


class ZeusClusterHistory(dy.Schema):
    """``zeus_cluster_history``: one row per simulated run of Zeus, Default and Grid Search replaying a trace on a GPU."""

    trace = trace_column()
    gpu = dy.String(description="GPU whose power trace was simulated")
    policy = one_of(REPLAYED_POLICIES, description="who chose the configuration: zeus, default or grid-search")
    cluster = dy.String(description="cluster of the trace")
    group = dy.String(description="recurring group of the job")
    job_id = dy.String(description="job id in the trace")
    dataset = one_of(ZEUS_DATASETS, description="Zeus workload the job plays")
    num_gpu = dy.Int64(min=0, description="GPUs of the job")
    attempt = dy.Int64(min=0, description="run of this job: 0 first, 1.. retries after a missed target")
    start_time_s = dy.Float64(description="run start (s; a retry starts when the run before it ended)")
    end_time_s = dy.Float64(description="run end (s)")
    batch_size = dy.Int64(min_exclusive=0, description="batch size of the run (samples)")
    power_limit_w = dy.Int64(min_exclusive=0, description="GPU power limit of the run (W)")
    energy_j = dy.Float64(min=0, description="energy of the run, all GPUs of the job, scaled by runtime_ratio (J)")
    time_s = dy.Float64(min=0, description="duration of the run, scaled by runtime_ratio (s)")
    reached = dy.Bool(description="the run reached the target metric")


def _savings(quantity: str, baseline: str) -> dy.Float64:
    return dy.Float64(
        nullable=True,
        allow_nan=True,
        allow_inf=True,
        description=f"{quantity} Zeus saves vs {baseline}: 100 x (1 - Zeus / {baseline}) (%; NaN when both are 0)",
    )


class ZeusClusterSummary(dy.Schema):
    """``zeus_cluster_summary``: per trace, workload and GPU, each policy's energy and time and Zeus's savings."""

    trace = trace_column(primary_key=True)
    dataset = one_of(ZEUS_DATASETS, primary_key=True, description="Zeus workload")
    gpu = dy.String(primary_key=True, description="GPU simulated")
    jobs = dy.Int64(min=0, description="trace jobs of this workload (distinct cluster and job id)")
    energy_j_zeus = dy.Float64(nullable=True, min=0, description="energy of every run under zeus (J)")
    energy_j_default = dy.Float64(nullable=True, min=0, description="energy of every run under default (J)")
    energy_j_grid_search = dy.Float64(nullable=True, min=0, description="energy of every run under grid-search (J)")
    energy_mwh_zeus = dy.Float64(nullable=True, min=0, description="energy under zeus (MWh)")
    energy_mwh_default = dy.Float64(nullable=True, min=0, description="energy under default (MWh)")
    energy_mwh_grid_search = dy.Float64(nullable=True, min=0, description="energy under grid-search (MWh)")
    time_s_zeus = dy.Float64(nullable=True, min=0, description="summed run time under zeus (s)")
    time_s_default = dy.Float64(nullable=True, min=0, description="summed run time under default (s)")
    time_s_grid_search = dy.Float64(nullable=True, min=0, description="summed run time under grid-search (s)")
    energy_savings_vs_default_pct = _savings("energy", "Default")
    time_savings_vs_default_pct = _savings("time", "Default")
    energy_savings_vs_grid_search_pct = _savings("energy", "Grid Search")
    time_savings_vs_grid_search_pct = _savings("time", "Grid Search")


class ZeusSingleJobSweep(dy.Schema):
    """``zeus_single_job_sweep``: single recurring jobs under each policy, one row per recurrence, vs the Oracle.

    The Oracle columns are the hindsight-best configuration's expected energy, time and cost per
    recurrence; regrets and ratios compare the cumulative values after recurrence + 1 recurrences
    with recurrence + 1 times the Oracle's (``pipelines.clusters.simulate.single_job_sweep``).
    """

    gpu = dy.String(description="GPU simulated")
    dataset = one_of(ZEUS_DATASETS, description="Zeus workload")
    policy = one_of(POLICIES, description="zeus, default, grid-search or oracle")
    eta = dy.Float64(min=0, max=1, description="energy weight of the cost (Zeus eta knob, fraction)")
    beta = dy.Float64(min_exclusive=0, allow_inf=True, description="early stopping at beta x the minimum cost (inf: never)")
    seed = dy.Int64(description="random seed of the simulation")
    recurrence = dy.Int64(min=0, description="recurrence of the job (0-based)")
    tries = dy.Int64(min=1, description="runs in this recurrence (1 + retries)")
    batch_size = dy.Int64(min_exclusive=0, description="batch size of the recurrence's last run (samples)")
    power_limit_w = dy.Int64(min_exclusive=0, description="power limit of the recurrence's last run (W)")
    energy_j = dy.Float64(min=0, description="energy of the recurrence's runs (J)")
    time_s = dy.Float64(min=0, description="time of the recurrence's runs (s)")
    cost = dy.Float64(min=0, description="cost of the recurrence: eta x energy + (1 - eta) x MaxPower x time (J)")
    cum_energy_j = dy.Float64(min=0, description="energy of recurrences 0..this one (J)")
    cum_time_s = dy.Float64(min=0, description="time of recurrences 0..this one (s)")
    cum_cost = dy.Float64(min=0, description="cost of recurrences 0..this one (J)")
    oracle_energy_j = dy.Float64(min=0, description="expected energy per recurrence of the hindsight-best configuration (J)")
    oracle_time_s = dy.Float64(min=0, description="expected time per recurrence of the hindsight-best configuration (s)")
    oracle_cost = dy.Float64(min=0, description="expected cost per recurrence of the hindsight-best configuration (J)")
    energy_regret_j = dy.Float64(description="cum_energy_j - (recurrence + 1) x oracle_energy_j (J)")
    time_regret_s = dy.Float64(description="cum_time_s - (recurrence + 1) x oracle_time_s (s)")
    cumulative_regret = dy.Float64(description="cum_cost - (recurrence + 1) x oracle_cost: the cost regret (J)")
    energy_vs_oracle = dy.Float64(min=0, description="cum_energy_j / ((recurrence + 1) x oracle_energy_j) (ratio)")
    time_vs_oracle = dy.Float64(min=0, description="cum_time_s / ((recurrence + 1) x oracle_time_s) (ratio)")
