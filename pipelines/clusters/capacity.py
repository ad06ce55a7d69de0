"""How many GPUs each trace's cluster has: the published size where one is known, else the trace's peak concurrent GPUs.

The power model charges the idle draw of every GPU of the cluster not running a job
(``pipelines.clusters.power``), so it needs the cluster's size, not only its busy GPUs. In order:

1. a setting: ``whatif --cluster-gpus N``, or ``cluster_gpus = N`` in a user trace's sidecar
   (``clusters add --cluster-gpus N``). It may not be below the trace's peak concurrent GPUs
   (``CapacityError``: the trace itself shows more GPUs busy at once);
2. the published size (``PUBLISHED``; each number with its source);
3. the trace's peak concurrent GPUs: the most GPUs its replayed jobs hold at one instant on the
   trace's own timeline (``[start_time_s, end_time_s)`` x ``num_gpu``; a job ending at t frees its
   GPUs before one starting at t takes them). Failed and cancelled jobs are not replayed, so they
   are not counted: a cluster's real size is at least this.

A published size below the peak is raised to the peak (and says so): the replay runs every job
at its trace start, without the queueing the real cluster imposed, so the combined trace can hold
more GPUs at once than the cluster had.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from pipelines.clusters.mapping import own_replay_candidates
from pipelines.vocabulary.units import epoch_s


class CapacityError(ValueError):
    """A cluster size that cannot be: not a positive integer, or below the trace's peak concurrent GPUs."""


@dataclass(frozen=True)
class Published:
    """A cluster size from a publication: GPUs and where the number comes from."""

    gpus: int
    source: str


_EF_ARTIFACT = ("ElasticFlow's artifact (pkusys/ElasticFlow, ElasticFlow/scheduler/run_fig8b.sh) replays cluster01-03, 05 and 06 on "
                "64 nodes x 8 GPUs, cluster04 and 07-09 on 128 x 8, cluster10 on 32 x 8")
#: Clusters of the public traces with a published size (trace -> cluster -> size).
PUBLISHED_CLUSTERS: dict[str, dict[str, Published]] = {
    "itp": {
        **{c: Published(512, _EF_ARTIFACT) for c in ("cluster01", "cluster02", "cluster03", "cluster05", "cluster06")},
        **{c: Published(1024, _EF_ARTIFACT) for c in ("cluster04", "cluster07", "cluster08", "cluster09")},
        "cluster10": Published(256, _EF_ARTIFACT),
    },
    "acme": {
        "seren": Published(2288, "AcmeTrace (Hu et al., NSDI '24, 'Characterization of Large Language Model Development in the "
                                  "Datacenter'): Seren, 286 nodes x 8 A100-SXM4 80 GB"),
        "kalos": Published(2416, "AcmeTrace (Hu et al., NSDI '24): Kalos, 302 nodes x 8 A100-SXM4 80 GB"),
    },
}
PUBLISHED_CLUSTERS["elasticflow"] = {
    **PUBLISHED_CLUSTERS["itp"],
    "testbed": Published(128, "ElasticFlow's testbed trace (195 jobs) ran on 16 Azure VMs x 8 A100 (pkusys/ElasticFlow README)"),
}


def _published(trace: str) -> Published | None:
    clusters = PUBLISHED_CLUSTERS.get(trace)
    if not clusters:
        return None
    sources = list(dict.fromkeys(p.source for p in clusters.values()))
    total = sum(p.gpus for p in clusters.values())
    return Published(total, f"{', '.join(f'{c} {p.gpus:,}' for c, p in clusters.items())} GPUs: {total:,} in all ({'; '.join(sources)})")


#: Every public trace with a published size: the sum of its clusters'.
PUBLISHED: dict[str, Published] = {t: p for t in PUBLISHED_CLUSTERS if (p := _published(t)) is not None}


@dataclass(frozen=True)
class Capacity:
    """A trace's cluster size (GPUs), where it comes from, the trace's peak concurrent GPUs, and its window.

    The window (s, the trace's clock) runs from the first replayed job's start to the last one's
    end: the time over which the power model charges the idle draw of the GPUs without a job.
    """

    trace: str
    cluster_gpus: int
    source: str
    peak_concurrent_gpus: int
    window_start_s: float
    window_end_s: float

    @property
    def window_s(self) -> float:
        return self.window_end_s - self.window_start_s


