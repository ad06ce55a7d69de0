"""The Zeus workloads the harness can profile: dataset facts and the trace's network and optimizer.

Names match the Zeus train trace (``summary_train.csv``), so measured rows join it. Epoch sizes
are the datasets' training-set sizes: CIFAR-100 50,000 images, ImageNet-1k (ILSVRC-2012)
1,281,167 images.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Workload:
    dataset: str
    network: str
    optimizer: str  # as in the traces (lower case)
    num_classes: int
    input_shape: tuple[int, int, int]  # (channels, height, width) of one sample
    epoch_size: int  # training samples per epoch


WORKLOADS: dict[str, Workload] = {
    "cifar100": Workload("cifar100", "shufflenetv2", "adadelta", 100, (3, 32, 32), 50_000),
    "imagenet": Workload("imagenet", "resnet50", "adadelta", 1000, (3, 224, 224), 1_281_167),
}

#: Optimizers the harness can build (the traces use adadelta for both image workloads; V100's
#: CIFAR-100 profile also has adam).
OPTIMIZERS: tuple[str, ...] = ("adadelta", "adam", "adamw", "sgd")
