"""The ways to split K units of batch among N GPUs, every GPU getting at least one unit.

A split (k_1, ..., k_N) with k_i >= 1 and sum k_i = K is a composition of K into N parts; there are
C(K - 1, N - 1) of them (4,095 for two GPUs and K = 4096; 8,382,465 for three). They are generated
in lexicographic order through their cut points c_j = k_1 + ... + k_j (1 <= c_1 < ... < c_{N-1} <= K-1,
itself a lexicographic order), in chunks, with the last two cuts vectorised: the Python loop runs
C(K - 1, N - 3) times (once for N <= 3).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

import numpy as np

#: Rows per chunk handed to the caller.
DEFAULT_CHUNK_ROWS = 1 << 18


def count(total_units: int, parts: int) -> int:
    """Number of compositions of ``total_units`` into ``parts`` positive parts: C(K - 1, N - 1)."""
    if parts < 1 or total_units < parts:
        return 0
    return math.comb(total_units - 1, parts - 1)


def _cut_pair_blocks(low: int, high: int, max_rows: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """All (x, y) with low < x < y <= high, lexicographically, in blocks of whole x rows (<= max_rows, or one x row)."""
    xs = np.arange(low + 1, high, dtype=np.int64)
    if xs.size == 0:
        return
    counts = high - xs  # y runs over x + 1 .. high
    ends = np.cumsum(counts)
    first = 0
    while first < xs.size:
        base = ends[first - 1] if first else 0
        last = max(first + 1, int(np.searchsorted(ends, base + max_rows, side="right")))
        block_counts = counts[first:last]
        x = np.repeat(xs[first:last], block_counts)
        offsets = np.arange(x.size, dtype=np.int64) - np.repeat(np.cumsum(block_counts) - block_counts, block_counts)
        yield x, x + 1 + offsets
        first = last


def chunks(total_units: int, parts: int, chunk_rows: int = DEFAULT_CHUNK_ROWS) -> Iterator[np.ndarray]:
    """Compositions of ``total_units`` into ``parts`` positive parts, lexicographically, as int64 arrays (M, parts).

    M <= ``chunk_rows`` except for a block of one first-of-two-last cut, which holds at most K - 2 rows.
    """
    if parts < 1:
        raise ValueError(f"parts {parts}: need at least one GPU")
    if count(total_units, parts) == 0:
        return
    if parts == 1:
        yield np.array([[total_units]], dtype=np.int64)
        return
    if parts == 2:
        cuts = np.arange(1, total_units, dtype=np.int64)[:, None]
        yield from _split_rows(_parts_from_cuts(cuts, total_units), chunk_rows)
        return
    pending: list[np.ndarray] = []
    pending_rows = 0
    for prefix in itertools.combinations(range(1, total_units), parts - 3):
        last = prefix[-1] if prefix else 0
        for x, y in _cut_pair_blocks(last, total_units - 1, chunk_rows):
            cuts = np.empty((x.size, parts - 1), dtype=np.int64)
            cuts[:, : parts - 3] = prefix
            cuts[:, -2], cuts[:, -1] = x, y
            if pending and pending_rows + x.size > chunk_rows:
                yield np.concatenate(pending)
                pending, pending_rows = [], 0
            pending.append(_parts_from_cuts(cuts, total_units))
            pending_rows += x.size
    if pending:
        yield np.concatenate(pending)


def _parts_from_cuts(cuts: np.ndarray, total_units: int) -> np.ndarray:
    bounds = np.empty((cuts.shape[0], cuts.shape[1] + 2), dtype=np.int64)
    bounds[:, 0] = 0
    bounds[:, 1:-1] = cuts
    bounds[:, -1] = total_units
    return np.diff(bounds, axis=1)


def _split_rows(block: np.ndarray, chunk_rows: int) -> Iterator[np.ndarray]:
    for start in range(0, block.shape[0], chunk_rows):
        yield block[start : start + chunk_rows]