def trace_window(jobs: pl.DataFrame) -> tuple[float, float]:
    """(first start, last end) of the jobs (s); (0, 0) for none."""
    if jobs.height == 0:
        return 0.0, 0.0
    first, last = jobs.select(pl.col("start_time_s").min(), pl.col("end_time_s").max()).row(0)
    return float(first), float(max(last, first))


def peak_concurrent_gpus(jobs: pl.DataFrame) -> int:
    """The most GPUs the jobs (``start_time_s``, ``end_time_s``, ``num_gpu``) hold at one instant; 0 for none.

    A job holds its GPUs over ``[start_time_s, end_time_s)``: one ending at t frees them before one
    starting at t takes them. A zero-length job holds none.
    """
    held = jobs.select("start_time_s", "end_time_s", "num_gpu").filter(pl.col("end_time_s") > pl.col("start_time_s"))
    if held.height == 0:
        return 0
    times = np.concatenate((held["start_time_s"].to_numpy(), held["end_time_s"].to_numpy()))
    gpus = held["num_gpu"].to_numpy().astype(np.int64)
    delta = np.concatenate((gpus, -gpus))
    order = np.lexsort((delta, times))  # at equal times the ends (negative) come first
    return int(max(np.cumsum(delta[order]).max(), 0))


def own_slots(jobs: pl.DataFrame) -> pl.DataFrame:
    """The slots (start_time_s, end_time_s, num_gpu; s since 1970) of the allocations of an own trace the replay uses."""
    return own_replay_candidates(jobs).select(
        epoch_s(pl.col("start_time")).alias("start_time_s"),
        epoch_s(pl.col("end_time")).alias("end_time_s"),
        pl.col("num_gpus").alias("num_gpu"),
    )


def check_setting(gpus: object, what: str) -> int:
    """``gpus`` as a positive int, or ``CapacityError`` naming ``what`` (the option or the sidecar)."""
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise CapacityError(f"{what}: {gpus!r} is not a whole number of GPUs >= 1")
    return gpus


def resolve(trace: str, jobs: pl.DataFrame, setting: int | None = None, *, setting_name: str = "--cluster-gpus") -> Capacity:
    """The cluster size of ``trace`` whose replayed jobs are ``jobs`` (module docstring); ``CapacityError`` for a setting below the peak."""
    peak = peak_concurrent_gpus(jobs)
    window = trace_window(jobs)
    if setting is not None:
        gpus = check_setting(setting, setting_name)
        if gpus < peak:
            raise CapacityError(f"{setting_name} {gpus:,} is below the trace's peak of {peak:,} concurrent GPUs "
                                "(its replayed jobs hold that many at once); give at least that")
        return Capacity(trace, gpus, f"set by {setting_name}", peak, *window)
    return _sized(trace, PUBLISHED.get(trace), peak, window, "the trace's")


def _sized(trace: str, published: Published | None, peak: int, window: tuple[float, float], whose: str) -> Capacity:
    if published is not None and published.gpus >= peak:
        return Capacity(trace, published.gpus, f"published: {published.source}", peak, *window)
    if published is not None:
        return Capacity(trace, peak, f"{whose} peak concurrent GPUs ({peak:,}), above the published {published.gpus:,} "
                        f"({published.source}): the replay does not queue", peak, *window)
    return Capacity(trace, max(peak, 1), f"{whose} peak concurrent GPUs (no published size)", peak, *window)


def cluster_capacity(trace: str, cluster: str, jobs: pl.DataFrame) -> Capacity:
    """One cluster of a trace (``jobs`` of that cluster), named ``trace``: its published size, else its peak concurrent GPUs."""
    return _sized(trace, PUBLISHED_CLUSTERS.get(trace, {}).get(cluster), peak_concurrent_gpus(jobs), trace_window(jobs),
                  f"{cluster}'s")
