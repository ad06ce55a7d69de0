"""Contract of the knob-grid sweep (``zeus_knob_grid``, ``python -m pipelines sweep``).

One row per (trace, gpu, eta, beta, seed, policy): a whole trace replayed on one GPU under one
policy, every group with the seed knob's per-group seed. Energy is in J for the whole job
(per-GPU energy x num_gpu), time in s, both scaled by runtime_ratio as in ``zeus_cluster_history``.
"""

from __future__ import annotations

import dataframely as dy
import polars as pl

from pipelines.contracts.base import one_of
from pipelines.vocabulary import REPLAYED_POLICIES


class ZeusKnobGrid(dy.Schema):
    """``zeus_knob_grid``: per trace, GPU and knob setting, each policy's cluster-wide energy and time, and its saving vs Default."""

    trace = dy.String(primary_key=True, description="cluster trace replayed (cluster_workload_jobs.trace)")
    gpu = dy.String(primary_key=True, description="GPU whose power trace was simulated")
    eta = dy.Float64(primary_key=True, min=0, max=1, description="eta knob: weight of energy in the cost eta x E + (1 - eta) x MaxPower x T (ratio)")
    beta = dy.Float64(
        primary_key=True, min=1, allow_inf=True,
        description="beta knob: Zeus stops a run whose cost passes beta x the lowest cost seen (ratio >= 1; inf = never)",
    )
    seed = dy.Int64(
        primary_key=True, min=0,
        description="seed knob: each group replays with SeedSequence(adler32(group), spawn_key=(seed,)) (see zeus.reference.group_seed)",
    )
    policy = one_of(REPLAYED_POLICIES, primary_key=True, description="who chose each run's configuration: zeus, default or grid-search")
    jobs = dy.Int64(min=0, description="trace jobs replayed (rows of cluster_workload_jobs of the trace)")
    runs = dy.Int64(nullable=True, min=0, description="runs reported, retries after a missed target included (count; null: see error)")
    energy_j = dy.Float64(
        nullable=True, min=0, description="energy of every run, all GPUs of each job, scaled by runtime_ratio (J; null: see error)"
    )
    time_s = dy.Float64(nullable=True, min=0, description="duration of every run, summed, scaled by runtime_ratio (s; null: see error)")
    energy_savings_vs_default_pct = dy.Float64(
        nullable=True, allow_inf=True, allow_nan=True,
        description="100 x (1 - energy_j / Default's energy_j at the same trace, GPU and seed) (%; 0 for Default)",
    )
    time_savings_vs_default_pct = dy.Float64(
        nullable=True, allow_inf=True, allow_nan=True,
        description="100 x (1 - time_s / Default's time_s at the same trace, GPU and seed) (%; 0 for Default)",
    )
    error = dy.String(
        nullable=True,
        description="why the replay has no totals: the published simulator raises there (e.g. Zeus pruned every batch size "
        "of a group); null when it ran",
    )

    @dy.rule()
    def totals_or_error(cls) -> pl.Expr:
        """a row has its totals, or an error saying why not"""
        return pl.col("energy_j").is_null() == pl.col("error").is_not_null()


class KnobSavings(dy.Schema):
    """Figure data of ``knob_grid_savings``: a policy's saving vs Default as one knob varies, over the seeds."""

    trace = dy.String(description="cluster trace")
    gpu = dy.String(description="GPU simulated")
    knob = one_of(("eta", "beta"), description="the knob that varies along the series")
    value = dy.Float64(allow_inf=True, description="the varying knob's value (eta: ratio in [0, 1]; beta: ratio >= 1)")
    fixed_eta = dy.Float64(nullable=True, min=0, max=1, description="eta held fixed along a beta series (ratio; null on an eta series)")
    fixed_beta = dy.Float64(nullable=True, min=1, allow_inf=True, description="beta held fixed along an eta series (ratio; null on a beta series)")
    metric = one_of(("energy_savings_vs_default_pct", "time_savings_vs_default_pct"), description="which saving")
    mean_pct = dy.Float64(nullable=True, description="mean over the seeds that ran (%; null: none ran)")
    min_pct = dy.Float64(nullable=True, description="lowest over the seeds that ran (%)")
    max_pct = dy.Float64(nullable=True, description="highest over the seeds that ran (%)")
    seeds = dy.Int64(min=0, description="seeds whose replay ran (the published simulator raises on the others)")
