"""A number's allowed range, and the one wording of a value outside it (every command's options, whatif's knobs).

``Range.problem(value)`` is None for a value in range, else the message a command prints after
``Invalid value for '--option':``. Whole numbers are worded as click's ``IntRange`` words them
(``0 is not in the range x>=1.``), so the lines read as they always have; other numbers as
``2.0 is not in [0, 1]``, ``0.5 is not >= 1 (or inf)``, or, for a range open at its low end with a
unit, ``0.0 is not a number of days in (0, 36,500]``. NaN is never in range; +inf only with ``inf_ok``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Range:
    """[lo, hi] (``lo_open``: (lo, hi]); ``integer``: a whole number; ``inf_ok``: +inf allowed; ``unit``: named in the
    message of a range open at its low end."""

    lo: float = -math.inf
    hi: float = math.inf
    inf_ok: bool = False
    integer: bool = False
    lo_open: bool = False
    unit: str = ""

    def wanted(self) -> str:
        """What a value must be, as the message words it (after ``is not``)."""
        if self.integer:
            if self.hi == math.inf:
                return f"in the range x>={self.lo:g}."
            return f"in the range {self.lo:g}<=x<={self.hi:g}." if self.lo > -math.inf else f"in the range x<={self.hi:g}."
        if self.lo_open:
            return f"a number of {self.unit} in ({self.lo:g}, {self.hi:,.0f}]"
        if self.lo == -math.inf and self.hi == math.inf:
            return "a finite number"
        if self.hi == math.inf:
            return f">= {self.lo:g}" + (" (or inf)" if self.inf_ok else " and finite")
        return f"in [{self.lo:g}, {self.hi:g}]"

    def problem(self, value: float) -> str | None:
        """None for a value in the range, else ``<value> is not <wanted>``."""
        if self.inf_ok and value == math.inf:
            return None
        inside = math.isfinite(value) and (self.lo < value if self.lo_open else self.lo <= value) and value <= self.hi
        return None if inside else f"{value} is not {self.wanted()}"
