"""Contracts of the Zeus² heterogeneous-GPU layer: the allocations table (its profiles are in ``sources``).

Times in s, energies and costs in J for the profiled window, power in W.
"""

from __future__ import annotations

from typing import get_args

import dataframely as dy

from pipelines.contracts.base import one_of
from pipelines.vocabulary import HETERO_METHODS, MODEL_KINDS, TimePrice

#: The published baseline scored as its own code scores it (see ``pipelines.hetero.allocations``).
AS_WRITTEN = "baseline_as_written"


class HeteroAllocations(dy.Schema):
    """``hetero_allocations``: per workload, each method's batch split and power limits, under both cost models.

    One row per (workload, method, model).
    """

    workload = dy.String(description="workload profiled (cifar100, imagenet)")
    gpus = dy.List(dy.String(), description="GPUs, strongest first (the published heuristic pins the first)")
    method = one_of(
        (*HETERO_METHODS, AS_WRITTEN),
        description="brute (every split and limit), heuristic (first GPU at its lowest limit), baseline (even split), "
        "baseline_as_written (the published baseline code's own score)",
    )
    model = one_of(
        MODEL_KINDS,
        description="cost minimised: published (sum of per-GPU costs) or sync (iteration = slowest GPU, idle power while waiting)",
    )
    eta = dy.Float64(min=0, max=1, description="energy weight of the cost (Zeus eta knob; the published weights are 0.5)")
    time_price = one_of(
        get_args(TimePrice), description="W per second of time in the cost: the chosen power limit (published) or the GPU's highest limit"
    )
    global_batch = dy.Int64(min_exclusive=0, description="global batch split across the GPUs (samples)")
    granularity = dy.Int64(min_exclusive=0, description="each GPU's share is a positive multiple of this (samples)")
    batch_split = dy.List(dy.Int64(), description="samples per GPU, in GPU order")
    power_limits = dy.List(dy.Int64(), description="power limit per GPU (W)")
    gpu_time_s = dy.List(dy.Float64(), description="fitted time per GPU for the profiled window at its share (s)")
    time_s = dy.Float64(min=0, description="slowest GPU's time (s)")
    energy_j = dy.Float64(min=0, description="energy under the row's model (J)")
    cost = dy.Float64(min=0, description="cost under the row's model (J; for baseline_as_written: the published code's own score)")
    published_cost = dy.Float64(min=0, description="the same allocation under the published cost (J)")
    sync_time_s = dy.Float64(min=0, description="the same allocation under the synchronous model: time (s)")
    sync_energy_j = dy.Float64(min=0, description="the same allocation under the synchronous model: energy, busy plus idle (J)")
    sync_cost = dy.Float64(min=0, description="the same allocation under the synchronous model: cost (J)")
    idle_power_w = dy.List(dy.Float64(), description="idle power per GPU used by the synchronous model (W)")
    candidates = dy.Int64(min_exclusive=0, description="size of the search space: splits x power-limit combinations")
