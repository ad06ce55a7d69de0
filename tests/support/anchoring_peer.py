"""A second implementation of anchoring's numbers, written from the formulas (pipelines/clusters/anchoring.py's docstring,
the Zeus paper's cost) over the published trace CSVs, with the csv module and plain floats: no helper of the package.

The job of each workload is run_alibaba.py's (``tests.support.zeus_peer.ARTIFACT_JOBS``: network, optimizer, target
metric, max epochs, default batch size b0); only rows present in both traces count (the published simulator's inner
merge on dataset, network, batch size and optimizer).
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from tests.support.zeus_peer import ARTIFACT_JOBS


@dataclass(frozen=True)
class Config:
    """One batch size of a workload on one GPU: its profiled limits and the runs' epochs to the target."""

    limits: dict[int, tuple[float, float]]  # W -> (time per epoch s, average power W)
    target_epochs: list[float]  # one per run of the train trace at the target; nan: never reached


def configs(zeus: Path, gpu: str, dataset: str) -> tuple[dict[int, Config], int]:
    """(batch size -> ``Config`` of ``dataset``'s job on ``gpu``, MaxPower: the largest limit of the GPU's power rows that join
    a train row, any workload)."""
    network, optimizer, target, _, _ = ARTIFACT_JOBS[dataset]
    with (zeus / "summary_train.csv").open(newline="") as f:
        train = list(csv.DictReader(f))
    with (zeus / f"summary_power_{gpu}.csv").open(newline="") as f:
        power = list(csv.DictReader(f))
    trained = {(r["dataset"], r["network"], r["batch_size"], r["optimizer"]) for r in train}
    max_power = max(int(r["power_limit"]) for r in power if (r["dataset"], r["network"], r["batch_size"], r["optimizer"]) in trained)
    limits: dict[int, dict[int, tuple[float, float]]] = defaultdict(dict)
    for r in power:
        if (r["dataset"], r["network"], r["optimizer"]) == (dataset, network, optimizer) and (dataset, network, r["batch_size"], optimizer) in trained:
            limits[int(r["batch_size"])][int(r["power_limit"])] = (float(r["time_per_epoch"]), float(r["average_power"]))
    epochs: dict[int, list[float]] = defaultdict(list)
    for r in train:
        if (r["dataset"], r["network"], r["optimizer"]) == (dataset, network, optimizer) and float(r["target_metric"]) == target:
            epochs[int(r["batch_size"])].append(float(r["target_epoch"]) if r["target_epoch"] else math.nan)
    return {bs: Config(limits[bs], epochs[bs]) for bs in limits}, max_power


def default_power_w(zeus: Path, gpu: str, dataset: str) -> float:
    """The draw of Default's every run (W): average power of b0 at its largest profiled limit."""
    config = configs(zeus, gpu, dataset)[0][ARTIFACT_JOBS[dataset][4]]
    return config.limits[max(config.limits)][1]


def to_target(config: Config, limit: int, max_epochs: int) -> tuple[float, float] | None:
    """(expected energy J, expected time s) to reach the target at ``limit``: a run that misses the target within
    ``max_epochs`` costs ``max_epochs`` epochs and is retried, so the mean attempt is divided by the chance p of a hit."""
    hits = [e for e in config.target_epochs if not math.isnan(e) and e <= max_epochs]
    if not hits:
        return None
    p = len(hits) / len(config.target_epochs)
    mean_epochs = sum(e if not math.isnan(e) and e <= max_epochs else max_epochs for e in config.target_epochs) / len(config.target_epochs)
    seconds, watts = config.limits[limit]
    return mean_epochs * seconds * watts / p, mean_epochs * seconds / p


def profiled_limit(config: Config, eta: float) -> int:
    """The limit just-in-time profiling picks: the lowest epoch cost (eta x P + (1 - eta) x P_max,bs) x T, P_max,bs the batch
    size's largest limit; of equal costs the higher limit (Zeus profiles from the top down and keeps a strictly lower one)."""
    top = max(config.limits)
    cost = {limit: (eta * w + (1 - eta) * top) * s for limit, (s, w) in config.limits.items()}
    return min(cost, key=lambda limit: (cost[limit], -limit))


def converged_ratio(zeus: Path, gpu: str, dataset: str, eta: float) -> float:
    """Converged Zeus's expected energy to the target over Default's: of the batch sizes that reach it, the one of lowest
    expected cost eta x E + (1 - eta) x MaxPower x T at its profiled limit; Default: b0 at its largest limit, b0 the artifact's
    default batch size or, on a GPU that did not profile it, the largest the GPU did (min of the two, the artifact's rule)."""
    by_bs, max_power = configs(zeus, gpu, dataset)
    max_epochs, b0 = ARTIFACT_JOBS[dataset][3], min(ARTIFACT_JOBS[dataset][4], max(by_bs))
    default = to_target(by_bs[b0], max(by_bs[b0].limits), max_epochs)
    assert default is not None
    best = None
    for bs in sorted(by_bs):
        found = to_target(by_bs[bs], profiled_limit(by_bs[bs], eta), max_epochs)
        if found is not None and (best is None or eta * found[0] + (1 - eta) * max_power * found[1] < best[0]):
            best = (eta * found[0] + (1 - eta) * max_power * found[1], found[0])
    assert best is not None
    return best[1] / default[0]


def anchored_kwh(runs: list[tuple[str, str, str, float, float]], elapsed_s: dict[tuple[str, str], float], policy: str) -> float:
    """Anchored energy of ``policy`` (kWh): each job's runs scaled by its elapsed time over its Default runs' summed time.

    ``runs``: (group, job id, policy, energy J, time s) of a replay; ``elapsed_s``: (group, job id) -> the export's elapsed s.
    """
    default_s: dict[tuple[str, str], float] = defaultdict(float)
    for group, job, name, _, seconds in runs:
        if name == "default":
            default_s[(group, job)] += seconds
    return sum(energy * elapsed_s[(group, job)] / default_s[(group, job)] for group, job, name, energy, _ in runs if name == policy) / 3.6e6
