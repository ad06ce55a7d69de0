"""The project's vocabulary, declared once: GPUs, Zeus workloads (jobs), policies, traces, Zeus² methods.

A leaf package: it imports nothing of the package outside it, so the contracts, the simulator, the
figures, the command line and the Dagster partitions all read their closed sets of names from here.
Its modules: ``idle`` (the cited idle readings behind the GPUs' idle draws), ``units`` (the unit
factors) and ``ranges`` (a number's range and the wording of a value outside it).

* ``Job``: a recurring training job, shaped like the published ``zeus._legacy.job.Job``
  (dataset, network, optimizer, target metric, epoch budget, default batch size b0 and learning
  rate); ``WORKLOADS`` the six jobs of the Zeus NSDI '23 traces.
* ``Gpu``: a GPU the project knows by name (``gpu`` columns, partition keys, ``--gpu`` options):
  its label, its board power (TDP, W) and its idle draw (W), each with the source of that number,
  and the power limits its published Zeus trace profiles. ``GPUS`` is in the Zeus paper's order.
* ``PolicyName``: who picks each run's configuration (Zeus or a baseline); ``DEFAULT_ETA`` and
  ``DEFAULT_BETA``: Zeus's knobs by default.
* ``CLUSTER_TRACES``: the public cluster traces mapped onto Zeus workloads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from pipelines.vocabulary.idle import idle_source, median_idle_w
from pipelines.vocabulary.ranges import Range

# --------------------------------------------------------------------------------------------
# Policies

#: Who picks each run's configuration: Zeus or a baseline (see ``pipelines.zeus.policies``).
PolicyName = Literal["zeus", "default", "grid-search", "oracle"]
POLICIES: tuple[PolicyName, ...] = ("zeus", "default", "grid-search", "oracle")
#: The policies replayed over every cluster trace and swept for single jobs: Zeus and the two baselines a
#: cluster could run (the Oracle needs hindsight and serves as the reference of regret instead).
REPLAYED_POLICIES: tuple[PolicyName, ...] = ("zeus", "default", "grid-search")


# --------------------------------------------------------------------------------------------
# Knobs

#: Zeus's knobs by default (the paper's, its artifact's and GlobalPowerLimitOptimizer's): ``eta``, the energy
#: weight of the cost ``eta x energy + (1 - eta) x max power x time``, in [0, 1]; ``beta``, early stopping of a
#: run at ``beta`` x the minimum cost seen, >= 1 (inf: never). Every command's ``--eta-knob`` and
#: ``--beta-knob``, every replay and every figure that holds a knob fixed default to these.
DEFAULT_ETA = 0.5
DEFAULT_BETA = 2.0
#: Their ranges and their help, as every command's ``--eta-knob`` and ``--beta-knob`` give them.
ETA_RANGE = Range(0.0, 1.0)
BETA_RANGE = Range(1.0, math.inf, inf_ok=True)
ETA_HELP = "Energy weight of Zeus's cost, in [0, 1]."
BETA_HELP = "Early stopping at beta x the minimum cost, >= 1 (inf: never)."

# --------------------------------------------------------------------------------------------
# Workloads


@dataclass(frozen=True)
class Job:
    """A recurring training job, with the fields of the published ``zeus._legacy.job.Job``.

    ``default_bs`` is the user's batch size b0 (samples); the group replay caps it per GPU at the
    largest batch size that GPU's power trace profiles (``pipelines.zeus.groups.group_job_spec``).
    ``optimizer`` is lower case, as in the traces.
    """

    dataset: str
    network: str
    optimizer: str
    target_metric: float  # validation metric the job trains to
    max_epochs: int  # epoch budget of one run
    default_bs: int  # b0
    default_lr: float | None = None


#: The jobs the artifact's ``run_alibaba.py`` replays per dataset, in the Zeus paper's order
#: (vision, then language, speech and recommendation).
WORKLOADS: tuple[Job, ...] = (
    Job("cifar100", "shufflenetv2", "adadelta", 0.6, 100, 1024, 0.1),
    Job("imagenet", "resnet50", "adadelta", 0.65, 100, 256),
    Job("squad", "bert_base_uncased", "adamw", 84.0, 6, 32),
    Job("librispeech", "deepspeech2", "adamw", 40.0, 16, 256),
    Job("movielens-1m", "ncf", "adam", 0.41, 100, 1024),
    Job("sentiment140", "bert_base_uncased", "adamw", 0.84, 10, 128, 4.0e-7),
)
WORKLOAD_BY_DATASET: dict[str, Job] = {w.dataset: w for w in WORKLOADS}
#: The dataset names, the values a ``dataset`` column of a Zeus workload may take.
ZEUS_DATASETS: tuple[str, ...] = tuple(WORKLOAD_BY_DATASET)
_DATASET_LABELS: dict[str, str] = {
    "cifar100": "CIFAR-100", "imagenet": "ImageNet", "squad": "SQuAD", "librispeech": "LibriSpeech",
    "movielens-1m": "MovieLens-1M", "sentiment140": "Sentiment140",
}


def dataset_label(dataset: str) -> str:
    """A dataset's label for readers (``CIFAR-100``); the name itself when it is not a Zeus workload."""
    return _DATASET_LABELS.get(dataset, dataset)


# --------------------------------------------------------------------------------------------
# GPUs


