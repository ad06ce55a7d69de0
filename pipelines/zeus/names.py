"""Closed sets of names the simulator and its tables share (no import beyond typing, so contracts can use them)."""

from __future__ import annotations

from typing import Literal

#: Who picks each run's configuration: Zeus or a baseline (see ``pipelines.zeus.policies``).
PolicyName = Literal["zeus", "default", "grid-search", "oracle"]
POLICIES: tuple[PolicyName, ...] = ("zeus", "default", "grid-search", "oracle")
#: The policies replayed over every cluster trace and swept for single jobs: Zeus and the two baselines a
#: cluster could run (the Oracle needs hindsight and serves as the reference of regret instead).
REPLAYED_POLICIES: tuple[PolicyName, ...] = ("zeus", "default", "grid-search")
