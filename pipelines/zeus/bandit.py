"""Zeus's batch-size optimizer: two rounds of pruning exploration, then Gaussian Thompson Sampling.

Semantics follow the published optimizer (``PruningGTSBatchSizeOptimizer`` with a
``GaussianTS`` bandit, prior mean 0 and precision 0, window 0, two explorations per arm):

* Pruning: each round starts at b0 and walks down (b0 included), then up, through the
  surviving batch sizes; a direction stops at the first batch size that misses the target.
  Survivors are those that reached it; b0 moves to the cheapest survivor of the round. The
  result of a run is only acted on when the next batch size is asked for.
* Concurrency: a result is handed to the pruning walk only if it is for the batch size the walk
  is waiting on; every result still enters the reward history.
* Thompson Sampling over the survivors: an arm's reward precision is 1 / var(its rewards), its
  posterior mean (sum x precision) / (n x precision), or the mean when the variance is zero;
  each prediction consumes the draws of a random permutation of the arms (the exploration
  order), then samples one normal per arm in arm order and picks the first largest sample.
  Rewards are negated costs.
"""

from __future__ import annotations

import math

import numpy as np

from pipelines.zeus.errors import SimulationError
from pipelines.zeus.exact import Uint32Draws, reciprocal, sum_and_var

_PRIOR_MEAN = 0.0
_PRIOR_PRECISION = 0.0
_NUM_PRUNING_ROUNDS = 2


class PruningExplorer:
    """The pruning walk as a state machine: ``next_batch_size`` / ``report`` alternate.

    ``expecting`` is the batch size whose result the walk waits for (0 when none).
    ``next_batch_size`` returns ``None`` once both rounds are over; ``survivors`` is then final.
    """

    def __init__(self, batch_sizes: list[int], b0: int) -> None:
        if b0 not in batch_sizes:
            raise ValueError(f"Default batch size {b0} not in {batch_sizes}.")
        self.survivors = sorted(batch_sizes)
        self.default = b0
        self.expecting = b0
        self._round = 0
        self._queue: list[list[int]] = []  # remaining directions of this round, each a list to walk
        self._good: list[int] = []
        self._best_cost = math.inf
        self._result: tuple[int, float, bool] | None = None  # reported, not yet acted on
        self._waiting = False  # a batch size was handed out and its result not reported
        self._started = False
        self.done = False

    def _start_round(self) -> None:
        if self.default not in self.survivors:  # the published code fails on list.index here
            raise SimulationError(f"pruning kept no batch size that reached the target (b0 {self.default} missed it)")
        idx = self.survivors.index(self.default)
        self._queue = [sorted(self.survivors[: idx + 1], reverse=True), sorted(self.survivors[idx + 1 :])]
        self._good = []
        self._best_cost = math.inf

    def next_batch_size(self) -> int | None:
        if self.done:
            return None
        if self._waiting:
            raise RuntimeError("pruning exploration asked for a batch size before the last result was reported")
        if not self._started:
            self._started = True
            self._start_round()
        elif self._result is not None:
            bs, cost, reached = self._result
            self._result = None
            if reached:
                if self._best_cost > cost:
                    self._best_cost = cost
                    self.default = bs
                self._good.append(bs)
            else:
                self._queue.pop(0)  # the rest of this direction is pruned
        while True:
            while self._queue and not self._queue[0]:
                self._queue.pop(0)
            if self._queue:
                bs = self._queue[0].pop(0)
                self.expecting = bs
                self._waiting = True
                return bs
            self.expecting = 0
            self.survivors = sorted(self._good)
            self._round += 1
            if self._round == _NUM_PRUNING_ROUNDS:
                self.done = True
                return None
            self._start_round()

    def report(self, batch_size: int, cost: float, reached: bool) -> None:
        if not self._waiting:
            raise RuntimeError("pruning exploration got a result it did not ask for")
        if self.expecting != batch_size:
            raise RuntimeError(f"PruningExplorationManager: expecting={self.expecting}, batch_size={batch_size}")
        self.expecting = 0
        self._waiting = False
        self._result = (batch_size, cost, reached)


class RewardHistory:
    """Rewards (negated costs) of one batch size in observation order, in a growable float64 buffer."""

    __slots__ = ("values", "n")

    def __init__(self) -> None:
        self.values = np.empty(16, dtype=np.float64)
        self.n = 0

    def append(self, reward: float) -> None:
        if self.n == self.values.size:
            self.values = np.concatenate([self.values, np.empty(self.values.size, dtype=np.float64)])
        self.values[self.n] = reward
        self.n += 1


class GaussianThompson:
    """Gaussian Thompson Sampling over ``arms`` with per-arm reward precision learned from the variance."""

    def __init__(self, arms: list[int], seed: int) -> None:
        if not arms:
            raise SimulationError("Empty batch size set when constructing MAB. Probably all batch sizes have been pruned.")
        self.arms = arms
        self._index = {arm: i for i, arm in enumerate(arms)}
        self._rng = np.random.default_rng(seed)
        self._draws = Uint32Draws(self._rng.bit_generator)
        self.mean = [_PRIOR_MEAN] * len(arms)
        self.scale = [math.inf] * len(arms)  # posterior standard deviation

    def fit(self, arm: int, history: RewardHistory) -> None:
        """Refit ``arm`` on all its rewards (no-op for a batch size that is not an arm)."""
        i = self._index.get(arm)
        if i is None:
            return
        n = history.n
        total, var = sum_and_var(history.values, n)
        reward_precision = reciprocal(var)
        if reward_precision == math.inf:
            precision = math.inf
            mean = total / n
        else:
            precision = _PRIOR_PRECISION + n * reward_precision
            mean = (_PRIOR_PRECISION * _PRIOR_MEAN + reward_precision * total) / precision
        self.mean[i] = mean
        self.scale[i] = math.sqrt(reciprocal(precision))

    def predict(self) -> int:
        n = len(self.arms)
        self._draws.skip_permutation(n)
        z = self._rng.standard_normal(n).tolist()
        best_i, best = 0, -math.inf
        for i, (mean, scale, zi) in enumerate(zip(self.mean, self.scale, z, strict=True)):
            sample = mean + scale * zi
            if i == 0 or sample > best:
                best_i, best = i, sample
        return self.arms[best_i]


class PruningGTSOptimizer:
    """The published batch-size optimizer for one job: pruning walk, then Gaussian TS."""

    def __init__(self, batch_sizes: list[int], b0: int, seed: int, concurrency: bool) -> None:
        self.explorer = PruningExplorer(batch_sizes, b0)
        self.concurrency = concurrency
        self.seed = seed
        self.history: dict[int, RewardHistory] = {bs: RewardHistory() for bs in batch_sizes}
        self.bandit: GaussianThompson | None = None

    def predict(self) -> int:
        if self.bandit is None:
            bs = self.explorer.next_batch_size()
            if bs is not None:
                return bs
            self.bandit = GaussianThompson(self.explorer.survivors, self.seed)
            for arm in self.explorer.survivors:
                if self.history[arm].n < 2:
                    raise SimulationError(f"Number of observations for {arm} is {self.history[arm].n}.")
                self.bandit.fit(arm, self.history[arm])
        return self.bandit.predict()

    def observe(self, batch_size: int, cost: float, reached: bool) -> None:
        history = self.history[batch_size]
        history.append(-cost)
        if self.bandit is not None:
            self.bandit.fit(batch_size, history)
        elif not self.concurrency or self.explorer.expecting == batch_size:
            self.explorer.report(batch_size, cost, reached)
