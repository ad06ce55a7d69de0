"""Zeus NSDI '23 train and power traces."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipelines.ingest.common import IngestResult, TableSpec, ingest_files
from pipelines.ingest.schemas import ZeusPowerProfiles, ZeusTrainRuns

#: The GPUs of the published power trace, and the power limits (W) each was profiled at.
PUBLISHED_GPUS: tuple[str, ...] = ("a40", "p100", "rtx6000", "v100")
PUBLISHED_POWER_LIMITS_W: dict[str, frozenset[int]] = {
    "v100": frozenset(range(100, 251, 25)),
    "a40": frozenset(range(100, 301, 25)),
    "rtx6000": frozenset([*range(100, 251, 25), 260]),
    "p100": frozenset(range(125, 251, 25)),
}
#: A40's sentiment140 profile was measured at fewer limits.
A40_SENTIMENT140_LIMITS_W = frozenset(range(100, 301, 50))
ZEUS_SOURCE = "zeus-nsdi23"

TRAIN_SPEC = TableSpec(
    "zeus_train_runs",
    ZeusTrainRuns,
    {c: c for c in ("dataset", "network", "batch_size", "optimizer", "learning_rate", "run", "target_metric", "target_epoch")},
    null_tokens=frozenset({"nan"}),  # a run that never reached the target has target_epoch "nan"
)
_POWER_COLUMNS = ("dataset", "network", "batch_size", "optimizer", "power_limit", "time_per_epoch", "average_power")
POWER_SPEC = TableSpec(
    "zeus_power_profiles",
    ZeusPowerProfiles,
    {c: c for c in _POWER_COLUMNS},
    unique_key=("dataset", "network", "batch_size", "optimizer", "power_limit"),
)


def read_train(path: Path) -> IngestResult:
    """summary_train.csv -> ``zeus_train_runs``."""
    return ingest_files([(path, path.name)], TRAIN_SPEC)


def power_file(folder: Path, gpu: str) -> Path:
    return folder / f"summary_power_{gpu}.csv"


def read_power(folder: Path, gpus: tuple[str, ...] = PUBLISHED_GPUS) -> IngestResult:
    """summary_power_{gpu}.csv for each GPU -> ``zeus_power_profiles`` (with ``gpu`` and ``source``)."""
    files = [(power_file(folder, gpu), f"summary_power_{gpu}.csv") for gpu in gpus]
    gpu_of = {power_file(folder, gpu): gpu for gpu in gpus}
    return ingest_files(files, POWER_SPEC, extra_columns=lambda p: {"gpu": gpu_of[p], "source": ZEUS_SOURCE})


def power_limit_mismatches(power: pl.DataFrame) -> dict[str, str]:
    """Per published GPU and workload, the difference from the published power-limit set (empty: all match)."""
    problems: dict[str, str] = {}
    published = power.filter(pl.col("source") == ZEUS_SOURCE)
    for gpu, dataset, limits in published.group_by("gpu", "dataset").agg(pl.col("power_limit").unique()).iter_rows():
        expected = PUBLISHED_POWER_LIMITS_W.get(gpu)
        if gpu == "a40" and dataset == "sentiment140":
            expected = A40_SENTIMENT140_LIMITS_W
        if expected is None:
            problems[f"{gpu}/{dataset}"] = "unknown published GPU"
        elif set(limits) != expected:
            problems[f"{gpu}/{dataset}"] = f"limits {sorted(limits)} != published {sorted(expected)}"
    for gpu in PUBLISHED_GPUS:
        if published.filter(pl.col("gpu") == gpu).height == 0:
            problems[gpu] = "no rows"
    return problems
