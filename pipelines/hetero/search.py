"""The exact optimal split and power limits, by vectorised enumeration; the published methods.

Search space: a global batch G split into N shares that are positive multiples of the granularity g
(G divisible by g; the published search uses g = 1, so each share is 1..G-1), and one power limit
per GPU. Candidates are taken in lexicographic order of (split, then power-limit indices in
profile order); the first minimum wins. For two GPUs this is exactly the published tie-break (its
loops run over (b1, p1), then (b2, p2), and ``sorted(...)[0]`` keeps the first of equal costs).

Complexity, with U = G / g units, S = C(U - 1, N - 1) splits and L_i limits on GPU i (times measured
on this project's 2-core machine, A10 + T4 profiles, 5 x 3 limits, a third GPU with 3):

- ``published`` model: the cost is a sum of per-GPU terms, so each GPU's best limit per share is
  taken first (O(U sum L_i)), then the S splits are scanned: O(U sum L_i + N S) time. Two GPUs,
  G = 4096: 4,095 splits, ~1 ms; three GPUs: 8.4 M splits, ~0.4 s. Where S exceeds
  ``max_candidates`` (four or more GPUs at fine granularity) a min-plus dynamic programme over the
  GPUs gives the optimum in O(N U^2) time and O(N U) memory (four GPUs at g = 1: ~0.2 s).
- ``sync`` model: the max over GPUs couples them, so every (split, limits) pair is scored:
  O(N S prod L_i) time, in chunks of bounded memory, ~30 M candidates/s. Two GPUs: 61,425
  candidates, a few ms; three GPUs at g = 1: 377 M, ~13 s; at g = 8: 5.9 M, ~0.3 s; four GPUs need
  g >= 16 or so. Searches above ``max_candidates`` raise ``SearchTooLarge`` (with a granularity
  that fits) instead of running for hours.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from pipelines.hetero import compositions
from pipelines.hetero.fit import GpuFit
from pipelines.hetero.model import CostModel, left_sum, published_totals, sync_totals
from pipelines.zeus.cost import power_cost

#: Largest number of candidates scored by enumeration (~30 s of numpy on one core for the sync model).
DEFAULT_MAX_CANDIDATES = 1_000_000_000
#: Most steps (global batch / granularity) a ``Grid`` has: a GPU's tables hold one entry per step, so memory grows with
#: them (``--global-batch 99999999999`` ran out of memory in numpy); the published grid has 4,096.
MAX_UNITS = 1_000_000
#: Elements per chunk of the sync enumeration (splits x limit combinations): bounds memory to ~100 MB.
CHUNK_ELEMENTS = 1 << 21
#: The published global batch and the published even split's share.
PUBLISHED_GLOBAL_BATCH = 4096

Progress = Callable[[int], None]


class SearchTooLarge(ValueError):
    """An enumeration above ``max_candidates``: use a coarser granularity or fewer GPUs."""


@dataclass(frozen=True)
class Grid:
    """The batch grid: global batch G (samples) split in positive multiples of ``granularity``."""

    global_batch: int = PUBLISHED_GLOBAL_BATCH
    granularity: int = 1

    def __post_init__(self) -> None:
        if self.granularity < 1 or self.global_batch < 1:
            raise ValueError(f"global batch {self.global_batch} and granularity {self.granularity} must be >= 1")
        if self.global_batch % self.granularity:
            raise ValueError(f"global batch {self.global_batch} is not a multiple of the granularity {self.granularity}")
        if self.units > MAX_UNITS:
            raise ValueError(f"global batch {self.global_batch:,} in steps of {self.granularity:,} is {self.units:,} steps; at most "
                             f"{MAX_UNITS:,} (each GPU's tables hold one entry per step): give a coarser --granularity")

    @property
    def units(self) -> int:
        return self.global_batch // self.granularity

    def batches(self) -> np.ndarray:
        """Batch size (samples) of every unit count 0..U: index k holds k x granularity."""
        return np.arange(self.units + 1, dtype=np.int64) * self.granularity


@dataclass(frozen=True)
class Allocation:
    """One allocation and its scores under ``model``: split (samples) and limits (W) in GPU order.

    ``time_s`` is the slowest GPU's time (s), ``energy_j`` the model's energy (J), ``cost`` the model's
    cost (J); ``candidates`` the size of the search space (splits x power-limit combinations).
    """

    gpus: tuple[str, ...]
    batch_split: tuple[int, ...]
    power_limits: tuple[int, ...]
    gpu_time_s: tuple[float, ...]
    time_s: float
    energy_j: float
    cost: float
    candidates: int = 1


@dataclass(frozen=True)
class _GpuTable:
    time: np.ndarray  # (L, U + 1) s
    power: np.ndarray  # (L, U + 1) W
    price: np.ndarray  # (L,) W


def _tables(fits: Sequence[GpuFit], grid: Grid, model: CostModel) -> list[_GpuTable]:
    batches = grid.batches()
    return [_GpuTable(f.time_s(batches), f.power_w(batches), model.prices(f)) for f in fits]


def _limit_indices(fit: GpuFit, limits_w: int) -> int:
    hits = np.flatnonzero(fit.power_limits == limits_w)
    if hits.size == 0:
        raise ValueError(f"{fit.gpu}: no power limit {limits_w} W in its profile ({fit.power_limits.tolist()})")
    return int(hits[0])


def evaluate(
    fits: Sequence[GpuFit], batch_split: Sequence[int], power_limits: Sequence[int], model: CostModel, candidates: int = 1
) -> Allocation:
    """Score one allocation (split in samples, limits in W) under ``model``; bit-identical to the search's numbers."""
    if len(batch_split) != len(fits) or len(power_limits) != len(fits):
        raise ValueError(f"{len(fits)} GPUs need {len(fits)} shares and limits, got {batch_split} and {power_limits}")
    rows = [_limit_indices(f, int(w)) for f, w in zip(fits, power_limits, strict=True)]
    times = [f.time_s(np.array([b]))[r] for f, b, r in zip(fits, batch_split, rows, strict=True)]
    powers = [f.power_w(np.array([b]))[r] for f, b, r in zip(fits, batch_split, rows, strict=True)]
    prices = [model.prices(f)[r : r + 1] for f, r in zip(fits, rows, strict=True)]
    if model.kind == "published":
        time, energy, cost = published_totals(powers, times, prices, model.eta)
    else:
        time, energy, cost = sync_totals(powers, times, prices, model.idle_powers(fits), model.eta)
    return Allocation(
        gpus=tuple(f.gpu for f in fits),
        batch_split=tuple(int(b) for b in batch_split),
        power_limits=tuple(int(w) for w in power_limits),
        gpu_time_s=tuple(float(t[0]) for t in times),
        time_s=float(time[0]),
        energy_j=float(energy[0]),
        cost=float(cost[0]),
        candidates=candidates,
    )


