"""The Zeus workloads the harness can profile: a published job (``pipelines.vocabulary.Job``) and its input's shape.

Names come from the job, so measured rows join the Zeus train trace (``summary_train.csv``). Epoch
sizes are the datasets' training-set sizes: CIFAR-100 50,000 images, ImageNet-1k (ILSVRC-2012)
1,281,167 images.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipelines.vocabulary import WORKLOAD_BY_DATASET, Job


@dataclass(frozen=True)
class Workload:
    """A job of the traces, as the harness trains it on synthetic data."""

    job: Job
    num_classes: int
    input_shape: tuple[int, int, int]  # (channels, height, width) of one sample
    epoch_size: int  # training samples per epoch

    @property
    def dataset(self) -> str:
        return self.job.dataset

    @property
    def network(self) -> str:
        return self.job.network

    @property
    def optimizer(self) -> str:
        """As in the traces (lower case)."""
        return self.job.optimizer


WORKLOADS: dict[str, Workload] = {
    "cifar100": Workload(WORKLOAD_BY_DATASET["cifar100"], 100, (3, 32, 32), 50_000),
    "imagenet": Workload(WORKLOAD_BY_DATASET["imagenet"], 1000, (3, 224, 224), 1_281_167),
}

#: Optimizers the harness can build (the traces use adadelta for both image workloads; V100's
#: CIFAR-100 profile also has adam).
OPTIMIZERS: tuple[str, ...] = ("adadelta", "adam", "adamw", "sgd")
