"""Physically sane bounds that the ingested and measured tables declare, in one place.

Each is far above anything real (the published traces' largest values are given for comparison)
and far below what a corrupt or hostile file can hold, so a value beyond one is a broken row, not
a discovery: it goes to quarantine with the bound in its reason.
"""

from __future__ import annotations

#: Power of one GPU, limit or draw (W). The largest today: B200 1,000 W; traces here top out at 300 W.
MAX_GPU_POWER_W = 2_000
#: Power of one server (W), IPMI's Sys_Total_Power: 8 GPUs at MAX_GPU_POWER_W and 4 kW for the rest.
#: AcmeTrace's Seren GPU nodes top out at 6,554 W.
MAX_NODE_POWER_W = 20_000
#: GPUs (or nodes) of one job. The largest training jobs run on ~100k GPUs; Acme's largest is 2,048.
MAX_GPUS_PER_JOB = 100_000
#: CPU cores of one job.
MAX_CPUS_PER_JOB = 10_000_000
#: Length of one job or wait (s): a year. ITP's longest job is 18 days, Acme's summary 50 days.
MAX_JOB_S = 366 * 86_400
#: Earliest time a scheduler's record may hold (s since 1970 UTC): 2000-01-01. Slurm's first release was 2002; an earlier
#: time is a reset clock or a forged row (a 1970 start read in Europe/Berlin would be a negative time).
EARLIEST_RECORD_S = 946_684_800
#: How far after the read a scheduler's time may lie (s): a day of clock drift. A later time was never recorded.
FUTURE_SLACK_S = 86_400
#: Seconds since a trace's start: 20 years. ITP spans 60 days.
MAX_TRACE_OFFSET_S = 20 * 366 * 86_400
#: A time in s that may count from a trace's start or from 1970 (group tables replayed by the simulator
#: carry either): before 2200-01-01.
MAX_TIME_S = 7_258_118_400
#: GPU time summed over one job (GPU-s).
MAX_JOB_GPU_S = MAX_JOB_S * MAX_GPUS_PER_JOB
#: GPU time or job count summed over a whole cluster (GPU-s, jobs).
MAX_CLUSTER_TOTAL = 1e15
#: One epoch (s): 116 days. The Zeus trace's longest is 64,009 s.
MAX_EPOCH_S = 1e7
#: Energy of one profiled window (J): a GPU at the power cap for a year.
MAX_WINDOW_ENERGY_J = MAX_GPU_POWER_W * MAX_JOB_S
#: Energy a scheduler may measure for one allocation (J): every node at MAX_NODE_POWER_W for a year.
MAX_ALLOCATION_ENERGY_J = MAX_NODE_POWER_W * MAX_GPUS_PER_JOB * MAX_JOB_S
#: GPU utilisation of an allocation (%): 100 per busy GPU; Slurm sums a GPU's over the tasks that share it.
MAX_GPU_UTIL_PCT = 10_000.0
#: Training batch size (samples). The Zeus trace's largest is 32,768.
MAX_BATCH_SIZE = 1 << 24
#: Epoch at which a target was reached, and repetitions of a configuration.
MAX_EPOCHS = 100_000
#: Learning rate. The Zeus trace's largest is 0.1.
MAX_LEARNING_RATE = 1_000.0
#: Iterations of one job (ElasticFlow's synthetic num_iteration tops out at 2.6e7).
MAX_ITERATIONS = 10**13
#: Memory per pod (GB).
MAX_MEMORY_GB = 1e6
#: A ratio of one job's runtime to its workload's mean.
MAX_RUNTIME_RATIO = 1e6

#: Text fields (characters): identifiers (job ids: ITP's are 36-character UUIDs), names (GPU, model,
#: workload, user), and provenance (``measured:<file name>``).
MAX_ID_CHARS = 256
MAX_NAME_CHARS = 128
#: A user name of an own trace (Unix user names: 32 by default): short enough that user/job name/GPUs, the recurring group
#: of an own trace's job (pipelines.clusters.mapping.own_group), stays within MAX_ID_CHARS.
MAX_USER_CHARS = 64
MAX_SOURCE_CHARS = 512
#: Carbon intensity of electricity (g CO2e per kWh), a yearly average or one hour's. Lignite, the dirtiest, emits about
#: 1,100-1,200 g/kWh; the published regions' largest average is below 1,000.
MAX_GCO2_PER_KWH = 2_000
#: A price of electricity (money per kWh, in any currency; a market's may be as negative). The largest retail prices
#: in the smallest currency units are about 1,500 per kWh (the Indonesian rupiah): far above them, far below an overflow.
MAX_PRICE_PER_KWH = 1e6
