"""Expected time-to-accuracy of each Zeus workload at its default configuration (for runtime-based mapping)."""

from __future__ import annotations

import math

from pipelines.vocabulary import REFERENCE_GPU, ZEUS_DATASETS
from pipelines.zeus.groups import group_job_spec
from pipelines.zeus.traces import Traces, build_table


def default_tta_s(traces: Traces, dataset: str, gpu: str = REFERENCE_GPU) -> float:
    """Mean TTA (s) of ``dataset``'s default job (b0 at its maximum power limit) over the runs that reach the target."""
    table = build_table(traces, gpu, group_job_spec(traces, gpu, dataset))
    t = table.by_batch_size[table.spec.default_bs]
    reached = [e for e in t.target_epochs if not math.isnan(e)]
    return sum(reached) / len(reached) * t.time_per_epoch[t.limit_index(t.max_power_limit)]


def workloads_by_default_tta(traces: Traces, gpu: str = REFERENCE_GPU) -> list[str]:
    """The six datasets, shortest expected default TTA on ``gpu`` first (ties by name)."""
    return sorted(ZEUS_DATASETS, key=lambda d: (default_tta_s(traces, d, gpu), d))