def optimise(
    fits: Sequence[GpuFit],
    grid: Grid,
    model: CostModel,
    *,
    allowed_limits: Sequence[Sequence[int] | None] | None = None,
    fixed_split: Sequence[int] | None = None,
    max_candidates: int = DEFAULT_MAX_CANDIDATES,
    progress: Progress | None = None,
) -> Allocation:
    """The lowest-cost allocation under ``model`` (first in lexicographic order among equals).

    ``allowed_limits``: per GPU, the power-limit indices (into ``fit.power_limits``) it may use, or
    None for all. ``fixed_split``: score only this split (samples, multiples of the granularity).
    ``progress`` is called with the number of splits done after each chunk.
    """
    if not fits:
        raise ValueError("no GPUs to allocate to")
    n = len(fits)
    allowed = [
        np.arange(f.n_limits) if a is None else np.asarray(sorted(set(a)), dtype=np.int64)
        for f, a in zip(fits, allowed_limits or [None] * n, strict=True)
    ]
    for f, a in zip(fits, allowed, strict=True):
        if a.size == 0 or a.min() < 0 or a.max() >= f.n_limits:
            raise ValueError(f"{f.gpu}: allowed power-limit indices {a.tolist()} outside 0..{f.n_limits - 1}")
    tables = _tables(fits, grid, model)
    chunks: Iterator[np.ndarray] | None = None
    if fixed_split is not None:
        units = _units_of(fixed_split, grid, n)
        splits_total, chunks = 1, iter([units[None, :]])
    else:
        splits_total = compositions.count(grid.units, n)
        if splits_total == 0:
            raise ValueError(f"global batch {grid.global_batch} in steps of {grid.granularity} cannot give {n} GPUs a share each")
    if model.kind == "published":
        split_units, rows, scored = _search_published(tables, allowed, model, grid, splits_total, chunks, max_candidates, progress)
    else:
        split_units, rows, scored = _search_sync(tables, allowed, model, fits, grid, splits_total, chunks, max_candidates, progress)
    split = [int(u) * grid.granularity for u in split_units]
    limits = [int(f.power_limits[r]) for f, r in zip(fits, rows, strict=True)]
    return evaluate(fits, split, limits, model, candidates=scored)