@dataclass(frozen=True)
class Gpu:
    """A GPU the project knows by name.

    ``tdp_w``: the board's default power limit (W), ``tdp_source`` where that number comes from.
    ``idle_w``: what the board draws powered on with no job (W), ``idle_source`` where that
    number comes from. ``power_limits_w``: the limits the published Zeus power trace profiles
    (empty for GPUs that have none).
    """

    name: str
    label: str
    tdp_w: float
    tdp_source: str
    idle_w: float
    idle_source: str
    power_limits_w: frozenset[int] = frozenset()


#: A100 (Seren and Kalos): the low mode of AcmeTrace's measured DCGM distributions of per-GPU power
#: (``fleet_power_cdf``), the densest 5 W window below 50% TDP, averaged over the two clusters (63.6 W
#: and 63.6 W). ``pipelines.clusters.fleet.measured_idle_w`` derives it from the table; a test holds
#: this constant to that derivation. Every other GPU's idle draw is the median of its cited public
#: nvidia-smi readings of an idle board (``pipelines.vocabulary.idle``).
A100_MEASURED_IDLE_W = 63.6


_NVIDIA = "NVIDIA datasheet"
#: In the Zeus paper's order: the four GPUs of the published power traces, then the Zeus² GPUs and the A100 of AcmeTrace.
GPUS: tuple[Gpu, ...] = (
    Gpu("v100", "V100", 250.0, f"{_NVIDIA}: Tesla V100 PCIe, 250 W (the trace's largest limit)",
        median_idle_w("v100"), idle_source("v100"), frozenset(range(100, 251, 25))),
    Gpu("a40", "A40", 300.0, f"{_NVIDIA}: A40, 300 W (the trace's largest limit)",
        median_idle_w("a40"), idle_source("a40"), frozenset(range(100, 301, 25))),
    Gpu("rtx6000", "RTX 6000", 260.0,
        f"{_NVIDIA}: Quadro RTX 6000, 260 W total graphics power (295 W board power with VirtualLink); the trace's largest "
        "limit and the default limit nvidia-smi shows",
        median_idle_w("rtx6000"), idle_source("rtx6000"), frozenset([*range(100, 251, 25), 260])),
    Gpu("p100", "P100", 250.0, f"{_NVIDIA}: Tesla P100 PCIe, 250 W (the trace's largest limit)",
        median_idle_w("p100"), idle_source("p100"), frozenset(range(125, 251, 25))),
    Gpu("a10", "A10", 150.0, f"{_NVIDIA}: A10, 150 W", median_idle_w("a10"), idle_source("a10")),
    Gpu("t4", "T4", 70.0, f"{_NVIDIA}: T4, 70 W", median_idle_w("t4"), idle_source("t4")),
    Gpu("a100", "A100", 400.0, f"{_NVIDIA}: A100 SXM4, 400 W (AcmeTrace's Seren and Kalos)", A100_MEASURED_IDLE_W,
        "measured: low mode of AcmeTrace's DCGM per-GPU power on Seren and Kalos (fleet_power_cdf, August 2023)"),
)
GPU_BY_NAME: dict[str, Gpu] = {g.name: g for g in GPUS}
#: The GPUs of the published Zeus power traces (``summary_power_<gpu>.csv``), sorted by name (the partition keys).
PUBLISHED_GPUS: tuple[str, ...] = tuple(sorted(g.name for g in GPUS if g.power_limits_w))
#: The same GPUs in the paper's order (figures, reports).
PAPER_ORDER: tuple[str, ...] = tuple(g.name for g in GPUS if g.power_limits_w)
#: The GPU whose trace orders the workloads and profiles a job of no known GPU type (the Zeus paper's main GPU).
REFERENCE_GPU = "v100"


def gpu_label(name: str) -> str:
    """A GPU's label for readers (``RTX 6000``); a measured GPU's name, upper-cased, when it is not registered."""
    gpu = GPU_BY_NAME.get(name)
    return gpu.label if gpu is not None else name.upper()


# --------------------------------------------------------------------------------------------
# Traces

#: The public cluster traces mapped onto Zeus workloads, in the mapping's order.
CLUSTER_TRACES: tuple[str, ...] = ("alibaba", "itp", "elasticflow", "acme")
#: Every trace name, public or a user's own (``raw/clusters/<name>.sacct|.csv``): lower-case letters, digits,
#: ``_`` and ``-``, starting with a letter or digit, at most 48 characters. It is also a Dagster partition key.
TRACE_NAME_REGEX = r"^[a-z0-9][a-z0-9_-]{0,47}$"


# --------------------------------------------------------------------------------------------
# Zeus² (heterogeneous GPUs)

#: The published searches: brute force over every split and pair of limits, the heuristic pinning
#: the stronger GPU to its lowest limit, and the even split.
HETERO_METHODS: tuple[str, ...] = ("brute", "heuristic", "baseline")
#: Cost models: the published one (the GPUs' times add up) and synchronous data parallelism.
ModelKind = Literal["published", "sync"]
MODEL_KINDS: tuple[ModelKind, ...] = ("published", "sync")
#: The power that prices time in the cost: the GPU's power limit, or its largest limit.
TimePrice = Literal["power_limit", "max_power_limit"]
TIME_PRICES: tuple[TimePrice, ...] = ("power_limit", "max_power_limit")
