"""Per GPU and power limit: quadratic least-squares fits in batch size of time and average power.

This is the published Zeus² model (zeus_heterogeneous_algorithm.py, ``fitcurveFunc``): for each
power limit p of a GPU, fit ``time_s(b) = c2 b^2 + c1 b + c0`` and
``power_w(b) = c2' b^2 + c1' b + c0'`` (average power = energy / time) over the profiled batch
sizes b. The published code fits with ``scipy.optimize.curve_fit`` (Levenberg-Marquardt from
p0 = (1, 1, 1)); for a model linear in its parameters that converges to the least-squares
solution, which we compute directly with ``numpy.polyfit`` (column-scaled ``lstsq``). The two agree
to about 1e-9 relative on the published profiles and pick the same optima (tests/hetero/test_published.py).

Power limits keep the order in which they first appear in the profile (the published code uses
``DataFrame.unique()``, i.e. file order): that order is the published tie-break order.

The fits are extrapolated far beyond the profiled batch sizes (profiles stop at 512 or 1024 per GPU,
a split of 4096 asks for up to 4095 on one GPU); a fitted value below 0 is clipped to 0, as published.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

#: Polynomial degree of the published fits.
DEGREE = 2


class FitError(ValueError):
    """A profile that cannot be fitted (too few batch sizes for a power limit, or no rows)."""


@dataclass(frozen=True, eq=False)
class GpuFit:
    """The fitted model of one GPU on one workload.

    ``power_limits`` (W, int64, shape (L,)) in first-appearance order; ``time_coef`` and
    ``power_coef`` (shape (L, 3)) hold ``[c2, c1, c0]`` per power limit, highest degree first, for
    time in s and average power in W as functions of the per-GPU batch size (samples).
    """

    gpu: str
    workload: str
    power_limits: np.ndarray
    time_coef: np.ndarray
    power_coef: np.ndarray

    @property
    def n_limits(self) -> int:
        return int(self.power_limits.shape[0])

    def min_limit_index(self) -> int:
        """Index of the lowest power limit (the first one if it repeats, like ``list.index(min(...))``)."""
        return int(np.argmin(self.power_limits))

    def time_s(self, batch: np.ndarray, clip: bool = True) -> np.ndarray:
        """Fitted time (s), shape (L, len(batch)); negatives clipped to 0 unless ``clip`` is False."""
        return evaluate(self.time_coef, batch, clip)

    def power_w(self, batch: np.ndarray, clip: bool = True) -> np.ndarray:
        """Fitted average power (W), shape (L, len(batch)); negatives clipped to 0 unless ``clip`` is False."""
        return evaluate(self.power_coef, batch, clip)


def evaluate(coef: np.ndarray, batch: np.ndarray, clip: bool = True) -> np.ndarray:
    """``c2 b^2 + c1 b + c0`` for every row of ``coef`` (L, 3) and every b: shape (L, len(batch)).

    The operations run in the published order, ``(c2 * b**2 + c1 * b) + c0``, in float64, so each
    value is bit-identical to the published scalar loop's.
    """
    b = np.asarray(batch, dtype=np.float64)[None, :]
    values = coef[:, 0:1] * b**2 + coef[:, 1:2] * b + coef[:, 2:3]
    return np.maximum(values, 0.0) if clip else values


def fit_gpu(profile: pl.DataFrame) -> GpuFit:
    """Fit one GPU's profile (one gpu and workload; rows of ``hetero_gpu_profiles``).

    Rows must keep file order (power limits are taken in first-appearance order). Each power limit
    needs at least 3 distinct batch sizes, else ``FitError``.
    """
    if profile.height == 0:
        raise FitError("empty profile: nothing to fit")
    names = profile.select("gpu", "workload").unique()
    if names.height != 1:
        raise FitError(f"fit_gpu takes one GPU on one workload, got {names.rows()}")
    gpu, workload = names.row(0)
    limits = profile["power_limit"].unique(maintain_order=True).to_numpy().astype(np.int64)
    time_coef = np.empty((limits.size, DEGREE + 1))
    power_coef = np.empty((limits.size, DEGREE + 1))
    for i, limit in enumerate(limits):
        rows = profile.filter(pl.col("power_limit") == int(limit)).sort("batch_size", maintain_order=True)
        batch = rows["batch_size"].to_numpy().astype(np.float64)
        if np.unique(batch).size <= DEGREE:
            raise FitError(f"{gpu}/{workload} at {limit} W: {np.unique(batch).size} batch sizes, a quadratic needs 3")
        time = rows["time_s"].to_numpy()
        time_coef[i] = np.polyfit(batch, time, DEGREE)
        power_coef[i] = np.polyfit(batch, rows["energy_j"].to_numpy() / time, DEGREE)
    return GpuFit(gpu, workload, limits, time_coef, power_coef)


def fit_profiles(profiles: pl.DataFrame) -> dict[tuple[str, str], GpuFit]:
    """Every (workload, gpu) of a profiles table -> its fit, in first-appearance order."""
    keys = profiles.select("workload", "gpu").unique(maintain_order=True).rows()
    return {
        (workload, gpu): fit_gpu(profiles.filter((pl.col("workload") == workload) & (pl.col("gpu") == gpu)))
        for workload, gpu in keys
    }
