"""Contracts of the figure data: ``figures/<name>.parquet``, exactly the numbers each figure plots.

Some figures plot rows of a stored table and reuse its contract (``FigureAsset.data`` in ``pipelines.figures.catalog``);
the rest are declared here, one per shape. The intermediate frames the energy and trace
figures are computed from (``ConfigExpectations``, ``TraceJobs``) are declared here too.
"""

from __future__ import annotations

import dataframely as dy

from pipelines.contracts.base import one_of, subset
from pipelines.contracts.clusters import ZeusClusterSummary, ZeusSingleJobSweep
from pipelines.contracts.sources import ZeusPowerProfiles
from pipelines.vocabulary import ZEUS_DATASETS

# ---------------------------------------------------------------------------------------------
# energy: expected time and energy to accuracy from the Zeus traces


class ConfigExpectations(dy.Schema):
    """Expected TTA and ETA of every (gpu, workload, batch size, power limit) that reaches the target.

    Definitions in ``pipelines.figures.energy_data``.
    """

    gpu = dy.String(description="GPU of the power trace")
    dataset = one_of(ZEUS_DATASETS, description="Zeus workload")
    network = dy.String(description="DNN model")
    optimizer = dy.String(description="optimizer name, lower case")
    target_metric = dy.Float64(description="target validation metric of the workload")
    batch_size = dy.Int64(min_exclusive=0, description="batch size (samples)")
    power_limit = dy.Int64(min_exclusive=0, description="GPU power limit (W)")
    runs = dy.UInt32(min_exclusive=0, description="runs of this batch size in the train trace at this target")
    runs_reached = dy.UInt32(min_exclusive=0, description="of which reached the target within the epoch budget")
    reach_rate = dy.Float64(min=0, max=1, description="runs_reached / runs (fraction)")
    mean_target_epoch = dy.Float64(min=0, description="mean epoch the target was reached, over runs_reached (epochs)")
    time_per_epoch_s = dy.Float64(min_exclusive=0, description="duration of one epoch (s)")
    average_power_w = dy.Float64(min_exclusive=0, description="average GPU power (W)")
    tta_s = dy.Float64(min=0, description="expected time to accuracy: mean_target_epoch x time_per_epoch_s (s)")
    eta_j = dy.Float64(min=0, description="expected energy to accuracy: tta_s x average_power_w (J)")
    max_power_w = dy.Int64(min_exclusive=0, description="MaxPower of the GPU: its largest power limit joining a train row (W)")
    default_batch_size = dy.Int64(min_exclusive=0, description="b0 on this GPU: min(default, largest batch size profiled) (samples)")
    is_default = dy.Bool(description="b0 at its largest power limit (the Default configuration)")
    is_pareto = dy.Bool(description="no configuration is at least as good on both TTA and ETA and better on one")


EtaVsTta = subset(
    ConfigExpectations,
    "EtaVsTta",
    ("gpu", "dataset", "batch_size", "power_limit", "runs", "runs_reached", "reach_rate", "tta_s", "eta_j", "is_pareto",
     "is_default", "default_batch_size"),
    "``energy_eta_vs_tta_<gpu>``: TTA and ETA of every configuration of one GPU, Pareto and Default flags.",
)
PowerLimitResponse = subset(
    ZeusPowerProfiles,
    "PowerLimitResponse",
    ("gpu", "dataset", "network", "optimizer", "batch_size", "power_limit", "time_per_epoch", "average_power"),
    "``energy_power_limit_response_<workload>``: epoch time and average power of every (GPU, batch size, power limit).",
)


class _LeastCost(dy.Schema):
    """The configuration of least cost for a (gpu, workload), beside its Default."""

    gpu = dy.String(description="GPU of the power trace")
    dataset = one_of(ZEUS_DATASETS, description="Zeus workload")
    eta = dy.Float64(min=0, max=1, description="energy weight of the cost minimised (eta knob; 1: ETA alone)")
    batch_size = dy.Int64(min_exclusive=0, description="batch size of the least-cost configuration (samples)")
    power_limit = dy.Int64(min_exclusive=0, description="power limit of the least-cost configuration (W)")
    tta_s = dy.Float64(min=0, description="its expected time to accuracy (s)")
    eta_j = dy.Float64(min=0, description="its expected energy to accuracy (J)")
    default_batch_size = dy.Int64(min_exclusive=0, description="Default's batch size, b0 (samples)")
    default_power_limit = dy.Int64(min_exclusive=0, description="Default's power limit, the largest profiled for b0 (W)")
    default_tta_s = dy.Float64(min=0, description="Default's expected time to accuracy (s)")
    default_eta_j = dy.Float64(min=0, description="Default's expected energy to accuracy (J)")


