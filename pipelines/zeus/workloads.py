"""The six Zeus workloads: the recurring training jobs of the Zeus NSDI '23 traces, declared once.

Each is the job the artifact's ``run_alibaba.py`` replays for a dataset (network, optimizer,
target validation metric, epoch budget, default batch size b0); ``b0`` is capped per GPU by the
largest batch size profiled (``pipelines.zeus.groups.group_job_spec``). Every other module (the
group replay, the cluster mapping, the energy figures, the table contracts) reads them from here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ZeusWorkload:
    """A recurring training job of the Zeus traces."""

    dataset: str
    network: str
    optimizer: str  # lower case, as in the traces
    target_metric: float  # validation metric the job trains to
    max_epochs: int  # epoch budget of one run
    b0: int  # the user's default batch size (samples)


#: In the Zeus paper's order (vision, then language, speech and recommendation).
WORKLOADS: tuple[ZeusWorkload, ...] = (
    ZeusWorkload("cifar100", "shufflenetv2", "adadelta", 0.6, 100, 1024),
    ZeusWorkload("imagenet", "resnet50", "adadelta", 0.65, 100, 256),
    ZeusWorkload("squad", "bert_base_uncased", "adamw", 84.0, 6, 32),
    ZeusWorkload("librispeech", "deepspeech2", "adamw", 40.0, 16, 256),
    ZeusWorkload("movielens-1m", "ncf", "adam", 0.41, 100, 1024),
    ZeusWorkload("sentiment140", "bert_base_uncased", "adamw", 0.84, 10, 128),
)
WORKLOAD_BY_DATASET: dict[str, ZeusWorkload] = {w.dataset: w for w in WORKLOADS}
#: The dataset names, the values a ``dataset`` column of a Zeus workload may take.
ZEUS_DATASETS: tuple[str, ...] = tuple(WORKLOAD_BY_DATASET)
