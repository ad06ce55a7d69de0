"""The reference group replay: one group of recurring jobs, in plain Python (the published ``simulate_one_alibaba_group``).

The readable specification of the replay and the test oracle of the compiled one
(``pipelines.zeus.fast``); ``pipelines.zeus.groups.replay_groups`` runs either over a whole table.

Within a group, time follows the trace. Before a job starts, every run that has ended by then
is reaped, earliest end first (ties in submission order): the optimizer observes its cost; a
run that reached the target may lower the minimum cost (and set the best known batch size); a
run that missed is retried at once, starting at its end and taking the same wall time. A run
submitted while others are in flight uses the best known batch size and its power limit;
otherwise the policy chooses (and may explore). Reported energy and time are scaled by the
job's runtime_ratio; the cost the optimizer sees is not. Early stopping uses beta x the lowest
cost of a single run that reached the target. Runs that could not afford one epoch are observed
at cost 0 and retried, but not reported. A trace job whose runs miss the target 1000 times stops
the replay with ``SimulationError`` (the published code retries forever).
"""

from __future__ import annotations

import heapq
import math
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import polars as pl

from pipelines.vocabulary import DEFAULT_BETA, DEFAULT_ETA, PolicyName
from pipelines.zeus.cost import zeus_cost
from pipelines.zeus.errors import SimulationError
from pipelines.zeus.job_runs import RunSampler
from pipelines.zeus.policies import make_policy
from pipelines.zeus.traces import WorkloadTable

#: Runs of one trace job after which its group is declared stuck (the published code would retry forever).
_MAX_ATTEMPTS = 1_000


def group_seed(group: str, seed: int | None = None) -> int:
    """The seed of one group's replay (its optimizer and its run sampler), a uint32.

    ``seed=None`` is the artifact's: adler32 of the UTF-8 group id (the published replay,
    ``zeus_cluster_history``). A seed knob ``seed`` >= 0 (a sweep's repetitions) derives an
    independent stream per group: the first uint32 of numpy's
    ``SeedSequence(entropy=adler32(group), spawn_key=(seed,))``. Knob values never coincide with
    each other or with the published seeding (seed 1 is not ``None``; note that
    ``zlib.adler32(data, 1)`` would silently equal the published seed), and the value depends only
    on (group, seed), so a replay is the same wherever and in whatever order it runs.
    """
    base = zlib.adler32(group.encode("utf-8"))
    if seed is None:
        return base
    if seed < 0:
        raise ValueError(f"seed knob must be >= 0, got {seed}")
    return int(np.random.SeedSequence(entropy=base, spawn_key=(seed,)).generate_state(1, np.uint32)[0])


def replay_group(
    table: WorkloadTable,
    start: np.ndarray,
    end: np.ndarray,
    ratio: np.ndarray,
    eta: float = DEFAULT_ETA,
    beta: float = DEFAULT_BETA,
    seed: int = 0,
    policy: PolicyName = "zeus",
    job_eta: np.ndarray | None = None,
) -> list[tuple[int, float, float, int, int, float, float, bool]]:
    """The reported runs of one group: (job, start_time, end_time, bs, pl, energy J, time s, reached).

    ``start``/``end``/``ratio`` are the group's jobs in start order; ``job`` indexes them.
    ``job_eta`` (a carbon-aware Zeus): one energy weight per job, which picks the power limit each of
    its runs (retries included) uses for the batch size chosen, by the just-in-time profile of that
    batch size (``best_power_limit``); the batch-size optimizer, early stopping and the costs it
    learns from keep ``eta``, so what it learns stays comparable across jobs.
    """
    pol = make_policy(policy, table, eta, seed, concurrency=True)
    sampler = RunSampler(table, eta, seed)
    beta = beta if pol.early_stopping else math.inf
    max_power = table.max_power
    state = _GroupState(table.spec.default_bs)
    out: list[tuple[int, float, float, int, int, float, float, bool]] = []
    # In flight, earliest end first, ties in submission order: (end, seq, start, ratio, job, attempt, bs, pl, reached, time, energy, cost)
    heap: list[tuple[float, int, float, float, int, int, int, int, bool, float, float, float]] = []
    seq = 0

    def submit(job: int, attempt: int, t0: float, t1: float, r: float) -> None:
        nonlocal seq
        if attempt > _MAX_ATTEMPTS:
            raise SimulationError(f"job {job} of the group missed the target in {_MAX_ATTEMPTS} runs")
        if heap:
            # Concurrent: the best known config. For Zeus best_pl is always its JIT limit of best_bs.
            bs = state.best_bs
            limit = state.best_pl if state.best_pl is not None else pol.power_limit(bs)
            profile = False
        else:
            bs, limit, profile = pol.choose()
        if job_eta is not None and policy == "zeus":  # carbon-aware: this job's own trade-off picks the limit
            limit = table.by_batch_size[bs].best_power_limit(float(job_eta[job]))
        energy, time, reached = sampler.run(bs, limit, profile, beta * state.min_cost)
        cost = zeus_cost(eta, energy, max_power, time)
        heapq.heappush(heap, (t1, seq, t0, r, job, attempt, bs, limit, reached, time, energy, cost))
        seq += 1

    def reap(now: float) -> None:
        while heap and heap[0][0] <= now:
            t1, _, t0, r, job, attempt, bs, limit, reached, time, energy, cost = heapq.heappop(heap)
            pol.observe(bs, limit, cost, reached)
            if energy != 0 or time != 0 or reached:
                out.append((job, t0, t1, bs, limit, energy * r, time * r, reached))
            if reached:
                if state.min_cost > cost:
                    state.min_cost, state.best_bs, state.best_pl = cost, bs, limit
            else:
                submit(job, attempt + 1, t1, t1 + (t1 - t0), r)

    starts, ends, ratios = start.tolist(), end.tolist(), ratio.tolist()
    for job in range(len(starts)):
        reap(starts[job])
        submit(job, 1, starts[job], ends[job], ratios[job])
    reap(math.inf)
    return out


@dataclass
class _GroupState:
    best_bs: int
    best_pl: int | None = None
    min_cost: float = math.inf


def _replay_order(groups: pl.DataFrame) -> tuple[pl.DataFrame, list[int]]:
    """(``groups`` in replay order: groups sorted, jobs by start, ties in table order, with ``_row``; each group's bounds)."""
    ordered = groups.with_row_index("_row").sort(["group", "start_time", "_row"])
    ids = ordered["group"].to_list()
    return ordered, [0, *(i for i in range(1, len(ids)) if ids[i] != ids[i - 1]), len(ids)]


def iter_groups(groups: pl.DataFrame) -> Iterator[tuple[str, str, np.ndarray, np.ndarray, np.ndarray]]:
    """(group, dataset, start, end, runtime_ratio) per group: groups sorted, jobs by start (ties in table order)."""
    ordered, bounds = _replay_order(groups)
    ids = ordered["group"].to_list()
    datasets = ordered["dataset"].to_list()
    start, end, ratio = (ordered[c].to_numpy() for c in ("start_time", "end_time", "runtime_ratio"))
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        yield ids[lo], datasets[lo], start[lo:hi], end[lo:hi], ratio[lo:hi]


def iter_group_values(groups: pl.DataFrame, values: np.ndarray) -> Iterator[np.ndarray]:
    """``values`` (one per row of ``groups``) per group, in the order and with the jobs of ``iter_groups``."""
    ordered, bounds = _replay_order(groups)
    by_job = np.asarray(values)[ordered["_row"].to_numpy()]
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        yield by_job[lo:hi]