class EtaSweep(_LeastCost):
    """``energy_eta_sensitivity``: the least-cost configuration for each eta, relative to Default."""

    cost_j = dy.Float64(min=0, description="its cost: eta x ETA + (1 - eta) x MaxPower x TTA (J)")
    energy_ratio = dy.Float64(min=0, allow_nan=True, description="ETA / Default ETA (ratio; < 1 saves energy)")
    time_ratio = dy.Float64(min=0, allow_nan=True, description="TTA / Default TTA (ratio; < 1 saves time)")


class SavingsVsDefault(_LeastCost):
    """``energy_savings_vs_default``: per (gpu, workload, criterion), the best configuration's saving vs Default."""

    criterion = dy.String(description="what was minimised: 'min ETA' (eta 1) or 'min cost, eta = 0.5'")
    energy_saving = dy.Float64(allow_nan=True, description="1 - ETA / Default ETA (fraction; negative: more energy than Default)")
    time_saving = dy.Float64(allow_nan=True, description="1 - TTA / Default TTA (fraction; negative: slower than Default)")


ConvergenceRecurrences = subset(
    ZeusSingleJobSweep,
    "ConvergenceRecurrences",
    ("gpu", "dataset", "policy", "eta", "beta", "seed", "recurrence", "tries", "energy_j", "time_s", "cost",
     "energy_regret_j", "time_regret_s", "cumulative_regret", "energy_vs_oracle", "time_vs_oracle"),
    "``energy_convergence_<gpu>``: the rows of ``zeus_single_job_sweep`` of one (eta, beta, seed) on one GPU.",
)


# ---------------------------------------------------------------------------------------------
# clusters


SavingsByTrace = subset(
    ZeusClusterSummary,
    "SavingsByTrace",
    ("trace", "dataset", "gpu", "jobs", "energy_mwh_zeus", "energy_mwh_default", "energy_savings_vs_default_pct",
     "time_savings_vs_default_pct"),
    "``clusters_savings_by_trace``: energy and time Zeus saves vs Default per trace, workload and GPU.",
)


class EnergyTimeline(dy.Schema):
    """``clusters_timeline_energy``: cumulative energy of each (trace, GPU, policy) over the trace's timeline, sampled."""

    trace = dy.String(description="source trace")
    gpu = dy.String(description="GPU simulated")
    policy = dy.String(description="zeus, default or grid-search")
    day = dy.Float64(min=0, description="time since the trace's first job (days)")
    cumulative_energy_mwh = dy.Float64(min=0, description="energy of the runs started by then (MWh)")


# ---------------------------------------------------------------------------------------------
# traces: ITP, ElasticFlow, AcmeTrace, Alibaba


class TraceJobs(dy.Schema):
    """Every cluster trace's GPU jobs in one frame (``pipelines.figures.trace_data.cluster_jobs``), for the trace figures."""

    trace = dy.String(description="display name: ITP, ElasticFlow testbed, Acme Seren, Acme Kalos, Alibaba")
    cluster = dy.String(description="cluster within the trace")
    origin = dy.String(description="what submit_s counts from, for axis labels")
    submit_s = dy.Float64(description="submission (s since origin)")
    duration_s = dy.Float64(nullable=True, description="run time (s)")
    num_gpu = dy.Float64(nullable=True, description="GPUs of the job (null: not in the trace)")
    queue_s = dy.Float64(nullable=True, description="queueing delay (s; null: not in the trace)")
    state = dy.String(nullable=True, description="COMPLETED, CANCELLED or FAILED (null: not in the trace)")


class _Cdf(dy.Schema):
    trace = dy.String(description="trace (display name)")
    cdf = dy.Float64(min_exclusive=0, max=1, description="share of the group at or below the value (fraction)")
    n = dy.UInt32(min_exclusive=0, description="jobs behind the group's CDF")


