"""Bit-exact stand-ins for the numpy and pandas calls whose results the published simulator depends on.

The published simulator (``zeus._legacy``) draws random numbers through numpy ``Generator``
methods and aggregates with numpy/pandas reductions. Reproducing its output bit for bit needs
the same random draws consumed in the same order and the same floating-point summation order.
Calling those numpy methods per simulation step costs ~10 µs each, so this module emulates the
few that matter, in pure Python, on the same PCG64 bit generator:

* ``Generator.choice(n, size, replace=False)`` with ``n <= 10000`` uses Floyd's algorithm:
  one Lemire-bounded 32-bit draw for each ``j`` in ``range(n - size, n)`` (none when ``j == 0``),
  then a Fisher-Yates shuffle of the ``size`` picks (one bounded draw for each ``i`` in
  ``size - 1 .. 1``). 32-bit draws take the low then the high half of one 64-bit output.
* ``ndarray.sum`` / ``np.var`` on float64 use pairwise summation (sequential below 8 values).
* pandas ``groupby(...).mean()`` uses Kahan-compensated summation.

Every emulation here is checked against the real call in ``tests/zeus/test_exact.py``.
"""

from __future__ import annotations

import collections
import functools
import math

import numpy as np

_MASK32 = 0xFFFFFFFF
#: Below this many values numpy's pairwise sum is a plain left-to-right loop starting at 0.0.
_PAIRWISE_SEQUENTIAL = 8


class Uint32Draws:
    """The 32-bit draw stream of a numpy PCG64 bit generator, as ``Generator`` methods consume it.

    Raw 64-bit outputs are pulled with ``random_raw()`` exactly when numpy would pull them, so
    draws taken through this object and draws taken by ``Generator`` methods on the same bit
    generator interleave in the order the published code consumes them (the half-word buffer
    lives here; numpy's 64-bit and floating-point draws never touch it). With ``prefetch > 0``
    outputs are pulled in blocks ahead of use: only valid when nothing else draws from the bit
    generator.
    """

    __slots__ = ("_bitgen", "_has_high", "_high", "_block", "_pos", "_prefetch")

    def __init__(self, bitgen: np.random.BitGenerator, prefetch: int = 0) -> None:
        self._bitgen = bitgen
        self._has_high = False
        self._high = 0
        self._block: list[int] = []
        self._pos = 0
        self._prefetch = prefetch

    def _next64(self) -> int:
        if not self._prefetch:
            return int(self._bitgen.random_raw())
        if self._pos == len(self._block):
            self._block = self._bitgen.random_raw(self._prefetch).tolist()
            self._pos = 0
        value = self._block[self._pos]
        self._pos += 1
        return value

    def next32(self) -> int:
        """One 32-bit draw: the low half of a fresh 64-bit output, then its high half."""
        if self._has_high:
            self._has_high = False
            return self._high
        raw = self._next64()
        self._has_high = True
        self._high = raw >> 32
        return raw & _MASK32

    def bounded(self, high: int) -> int:
        """A uniform integer in ``[0, high]`` (``high < 2**32 - 1``) by Lemire's rejection method.

        ``high == 0`` consumes no draw, as in numpy.
        """
        if high == 0:
            return 0
        span = high + 1
        product = self.next32() * span
        leftover = product & _MASK32
        if leftover < span:
            threshold = (_MASK32 - high) % span
            while leftover < threshold:
                product = self.next32() * span
                leftover = product & _MASK32
        return product >> 32

    def choice_one(self, n: int) -> int:
        """The index ``Generator.choice(n, size=1, replace=False)[0]`` returns (what ``DataFrame.sample(n=1)`` uses)."""
        return self.bounded(n - 1)

    def skip_permutation(self, n: int) -> None:
        """Consume the draws of ``Generator.choice(a, n, replace=False)`` for ``len(a) == n`` (result unused).

        Floyd's picks take bounded draws for ``j = 1 .. n-1``, the shuffle for ``i = n-1 .. 1``:
        ``2 (n - 1)`` 32-bit draws unless Lemire's method rejects one (probability < n / 2**32).
        The fresh 64-bit outputs are pulled in one call; a rejection replays the draws one by one.
        """
        if n < 2:
            return
        spans = _permutation_spans(n)
        halves: list[int] = [self._high] if self._has_high else []
        fresh = (len(spans) - len(halves) + 1) // 2
        if self._prefetch:
            for _ in range(fresh):
                raw = self._next64()
                halves += (raw & _MASK32, raw >> 32)
        else:
            # Little-endian 32-bit view of the 64-bit outputs: low half first, as next32 takes them.
            halves += np.asarray(self._bitgen.random_raw(fresh), dtype="<u8").view("<u4").tolist()
        for span, half in zip(spans, halves, strict=False):  # halves may hold one more: a high half left for later
            if (half * span) & _MASK32 < span:
                self._replay_permutation(spans, halves)
                return
        if len(halves) > len(spans):  # the unused high half stays buffered, as in numpy
            self._has_high, self._high = True, halves[-1]
        else:
            self._has_high = False

    def _replay_permutation(self, spans: list[int], halves: list[int]) -> None:
        """The slow path of ``skip_permutation``: draws already pulled are served first, then fresh ones."""
        queue = collections.deque(halves)

        def draw() -> int:
            if queue:
                return queue.popleft()
            raw = self._next64()
            queue.append(raw >> 32)
            return raw & _MASK32

        for span in spans:
            leftover = (draw() * span) & _MASK32
            if leftover < span:
                threshold = (_MASK32 - (span - 1)) % span
                while leftover < threshold:
                    leftover = (draw() * span) & _MASK32
        self._has_high, self._high = (True, queue.popleft()) if queue else (False, 0)


