"""The error a simulation raises where the published simulator raises (or would never end)."""

from __future__ import annotations


class SimulationError(RuntimeError):
    """The simulated job cannot proceed: b0 missed the target in the first recurrence, a recurrence
    missed it in every try, pruning left no batch size, or a group's job keeps missing it."""
