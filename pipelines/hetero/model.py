"""Cost models of one training iteration on N GPUs, each with its batch share b_i and power limit p_i.

Per GPU i, from its fit (``pipelines.hetero.fit``): time T_i = T_i(p_i, b_i) in s and average power
P_i = P_i(p_i, b_i) in W (both clipped at 0), busy energy E_i = P_i T_i in J, and a *time price*
W_i in W: the chosen power limit p_i (published) or the GPU's highest power limit (``max_power_limit``,
Zeus's MaxPower). With the Zeus knob eta in [0, 1] (energy weight):

``published``: the published Zeus² cost, a sum of per-GPU costs as if each GPU ran alone,
    cost = sum_i (eta P_i + (1 - eta) W_i) T_i; with eta = 0.5 and W_i = p_i this is exactly
    ``(.5 * average_power + .5 * power_limit) * time`` summed over the GPUs. Energy = sum_i E_i.

``sync``: synchronous data parallelism. An iteration lasts T = max_i T_i (the slowest GPU); a
    faster GPU then waits T - T_i at the gradient all-reduce, drawing its idle power I_i (W):
    energy = sum_i E_i + sum_i I_i (T - T_i) and cost = eta energy + (1 - eta) (sum_i W_i) T.
    When every T_i is equal the two models agree. I_i defaults to ``DEFAULT_IDLE_FRACTION`` x the
    GPU's lowest profiled power limit (A10: 20 W, T4: 12 W): a stand-in, since the profiles do
    not measure idle draw; measure it (nvidia-smi while the job waits) and pass it for real use.

All cost values are in J (W x s). Every function works elementwise on broadcastable float64
arrays, and sums run left to right over the GPUs, so a vectorised search and a scalar evaluation
of one allocation give bit-identical numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipelines.hetero.fit import GpuFit
from pipelines.vocabulary import DEFAULT_ETA, MODEL_KINDS, TIME_PRICES, ModelKind, TimePrice
from pipelines.zeus.cost import power_cost, zeus_cost

#: Default idle power of a GPU waiting at the all-reduce, as a fraction of its lowest profiled power limit.
DEFAULT_IDLE_FRACTION = 0.2


@dataclass(frozen=True)
class CostModel:
    """Which cost an allocation is scored by (see the module docstring).

    ``idle_power_w``: one idle power (W, >= 0) per GPU, in GPU order, for the ``sync`` model;
    None means ``DEFAULT_IDLE_FRACTION`` x each GPU's lowest power limit. Unused by ``published``.
    """

    kind: ModelKind = "published"
    eta: float = DEFAULT_ETA
    time_price: TimePrice = "power_limit"
    idle_power_w: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if self.kind not in MODEL_KINDS:
            raise ValueError(f"model {self.kind!r}: choose one of {', '.join(MODEL_KINDS)}")
        if not 0.0 <= self.eta <= 1.0:
            raise ValueError(f"eta {self.eta}: must be in [0, 1]")
        if self.time_price not in TIME_PRICES:
            raise ValueError(f"time price {self.time_price!r}: choose one of {', '.join(TIME_PRICES)}")
        if self.idle_power_w is not None and any(not np.isfinite(w) or w < 0 for w in self.idle_power_w):
            raise ValueError(f"idle power {self.idle_power_w}: each must be a finite number >= 0 W")

    def idle_powers(self, fits: Sequence[GpuFit]) -> np.ndarray:
        """Idle power (W) of each GPU, shape (N,)."""
        if self.idle_power_w is None:
            return np.array([DEFAULT_IDLE_FRACTION * float(f.power_limits.min()) for f in fits])
        if len(self.idle_power_w) != len(fits):
            raise ValueError(f"{len(self.idle_power_w)} idle powers for {len(fits)} GPUs: give one per GPU")
        return np.asarray(self.idle_power_w, dtype=np.float64)

    def prices(self, fit: GpuFit) -> np.ndarray:
        """Time price W (W) of each of the GPU's power limits, shape (L,)."""
        limits = fit.power_limits.astype(np.float64)
        return limits if self.time_price == "power_limit" else np.full_like(limits, limits.max())


def left_sum(terms: Sequence[np.ndarray]) -> np.ndarray:
    """``((t0 + t1) + t2) + ...``: the published summation order."""
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    return total


def published_totals(
    powers: Sequence[np.ndarray], times: Sequence[np.ndarray], prices: Sequence[np.ndarray], eta: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(time_s, energy_j, cost) of the published model; time_s is the slowest GPU's time."""
    time = np.maximum.reduce(np.broadcast_arrays(*times)) if len(times) > 1 else times[0]
    energy = left_sum([p * t for p, t in zip(powers, times, strict=True)])
    cost = left_sum([power_cost(eta, p, w, t) for p, t, w in zip(powers, times, prices, strict=True)])
    return time, energy, cost


def sync_totals(
    powers: Sequence[np.ndarray],
    times: Sequence[np.ndarray],
    prices: Sequence[np.ndarray],
    idle_w: np.ndarray,
    eta: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(time_s, energy_j, cost) of the synchronous model (see the module docstring)."""
    time = np.maximum.reduce(np.broadcast_arrays(*times)) if len(times) > 1 else times[0]
    busy = left_sum([p * t for p, t in zip(powers, times, strict=True)])
    waiting = left_sum([float(idle_w[i]) * (time - t) for i, t in enumerate(times)])
    energy = busy + waiting
    cost = zeus_cost(eta, energy, left_sum(list(prices)), time)
    return time, energy, cost