@functools.cache
def _permutation_spans(n: int) -> list[int]:
    """``high + 1`` of each bounded draw of a permutation of ``n`` (Floyd, then the shuffle)."""
    return [j + 1 for j in range(1, n)] + [i + 1 for i in range(n - 1, 0, -1)]


def pairwise_sum(values: list[float]) -> float:
    """``np.add.reduce`` of a contiguous float64 array, in pure Python (numpy's pairwise order)."""
    return _pairwise(values, 0, len(values))


def _pairwise(a: list[float], lo: int, n: int) -> float:
    if n < _PAIRWISE_SEQUENTIAL:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    if n <= 128:
        r = a[lo : lo + 8]
        end = n - n % 8
        i = 8
        while i < end:
            base = lo + i
            for j in range(8):
                r[j] += a[base + j]
            i += 8
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        while i < n:
            res += a[lo + i]
            i += 1
        return res
    half = n // 2
    half -= half % 8
    return _pairwise(a, lo, half) + _pairwise(a, lo + half, n - half)


def sum_and_var(values: np.ndarray, n: int) -> tuple[float, float]:
    """``(values[:n].sum(), np.var(values[:n]))`` bit for bit; ``values`` is contiguous float64."""
    if n < _PAIRWISE_SEQUENTIAL:
        head = values[:n].tolist()
        total = 0.0
        for x in head:
            total += x
        mean = total / n
        sq = 0.0
        for x in head:
            d = x - mean
            sq += d * d
        return total, sq / n
    head = values[:n]
    total = float(np.add.reduce(head))
    dev = head - total / n
    return total, float(np.add.reduce(dev * dev)) / n


def kahan_mean_of_copies(value: float, copies: int) -> float:
    """pandas ``groupby().mean()`` of ``copies`` equal values (Kahan-compensated sum / count)."""
    total = 0.0
    comp = 0.0
    for _ in range(copies):
        y = value - comp
        t = total + y
        comp = t - total - y
        if math.isnan(comp):  # pandas resets a NaN compensation (infinite inputs)
            comp = 0.0
        total = t
    return total / copies


def tiled_mean(block: np.ndarray, copies: int) -> float:
    """pandas ``Series.mean`` of ``block`` repeated ``copies`` times end to end (pairwise sum / count)."""
    tiled = np.tile(block, copies)
    return float(np.add.reduce(tiled)) / float(tiled.size)


def reciprocal(x: float) -> float:
    """``np.reciprocal`` for a non-negative float64: ``inf`` at zero instead of raising."""
    return 1.0 / x if x != 0.0 else math.inf
