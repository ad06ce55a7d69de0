"""Recurring jobs run power-limit-only, as Zeus's GlobalPowerLimitOptimizer runs them: profile once, then the chosen limit.

The optimizer (zeus 0.16.0, ``profile_path`` set) works in training steps. A job of a group whose
profile is not saved yet runs ``wait_steps`` at the highest limit, then at each limit from the
highest down ``warmup_steps`` and ``profile_steps`` (the profiling window), then the chosen limit
for the rest of the job; the profile is saved when the last window ends. A job that ends before
that saves nothing, and the group's next job profiles again from the start. Once saved, every
later job of the group runs at the chosen limit from its first step.

Time and energy per step come from the profile: a step at limit L takes T(L) / profile_steps s and
E(L) / profile_steps J, T and E one window's at L (E summed over the profile's ``world_size``
GPUs). A job's work is its runtime at the highest limit (the GPU's default, which the optimizer
sets before it starts): runtime_s / T(max) x profile_steps steps, fractional steps allowed. A job
on ``gpus`` GPUs draws gpus / world_size of the profile's energy. Epoch ends that cut a window
short (the optimizer then redoes it) are not modelled: a job's epochs are not known here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import polars as pl

from pipelines.zeus.limit_selectors import Measurement, Selector, at_max_limit, choose

#: GlobalPowerLimitOptimizer's defaults.
WAIT_STEPS, WARMUP_STEPS, PROFILE_STEPS = 1, 10, 40
#: The replayed jobs, in input order: ``job`` counts the group's jobs from 0; ``profiled`` says the job ran profiling steps,
#: ``profile_saved`` that the group's profile was saved by the end of it; ``time_s`` and ``energy_j`` are the job's under
#: the optimizer, ``default_energy_j`` its energy at the highest limit (its time there is ``runtime_s``).
REPLAY_SCHEMA = pl.Schema({"group": pl.String, "job": pl.Int64, "runtime_s": pl.Float64, "gpus": pl.Int64, "profiled": pl.Boolean,
                           "profile_saved": pl.Boolean, "power_limit_w": pl.Int64, "time_s": pl.Float64, "energy_j": pl.Float64,
                           "default_energy_j": pl.Float64})


def _profiling_phases(measurements: Sequence[Measurement], wait: int, warmup: int, profile: int) -> list[tuple[Measurement, float]]:
    """(measurement, steps) of a job that profiles: the wait at the highest limit, then each limit from the highest down."""
    by_limit = sorted(measurements, key=lambda m: -m.power_limit_w)
    return [(at_max_limit(measurements), float(wait)), *((m, float(warmup + profile)) for m in by_limit)]


def replay_power_limit_only(
    measurements: Sequence[Measurement],
    selector: Selector,
    jobs: pl.DataFrame,
    *,
    wait_steps: int = WAIT_STEPS,
    warmup_steps: int = WARMUP_STEPS,
    profile_steps: int = PROFILE_STEPS,
    etas: Sequence[float] | None = None,
) -> pl.DataFrame:
    """Replay ``jobs`` (columns ``group``, ``runtime_s`` at the highest limit, optionally ``gpus``; in run order) -> ``REPLAY_SCHEMA``.

    The profile's world size is ``selector.world_size`` (also ZeusCost's); ``gpus`` defaults to it. ``etas``: each job's own
    energy weight (a carbon-aware optimizer): the limit a job runs at after profiling is the one ``selector`` with its eta
    chooses from the same profile (profiling does not depend on eta).
    """
    if wait_steps < 0 or warmup_steps < 0 or profile_steps <= 0:
        raise ValueError(f"need wait and warmup steps >= 0 and profile steps > 0, got {wait_steps}, {warmup_steps}, {profile_steps}")
    if jobs["runtime_s"].is_null().any() or (jobs["runtime_s"] < 0).any():
        raise ValueError("every job needs a runtime_s >= 0")
    by_eta: dict[float, tuple[int, Measurement]] = {}

    def pick(eta: float) -> tuple[int, Measurement]:
        if eta not in by_eta:
            chosen_limit = choose(measurements, replace(selector, eta=eta))
            by_eta[eta] = chosen_limit, next(m for m in measurements if m.power_limit_w == chosen_limit)
        return by_eta[eta]

    limit, chosen = pick(selector.eta)
    if etas is not None and len(etas) != jobs.height:
        raise ValueError(f"{len(etas)} etas for {jobs.height} jobs")
    top = at_max_limit(measurements)
    phases = _profiling_phases(measurements, wait_steps, warmup_steps, profile_steps)
    gpus = jobs["gpus"] if "gpus" in jobs.columns else pl.Series([selector.world_size] * jobs.height)
    saved: set[str] = set()
    seen: dict[str, int] = {}
    rows = []
    for k, (group, runtime, n_gpus) in enumerate(zip(jobs["group"].cast(pl.String), jobs["runtime_s"].cast(pl.Float64), gpus, strict=True)):
        if etas is not None:
            limit, chosen = pick(float(etas[k]))
        share = n_gpus / selector.world_size
        steps = runtime / top.time_s * profile_steps  # the job's work in steps
        time = energy = 0.0
        profiled = group not in saved
        if profiled:
            for m, phase_steps in phases:
                run = min(phase_steps, steps)
                time += run * m.time_s / profile_steps
                energy += run * m.energy_j / profile_steps * share
                steps -= run
                if steps <= 0:
                    break
            else:
                saved.add(group)
        if steps > 0:
            time += steps * chosen.time_s / profile_steps
            energy += steps * chosen.energy_j / profile_steps * share
        rows.append((group, seen.get(group, 0), runtime, n_gpus, profiled, group in saved, limit, time, energy,
                     runtime * top.energy_j / top.time_s * share))
        seen[group] = seen.get(group, 0) + 1
    return pl.DataFrame(rows, schema=REPLAY_SCHEMA, orient="row")
