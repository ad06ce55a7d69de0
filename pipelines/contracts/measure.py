"""Contract of a measured power profile (``python -m pipelines measure profile --out raw/measured/NAME.csv``).

The first seven columns are those of the Zeus power trace, so the rows join the train trace; the
rest say how each row was measured. The ingest reads these files into ``zeus_power_profiles``
(``pipelines.contracts.sources.ZeusPowerProfiles``: the same workloads and bounds). Floats are
finite (dataframely's default); bounds come from ``pipelines.contracts.limits``.
"""

from __future__ import annotations

import dataframely as dy

from pipelines.contracts.base import one_of
from pipelines.contracts.limits import (
    MAX_BATCH_SIZE,
    MAX_EPOCH_S,
    MAX_GPU_POWER_W,
    MAX_GPUS_PER_JOB,
    MAX_JOB_S,
    MAX_NAME_CHARS,
    MAX_WINDOW_ENERGY_J,
)
from pipelines.vocabulary import ZEUS_DATASETS


class MeasuredProfile(dy.Schema):
    """One (batch size, power limit) measured by the harness, in file order."""

    dataset = one_of(ZEUS_DATASETS, description="Zeus workload dataset")
    network = dy.String(max_length=MAX_NAME_CHARS, description="DNN model")
    batch_size = dy.Int64(min_exclusive=0, max=MAX_BATCH_SIZE, description="training batch size (samples)")
    optimizer = dy.String(max_length=MAX_NAME_CHARS, description="optimizer name, lower case")
    power_limit = dy.Int64(
        min_exclusive=0, max=MAX_GPU_POWER_W, nullable=True,
        description="power limit in effect during the window (W; null: unknown, e.g. a CPU without RAPL)",
    )  # fmt: skip
    time_per_epoch = dy.Float64(min_exclusive=0, max=MAX_EPOCH_S, description="epoch size / samples per second (s)")
    average_power = dy.Float64(
        min_exclusive=0, max=MAX_GPU_POWER_W, nullable=True, description="window energy / window time (W; null: no energy measurement, see note)"
    )
    gpu = dy.String(max_length=MAX_NAME_CHARS, description="the name the simulator knows the device by (--gpu)")
    gpu_name = dy.String(nullable=True, description="device name as the driver reports it")
    gpu_uuid = dy.String(nullable=True, description="device UUID as the driver reports it")
    device = dy.String(description="torch device (cuda:0, cpu)")
    method = dy.String(description="how energy was measured: counter, polling, rapl, or none (timed only: no power)")
    samples_per_second = dy.Float64(min_exclusive=0, description="training throughput (samples/s)")
    energy_per_epoch = dy.Float64(nullable=True, description="average_power x time_per_epoch (J)")
    cpu_threads = dy.Int64(description="torch intra-op threads")
    iterations = dy.Int64(min_exclusive=0, description="measured training iterations in the window")
    warmup_iterations = dy.Int64(min=0, description="iterations run before the window")
    window_s = dy.Float64(min_exclusive=0, max=MAX_JOB_S, description="duration of the measured window (s)")
    window_energy_j = dy.Float64(min=0, max=MAX_WINDOW_ENERGY_J, nullable=True, description="energy of the measured window (J)")
    short_window = dy.Bool(description="the window was shorter than the method's resolution")
    power_limit_set = dy.Bool(description="true: the harness set power_limit; false: the limit found in place")
    note = dy.String(nullable=True, description="why energy is missing or anything else to know about the row")
    torch_version = dy.String(description="torch version used")
    measured_at = dy.String(description="when the window was measured (UTC, ISO 8601)")


class PowerLimitProfiles(dy.Schema):
    """``power_limit_profiles``: Zeus's own profiles dropped in raw/measured (ZeusMonitor logs, saved JSON), one row per limit."""

    source = dy.String(primary_key=True, max_length=MAX_NAME_CHARS, description="file name in raw/measured")
    format = one_of(("zeus-log", "zeus-json"), description="zeus-log: a ZeusMonitor log of the optimizer's profiling; zeus-json: its saved profile")
    world_size = dy.Int64(min=1, max=MAX_GPUS_PER_JOB, nullable=True,
                          description="GPUs whose energy a measurement sums (a log's gpu columns; null: a JSON, which does not say)")
    position = dy.Int64(min=0, description="order in the file, from 0 (the optimizer's ties go to the first)")
    line = dy.Int64(min=1, description="line of the measurement in the file")
    power_limit = dy.Int64(primary_key=True, min_exclusive=0, max=MAX_GPU_POWER_W, description="GPU power limit (W)")
    energy = dy.Float64(min_exclusive=0, max=MAX_WINDOW_ENERGY_J * MAX_GPUS_PER_JOB,
                        description="energy of the profiling window at this limit, summed over the GPUs (J)")
    time = dy.Float64(min_exclusive=0, max=MAX_JOB_S, description="duration of the profiling window at this limit (s)")


class PowerLimitChoices(dy.Schema):
    """``figures/power_limit_choice``: each limit of each Zeus profile in raw/measured, and the selectors that choose it."""

    source = dy.String(description="file name in raw/measured")
    format = one_of(("zeus-log", "zeus-json"), description="zeus-log: a ZeusMonitor log; zeus-json: the optimizer's saved profile")
    world_size = dy.Int64(min=1, description="GPUs of the ZeusCost (1 for a JSON profile, which does not say)")
    power_limit = dy.Int64(min_exclusive=0, description="GPU power limit (W)")
    energy = dy.Float64(min_exclusive=0, description="energy of the profiling window (J)")
    time = dy.Float64(min_exclusive=0, description="duration of the profiling window (s)")
    zeus_cost = dy.Bool(description="ZeusCost (eta 0.5, world_size) chooses this limit")
    energy_min = dy.Bool(description="Energy chooses this limit")
    time_min = dy.Bool(description="Time chooses this limit")
    max_slowdown = dy.Bool(description="MaxSlowdownConstraint(1.1) chooses this limit")
