"""How well an intensity or price series covers the jobs it prices: its gaps, what ``--fill`` filled, its year against theirs.

Plain functions of a ``grid.Rate`` and the jobs' exported intervals (UTC epoch seconds, each job once): ``series_coverage``
for a series, ``table_years`` for the bundled per-region table's year. Job-hours are hours of the jobs' exported runs (not
GPU-hours, not the replay's longer or shorter runs).
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from pipelines.ingest.grid import Rate
from pipelines.vocabulary.units import S_PER_H


def _hours_in(starts: np.ndarray, ends: np.ndarray, job_start: np.ndarray, job_end: np.ndarray) -> float:
    """Hours of the jobs' intervals inside the disjoint sorted intervals ``starts``..``ends`` (all UTC epoch seconds)."""
    if starts.size == 0 or job_start.size == 0:
        return 0.0
    edges = np.column_stack([starts, ends]).ravel()
    inside = np.cumsum(np.column_stack([ends - starts, np.zeros_like(starts)]).ravel())  # time covered up to each edge
    inside = np.r_[0.0, inside[:-1]]
    return float(np.sum(np.interp(job_end, edges, inside) - np.interp(job_start, edges, inside))) / S_PER_H


def years_text(start_s: float, end_s: float) -> str:
    """``2024`` or ``2023-2024``: the UTC years of [start_s, end_s) (an end on New Year's midnight is the year before's)."""
    first = datetime.fromtimestamp(start_s, UTC).year
    last = datetime.fromtimestamp(max(start_s, end_s - 1e-6), UTC).year
    return str(first) if first == last else f"{first}-{last}"


def _years(text: str) -> set[int]:
    first, _, last = text.partition("-")
    return set(range(int(first), int(last or first) + 1))


def series_coverage(rate: Rate, job_start: np.ndarray, job_end: np.ndarray) -> dict[str, object]:
    """What the report says of a series against the jobs (each once): ``gaps`` (``count``, ``longest_h``: the longest gap,
    ``job_hours``: the jobs' hours inside them, priced at the reading before each gap), the job-hours before the series'
    first reading and after its last (``filled_before_job_hours``, ``filled_after_job_hours``: priced at the first and the
    last value under ``--fill``, refused without it), ``series_years``, ``jobs_years`` and ``years_note`` (``series 2023,
    jobs 2024`` where a job ran in a year the series does not reach; else None)."""
    assert rate.times_s is not None
    gap_start, gap_end = rate.gaps()
    first, last = float(rate.times_s[0]), float(rate.times_s[-1] + rate.step_s)
    out: dict[str, object] = {"gaps": {"count": int(gap_start.size),
                                       "longest_h": float(np.max(gap_end - gap_start)) / S_PER_H if gap_start.size else 0.0,
                                       "job_hours": _hours_in(gap_start, gap_end, job_start, job_end)},
                              "filled_before_job_hours": float(np.sum(np.clip(np.minimum(job_end, first) - job_start, 0, None))) / S_PER_H,
                              "filled_after_job_hours": float(np.sum(np.clip(job_end - np.maximum(job_start, last), 0, None))) / S_PER_H}
    out["series_years"] = years_text(first, last)
    out.update(_jobs_years(job_start, job_end, out["series_years"], "series"))
    return out


def table_years(year: int, job_start: np.ndarray, job_end: np.ndarray) -> dict[str, object]:
    """``jobs_years`` and ``years_note`` (``table 2023, jobs 2024`` where the jobs ran in another year than the table's)."""
    return _jobs_years(job_start, job_end, str(year), "table")


def _jobs_years(job_start: np.ndarray, job_end: np.ndarray, years: object, what: str) -> dict[str, object]:
    if job_start.size == 0:
        return {"jobs_years": None, "years_note": None}
    jobs = years_text(float(np.min(job_start)), float(np.max(job_end)))
    note = None if _years(jobs) <= _years(str(years)) else f"{what} {years}, jobs {jobs}"
    return {"jobs_years": jobs, "years_note": note}
