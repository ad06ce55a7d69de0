"""Contract of the knob-grid sweep (``zeus_knob_grid``, ``python -m pipelines sweep``).

One row per (trace, gpu, eta, beta, seed, policy): a whole trace replayed on one GPU under one
policy, every group with the seed knob's per-group seed. Energy is in J for the whole job
(per-GPU energy x num_gpu), time in s, both scaled by runtime_ratio as in ``zeus_cluster_history``.
"""

from __future__ import annotations

import dataframely as dy
import polars as pl

#: The policies a sweep replays: the Zeus optimizer and the two baselines.
SWEEP_POLICIES: tuple[str, ...] = ("zeus", "default", "grid-search")


class ZeusKnobGrid(dy.Schema):
    """``zeus_knob_grid``: per trace, GPU and knob setting, each policy's cluster-wide energy and time, and its saving vs Default."""

    trace = dy.String(primary_key=True, description="cluster trace replayed (cluster_workload_jobs.trace)")
    gpu = dy.String(primary_key=True, description="GPU whose power trace was simulated")
    eta = dy.Float64(primary_key=True, min=0, max=1, description="eta knob: weight of energy in the cost eta x E + (1 - eta) x MaxPower x T (ratio)")
    beta = dy.Float64(
        primary_key=True, min_exclusive=0, allow_inf=True,
        description="beta knob: Zeus stops a run whose cost passes beta x the lowest cost seen (ratio; inf = never)",
    )
    seed = dy.Int64(
        primary_key=True, min=0,
        description="seed knob: each group replays with SeedSequence(adler32(group), spawn_key=(seed,)) (see zeus.groups.group_seed)",
    )
    policy = dy.String(primary_key=True, description="who chose each run's configuration: zeus, default or grid-search")
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

    @dy.rule()
    def known_policy(cls) -> pl.Expr:
        """policy is one of zeus, default, grid-search"""
        return pl.col("policy").is_in(SWEEP_POLICIES)