def _units_of(split: Sequence[int], grid: Grid, n: int) -> np.ndarray:
    if len(split) != n or sum(split) != grid.global_batch or any(b <= 0 or b % grid.granularity for b in split):
        raise ValueError(
            f"split {tuple(split)}: need {n} positive multiples of {grid.granularity} summing to {grid.global_batch}"
        )
    return np.asarray(split, dtype=np.int64) // grid.granularity


_Found = tuple[Sequence[int], list[int], int]  # (units per GPU, limit index per GPU, size of the search space)


def _search_published(
    tables: list[_GpuTable], allowed: list[np.ndarray], model: CostModel, grid: Grid, splits_total: int,
    chunks: Iterator[np.ndarray] | None, max_candidates: int, progress: Progress | None,
) -> _Found:  # fmt: skip
    n = len(tables)
    # Separable: the best allowed limit of each GPU at each share first (first index among equals).
    best_cost, best_row = [], []
    for table, rows in zip(tables, allowed, strict=True):
        cost = power_cost(model.eta, table.power[rows], table.price[rows][:, None], table.time[rows])
        pick = np.argmin(cost, axis=0)
        best_cost.append(cost[pick, np.arange(cost.shape[1])])
        best_row.append(rows[pick])
    scored = splits_total * math.prod(r.size for r in allowed)
    if chunks is None and splits_total > max_candidates:
        units = _min_plus_split(best_cost, grid.units)
        return units, [int(best_row[i][u]) for i, u in enumerate(units)], scored
    if chunks is None:
        chunks = compositions.chunks(grid.units, n)
    best_value, best_units = np.inf, None
    for block in chunks:
        total = left_sum([best_cost[i][block[:, i]] for i in range(n)])
        at = int(np.argmin(total))
        if total[at] < best_value:
            best_value, best_units = total[at], block[at]
        if progress:
            progress(block.shape[0])
    if best_units is None:
        raise ValueError("every candidate cost is NaN: check the profiles")
    return best_units, [int(best_row[i][u]) for i, u in enumerate(best_units)], scored


def _min_plus_split(costs: list[np.ndarray], units: int) -> list[int]:
    """The split minimising sum_i costs[i][k_i] with sum k_i = units, k_i >= 1, by dynamic programming.

    ``tail[i][s]`` is the best cost of GPUs i.. sharing s units; the split is read from the first GPU
    on, taking the smallest share among equal costs (the lexicographic tie-break, up to the rounding
    of sums taken in a different order than the enumeration's).
    """
    n = len(costs)
    tail: list[np.ndarray] = [np.empty(0)] * n
    last = costs[-1].astype(np.float64).copy()
    last[0] = np.inf
    tail[-1] = last
    k = np.arange(units + 1)
    for i in range(n - 2, -1, -1):
        best = np.full(units + 1, np.inf)
        for start in range(0, units + 1, 256):
            s = np.arange(start, min(start + 256, units + 1))
            rest = s[:, None] - k[None, :]
            valid = (k[None, :] >= 1) & (rest >= 1)
            scores = np.where(valid, costs[i][None, :] + tail[i + 1][np.clip(rest, 0, units)], np.inf)
            best[s] = scores.min(axis=1)
        tail[i] = best
    split, remaining = [], units
    for i in range(n - 1):
        share = np.arange(1, remaining)
        scores = costs[i][share] + tail[i + 1][remaining - share]
        pick = int(share[np.argmin(scores)])
        split.append(pick)
        remaining -= pick
    return [*split, remaining]


