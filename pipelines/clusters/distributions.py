"""Distributions as CDF polylines, and exact statistics over them (quantiles, shares, the Kolmogorov-Smirnov distance).

One representation serves both kinds of CDF the power comparison meets:

* a **measured** curve (``fleet_power_cdf``): AcmeTrace's quantile function at 1,000 probabilities,
  read as **piecewise linear** between its points (it was made by pandas' linear-interpolated
  ``quantile``: the distribution of Q(U) for U uniform, whose CDF is exactly that polyline); a
  repeated x is a vertical segment, an atom;
* a **simulated** fleet: weighted atoms (each run's per-GPU draw, weighted by its GPU-seconds,
  and the idle draw, weighted by the idle GPU-seconds), a **step** CDF, written as the polyline
  (v1, 0), (v1, C1), (v2, C1), (v2, C2), ... of vertical and horizontal segments.

``Polyline`` holds points (x non-decreasing, F non-decreasing in [0, 1], ending at 1); the CDF is
0 left of the first point, 1 right of the last, and linear between consecutive points. At a
repeated x the CDF jumps: its value there is the last point's F (right-continuous), its left limit
the first point's.

``ks_distance`` is exact for any two polylines: between consecutive breakpoints of the union of
their x both CDFs are linear, so |F - G| is largest at an end of the interval; the sup is the
largest of |F(t) - G(t)| and |F(t-) - G(t-)| over the breakpoints t. No sampling, no grid.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


class DistributionError(ValueError):
    """Points that are not a CDF (decreasing, outside 0..1, not ending at 1, not finite, empty)."""


#: How far F may end from 1 (rounding of a sum of weights).
END_TOL = 1e-9


@dataclass(frozen=True)
class Polyline:
    """A CDF as points (x non-decreasing, F non-decreasing in [0, 1], last F = 1), linear between them."""

    x: np.ndarray
    F: np.ndarray

    def __post_init__(self) -> None:
        x, F = np.asarray(self.x, dtype=np.float64), np.asarray(self.F, dtype=np.float64)
        if x.ndim != 1 or x.shape != F.shape or x.size == 0:
            raise DistributionError(f"x and F must be one-dimensional, of equal non-zero length (got {x.shape} and {F.shape})")
        if not (np.isfinite(x).all() and np.isfinite(F).all()):
            raise DistributionError("x and F must be finite")
        if (np.diff(x) < 0).any() or (np.diff(F) < 0).any():
            raise DistributionError("x and F must be non-decreasing")
        if F[0] < 0 or abs(F[-1] - 1) > END_TOL:
            raise DistributionError(f"F must run within [0, 1] and end at 1 (from {F[0]!r} to {F[-1]!r})")
        if F[0] > 0:  # an atom at the first point: start the polyline at 0
            x, F = np.concatenate(([x[0]], x)), np.concatenate(([0.0], F))
        F = F.copy()
        F[-1] = 1.0
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "F", F)

    def cdf(self, t: np.ndarray | float) -> np.ndarray:
        """F(t): the right-continuous CDF (share at or below t)."""
        t = np.atleast_1d(np.asarray(t, dtype=np.float64))
        i = np.searchsorted(self.x, t, side="right") - 1  # last point at or left of t
        return self._between(t, i)

    def cdf_left(self, t: np.ndarray | float) -> np.ndarray:
        """F(t-): the left limit (share strictly below t)."""
        t = np.atleast_1d(np.asarray(t, dtype=np.float64))
        j = np.searchsorted(self.x, t, side="left")  # first point at or right of t
        return self._between(t, j - 1)

    def _between(self, t: np.ndarray, i: np.ndarray) -> np.ndarray:
        """Linear between point i and i + 1 (0 left of the first point, 1 right of the last)."""
        n = self.x.size
        lo = np.clip(i, 0, n - 1)
        hi = np.clip(i + 1, 0, n - 1)
        dx = self.x[hi] - self.x[lo]
        slope = np.divide(self.F[hi] - self.F[lo], dx, out=np.zeros_like(dx), where=dx > 0)
        value = self.F[lo] + slope * (t - self.x[lo])
        return np.where(i < 0, 0.0, np.where(i >= n - 1, 1.0, np.clip(value, 0.0, 1.0)))

    def quantile(self, q: float) -> float:
        """The smallest t with F(t) >= q (0 < q <= 1)."""
        if not 0 < q <= 1:
            raise ValueError(f"q must be in (0, 1], got {q!r}")
        i = int(np.searchsorted(self.F, q, side="left"))  # first point with F >= q
        if i == 0:
            return float(self.x[0])
        f0, f1 = self.F[i - 1], self.F[i]
        return float(self.x[i - 1] + (q - f0) / (f1 - f0) * (self.x[i] - self.x[i - 1]))

    def scaled(self, factor: float) -> Polyline:
        """The distribution of factor x X (factor > 0): a change of unit, W to % TDP."""
        if not factor > 0:
            raise ValueError(f"factor must be > 0, got {factor!r}")
        return Polyline(self.x * factor, self.F)


def piecewise_linear(x: Sequence[float] | np.ndarray, cdf_pct: Sequence[float] | np.ndarray) -> Polyline:
    """A measured curve (x, CDF in %) read as piecewise linear between its points."""
    return Polyline(np.asarray(x, dtype=np.float64), np.asarray(cdf_pct, dtype=np.float64) / 100)


def step(values: Sequence[float] | np.ndarray, weights: Sequence[float] | np.ndarray) -> Polyline:
    """The step CDF of weighted atoms (weights >= 0, not all 0; equal values merged)."""
    v, w = np.asarray(values, dtype=np.float64), np.asarray(weights, dtype=np.float64)
    if v.shape != w.shape or v.ndim != 1:
        raise DistributionError("values and weights must be one-dimensional, of equal length")
    if not (np.isfinite(v).all() and np.isfinite(w).all()) or (w < 0).any():
        raise DistributionError("values and weights must be finite, weights >= 0")
    keep = w > 0
    if not keep.any():
        raise DistributionError("no positive weight")
    atoms, inverse = np.unique(v[keep], return_inverse=True)
    mass = np.bincount(inverse, weights=w[keep])
    cum = np.cumsum(mass) / mass.sum()
    before = np.concatenate(([0.0], cum[:-1]))
    return Polyline(np.repeat(atoms, 2), np.column_stack((before, cum)).ravel())


def upper_share(dist: Polyline, share: float) -> Polyline:
    """The top ``share`` (0 < share <= 1) of ``dist``'s mass, renormalised: X given X at or above its (1 - share) quantile.

    Its CDF is ``(F(t) - p) / share`` clipped at 0, p = 1 - share: the polyline starts where F crosses p
    (interpolated on the segment that crosses it, so an atom that straddles p keeps its upper part) and
    keeps the points above. Exact for piecewise linear and step CDFs alike.
    """
    if not 0 < share <= 1:
        raise ValueError(f"share must be in (0, 1], got {share!r}")
    p = 1.0 - share
    i = int(np.searchsorted(dist.F, p, side="right"))  # first point with F > p (F[0] = 0 <= p, so i >= 1)
    x0, x1, f0, f1 = dist.x[i - 1], dist.x[i], dist.F[i - 1], dist.F[i]
    start = x0 + (p - f0) / (f1 - f0) * (x1 - x0)
    return Polyline(np.concatenate(([start], dist.x[i:])), np.concatenate(([0.0], (dist.F[i:] - p) / share)))


def ks_distance(a: Polyline, b: Polyline) -> float:
    """sup over t of |F_a(t) - F_b(t)|, exact (module docstring)."""
    t = np.union1d(a.x, b.x)
    right = np.abs(a.cdf(t) - b.cdf(t))
    left = np.abs(a.cdf_left(t) - b.cdf_left(t))
    return float(max(right.max(), left.max()))


def mode_window(dist: Polyline, half_width: float, upper: float, resolution: float) -> float:
    """The centre c (on a grid of ``resolution`` from 0 to ``upper``) of the densest window [c - h, c + h]: F(c+h) - F(c-h) largest.

    Ties go to the lowest c. What ``pipelines.clusters.fleet.measured_idle_w`` reads as a fleet's low mode.
    """
    centres = np.round(np.arange(0.0, upper + resolution / 2, resolution), 10)
    mass = dist.cdf(centres + half_width) - dist.cdf(centres - half_width)
    return float(centres[int(np.argmax(mass))])