class DurationCdf(_Cdf):
    """``traces_job_duration_cdf``: job-duration CDF per trace (cluster 'all') and per ITP cluster."""

    cluster = dy.String(description="'all', or the ITP cluster")
    duration_s = dy.Float64(min=0, description="job duration (s)")


class GpuCountCdf(_Cdf):
    """``traces_gpu_count_cdf``: GPUs-per-job CDF per trace, by job count and by GPU time."""

    basis = one_of(("jobs", "GPU time"), description="what the CDF counts: jobs, or GPU time (GPUs x duration)")
    num_gpu = dy.Float64(min_exclusive=0, description="GPUs of a job")


class QueueingDelayCdf(_Cdf):
    """``acme_queueing_delay_cdf``: queueing-delay CDF of AcmeTrace GPU jobs per cluster."""

    queue_s = dy.Float64(min=0, description="queueing delay (s)")


class Submissions(dy.Schema):
    """``traces_submissions``: jobs submitted per day (per hour for traces shorter than a week), per trace and cluster."""

    trace = dy.String(description="trace (display name)")
    cluster = dy.String(description="cluster within the trace")
    origin = dy.String(description="what the bins count from")
    bin = one_of(("day", "hour"), description="bin width")
    bin_start = dy.Int64(description="bin index since origin (days or hours)")
    jobs = dy.UInt32(min_exclusive=0, description="jobs submitted in the bin")


class StateShares(dy.Schema):
    """``acme_final_states``: final-state shares of GPU jobs and of GPU time, published and from our ingest."""

    cluster = dy.String(description="cluster")
    source = one_of(("published", "our ingest"), description="AcmeTrace's cluster_summary, or computed from acme_jobs")
    basis = one_of(("GPU jobs", "GPU time"), description="share of GPU jobs, or of their GPU time")
    state = one_of(("COMPLETED", "CANCELLED", "FAILED"), description="final state (TIMEOUT and NODE_FAIL count as FAILED)")
    share = dy.Float64(min=0, max=1, description="share (fraction)")


class SummaryStatistics(dy.Schema):
    """``acme_cluster_stats``: per cluster, the published statistics beside ours, in long form."""

    cluster = dy.String(description="cluster")
    source = one_of(("published", "our ingest"), description="AcmeTrace's cluster_summary, or computed from acme_jobs")
    statistic = dy.String(description="column of cluster_summary")
    label = dy.String(description="what the statistic is")
    unit = dy.String(description="unit of value: count, s or GPUs")
    value = dy.Float64(description="the statistic (in unit)")


# ---------------------------------------------------------------------------------------------
# hetero (Zeus²)


class SplitCurves(dy.Schema):
    """``hetero_cost_split``: time, energy and cost of every split of the global batch and every pair of power limits."""

    workload = dy.String(description="workload profiled")
    model = dy.String(description="cost model: published or sync")
    gpu_1 = dy.String(description="first (stronger) GPU")
    gpu_2 = dy.String(description="second GPU")
    power_limit_1 = dy.Int64(min_exclusive=0, description="power limit of gpu_1 (W)")
    power_limit_2 = dy.Int64(min_exclusive=0, description="power limit of gpu_2 (W)")
    batch_1 = dy.Int64(min_exclusive=0, description="samples on gpu_1; gpu_2 gets the rest of the global batch")
    time_s = dy.Float64(min=0, description="time of the profiled window under the model (s)")
    energy_j = dy.Float64(min=0, description="energy under the model (J)")
    cost = dy.Float64(min=0, description="cost under the model (J)")


class MethodBars(dy.Schema):
    """``hetero_methods``: each method's allocation and its cost under both models, per workload."""

    workload = dy.String(description="workload profiled")
    bar = dy.String(description="bar label: baseline, heuristic, brute force, sync optimum")
    method = dy.String(description="search method: brute, heuristic or baseline")
    model = dy.String(description="cost the method minimised: published or sync")
    batch_split = dy.List(dy.Int64(), description="samples per GPU, in GPU order")
    power_limits = dy.List(dy.Int64(), description="power limit per GPU (W)")
    published_cost = dy.Float64(min=0, description="the allocation under the published cost (J)")
    sync_cost = dy.Float64(min=0, description="the allocation under the synchronous model (J)")
    sync_time_s = dy.Float64(min=0, description="its time under the synchronous model (s)")
    sync_energy_j = dy.Float64(min=0, description="its energy under the synchronous model, busy plus idle (J)")
