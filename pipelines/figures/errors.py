"""The one exception figure functions raise on purpose."""

from __future__ import annotations


class NoData(ValueError):
    """Nothing to draw (every input that could feed the figure is empty); the message says what is missing.

    The Dagster layer catches it, writes no files and records the message as a skip note, so a
    missing optional trace never produces an empty axes or a crash.
    """
