"""Energy from polled power: a background sampler and the trapezoid integral of its samples.

Samples are ``(t, P)`` pairs, ``t`` in s on the sampler's clock and ``P`` in W. Power between
two samples is taken as linear (the trapezoid rule); before the first and after the last sample
of a window the nearest sample's power is held. Energy is in J and never negative (power
readings are >= 0).
"""

from __future__ import annotations

import bisect
import itertools
import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

Sample = tuple[float, float]  # (time s, power W)

#: What the poller reads power of (a GPU position, a name): any hashable key.
K = TypeVar("K", bound=Hashable)


def _power_at(times: Sequence[float], powers: Sequence[float], t: float) -> float:
    """Power (W) at ``t``: linear between the samples around it, held beyond the first/last."""
    i = bisect.bisect_left(times, t)
    if i == 0:
        return powers[0]
    if i == len(times):
        return powers[-1]
    t0, t1 = times[i - 1], times[i]
    if t1 == t0:
        return powers[i]
    return powers[i - 1] + (powers[i] - powers[i - 1]) * (t - t0) / (t1 - t0)


def trapezoid_energy_j(samples: Sequence[Sample], start_s: float, end_s: float) -> float:
    """Energy (J) over [start_s, end_s] of the piecewise-linear power through ``samples`` (sorted by time).

    0 when the window is empty (``end_s <= start_s``) or there are no samples.
    """
    if end_s <= start_s or not samples:
        return 0.0
    times = [t for t, _ in samples]
    powers = [p for _, p in samples]
    lo, hi = bisect.bisect_right(times, start_s), bisect.bisect_left(times, end_s)
    points = [(start_s, _power_at(times, powers, start_s)), *samples[lo:hi], (end_s, _power_at(times, powers, end_s))]
    return sum((t1 - t0) * (p0 + p1) / 2.0 for (t0, p0), (t1, p1) in itertools.pairwise(points))


class PowerPoller(Generic[K]):
    """Samples the power (W) of several sources every ``interval_s`` in a daemon thread.

    ``read_mw(key)`` returns one source's power in mW. ``sample()`` takes one sample of every
    source now (the monitor calls it at each window's start and end, so a window always has a
    sample at both edges); the thread calls it in between. An exception in the thread stops it
    and is re-raised by the next ``sample()`` / ``check()``, never swallowed.
    """

    def __init__(
        self,
        keys: Sequence[K],
        read_mw: Callable[[K], int],
        interval_s: float,
        clock: Callable[[], float],
    ) -> None:
        if interval_s <= 0:
            raise ValueError(f"poll interval must be > 0 s, got {interval_s}")
        self.keys = list(keys)
        self.interval_s = interval_s
        self._read_mw = read_mw
        self._clock = clock
        self._samples: dict[K, list[Sample]] = {k: [] for k in self.keys}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def sample(self) -> float:
        """Read every source once; returns the time (s) of the sample."""
        self.check()
        readings = [(k, self._read_mw(k) / 1000.0) for k in self.keys]
        t = self._clock()
        with self._lock:
            for k, watts in readings:
                series = self._samples[k]
                if series and t < series[-1][0]:  # the thread and a caller raced: keep the series sorted
                    bisect.insort(series, (t, watts))
                else:
                    series.append((t, watts))
        return t

    def samples(self, key: K) -> list[Sample]:
        with self._lock:
            return list(self._samples[key])

    def energy_j(self, key: K, start_s: float, end_s: float) -> float:
        """Trapezoid energy (J) of one source over [start_s, end_s]."""
        return trapezoid_energy_j(self.samples(key), start_s, end_s)

    def count(self, key: K, start_s: float, end_s: float) -> int:
        """Number of samples of ``key`` inside [start_s, end_s]."""
        return sum(start_s <= t <= end_s for t, _ in self.samples(key))

    def discard_before(self, t: float) -> None:
        """Forget samples older than the last one at or before ``t`` (that one is kept for interpolation)."""
        with self._lock:
            for series in self._samples.values():
                i = bisect.bisect_right(series, (t, float("inf")))
                if i > 1:
                    del series[: i - 1]

    def check(self) -> None:
        if self._error is not None:
            raise RuntimeError(f"power polling thread failed: {self._error}") from self._error

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="power-poller", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=max(1.0, 5 * self.interval_s))
            self._thread = None

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.sample()
            except BaseException as exc:  # any failure, stored and re-raised by the next sample() or check()
                self._error = exc
                return