def _search_sync(
    tables: list[_GpuTable], allowed: list[np.ndarray], model: CostModel, fits: Sequence[GpuFit], grid: Grid, splits_total: int,
    chunks: Iterator[np.ndarray] | None, max_candidates: int, progress: Progress | None,
) -> _Found:  # fmt: skip
    n = len(tables)
    combos = math.prod(r.size for r in allowed)
    scored = splits_total * combos
    if scored > max_candidates:
        raise SearchTooLarge(
            f"the synchronous model would score {scored:,} candidates ({splits_total:,} splits x {combos} limit "
            f"combinations), above {max_candidates:,}: use a coarser granularity (e.g. {_suggest(grid, n, combos, max_candidates)})"
        )
    idle = model.idle_powers(fits)
    # GPU i's limits live on axis i of an (L_1, ..., L_N, M) array.
    shapes = [tuple(r.size if j == i else 1 for j in range(n)) + (-1,) for i, r in enumerate(allowed)]
    prices = [tables[i].price[allowed[i]].reshape(shapes[i][:-1] + (1,)) for i in range(n)]
    if chunks is None:
        chunks = compositions.chunks(grid.units, n, max(1, CHUNK_ELEMENTS // combos))
    best_value, best_units, best_rows = np.inf, None, None
    for block in chunks:
        times = [tables[i].time[allowed[i]][:, block[:, i]].reshape(shapes[i]) for i in range(n)]
        powers = [tables[i].power[allowed[i]][:, block[:, i]].reshape(shapes[i]) for i in range(n)]
        _, _, cost = sync_totals(powers, times, prices, idle, model.eta)
        flat = np.moveaxis(cost, -1, 0).reshape(block.shape[0], combos)  # split-major, then limits
        at = int(np.argmin(flat))
        if flat.flat[at] < best_value:
            split_at, combo_at = divmod(at, combos)
            best_value, best_units = flat.flat[at], block[split_at]
            best_rows = [int(allowed[i][j]) for i, j in enumerate(np.unravel_index(combo_at, [r.size for r in allowed]))]
        if progress:
            progress(block.shape[0])
    if best_units is None or best_rows is None:
        raise ValueError("every candidate cost is NaN: check the profiles")
    return best_units, best_rows, scored


def _suggest(grid: Grid, n: int, combos: int, max_candidates: int) -> str:
    for step in (2, 4, 8, 16, 32, 64, 128, 256, 512):
        g = grid.granularity * step
        if grid.global_batch % g == 0 and compositions.count(grid.global_batch // g, n) * combos <= max_candidates:
            return f"--granularity {g}"
    return "fewer GPUs"


# ---------------------------------------------------------------------------------------------
# The published methods (GPU order: the stronger GPU first, as the published code assumes)


def brute_force(
    fits: Sequence[GpuFit],
    grid: Grid,
    model: CostModel,
    *,
    max_candidates: int = DEFAULT_MAX_CANDIDATES,
    progress: Progress | None = None,
) -> Allocation:
    """Every split and every power limit of every GPU."""
    return optimise(fits, grid, model, max_candidates=max_candidates, progress=progress)


def heuristic(
    fits: Sequence[GpuFit],
    grid: Grid,
    model: CostModel,
    *,
    max_candidates: int = DEFAULT_MAX_CANDIDATES,
    progress: Progress | None = None,
) -> Allocation:
    """The stronger (first) GPU pinned to its lowest power limit; every split and the other GPUs' limits."""
    allowed: list[Sequence[int] | None] = [[fits[0].min_limit_index()], *[None] * (len(fits) - 1)]
    return optimise(fits, grid, model, allowed_limits=allowed, max_candidates=max_candidates, progress=progress)


def baseline(
    fits: Sequence[GpuFit],
    grid: Grid,
    model: CostModel,
    *,
    max_candidates: int = DEFAULT_MAX_CANDIDATES,
    progress: Progress | None = None,
) -> Allocation:
    """The even split G / N per GPU (G must be divisible by N x granularity); every power limit."""
    n = len(fits)
    if grid.global_batch % (n * grid.granularity):
        raise ValueError(f"global batch {grid.global_batch} cannot be split evenly over {n} GPUs in steps of {grid.granularity}")
    return optimise(fits, grid, model, fixed_split=[grid.global_batch // n] * n, max_candidates=max_candidates, progress=progress)


def baseline_as_written(fits: Sequence[GpuFit]) -> tuple[Allocation, float]:
    """The published ``calculateBaseline`` exactly as its code computes it (two GPUs, G = 4096).

    Its ``result += ...`` line sits after the loop over the two GPUs, so the score of each limit
    pair is GPU 2's term alone, ``(.5 * P_2 + .5 * p_2) * T_2`` at 2048 samples, with no clipping at
    0; every GPU-1 limit ties, and the first in profile order is kept. Returns the allocation scored
    by the (correct) published model, and the score the published code reports for it.
    """
    if len(fits) != 2:
        raise ValueError("the published baseline takes exactly two GPUs")
    share = np.array([PUBLISHED_GLOBAL_BATCH // 2])
    second = fits[1]
    score = power_cost(0.5, second.power_w(share, clip=False), second.power_limits[:, None].astype(np.float64),
                       second.time_s(share, clip=False))[:, 0]
    scores = np.broadcast_to(score[None, :], (fits[0].n_limits, second.n_limits))  # (p1, p2), p1-major as the loops
    p1, p2 = np.unravel_index(int(np.argmin(scores)), scores.shape)
    limits = [int(fits[0].power_limits[p1]), int(second.power_limits[p2])]
    allocation = evaluate(fits, [int(share[0])] * 2, limits, CostModel("published"), candidates=scores.size)
    return allocation, float(scores[p1, p2])
