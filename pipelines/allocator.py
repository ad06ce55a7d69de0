"""polars' allocator (jemalloc, on Linux) set to give freed pages back at once, for ``python -m pipelines``.

With jemalloc's decay (polars' own setting: dirty pages kept 0.5 s, muzzy 1 s; jemalloc's default 10 s) the table
whatif frees before its plan is still resident at the plan's peak: 12M lines, the parse reused, 1.77 GB peak against
1.16 GB with no decay (docs/benchmarks.md), 5% slower. jemalloc reads ``_RJEM_MALLOC_CONF`` when polars loads, so this
runs before any import of polars (``pipelines/__init__.py`` imports none).

Importing polars writes its own defaults into ``os.environ`` (``dirty_decay_ms:500,muzzy_decay_ms:1000``, then whatever
was there): a command started by a Python process that imported polars (a notebook's ``!python -m pipelines``, a
benchmark, a Dagster run's subprocess) inherits them as if a user had set them. Only what follows them is the user's:
a decay set there is kept, anything else gets no decay added after it (the last value of an option wins).
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

VARIABLE = "_RJEM_MALLOC_CONF"
#: What ``import polars`` writes before the value it found (polars/__init__.py), and adds with ``POLARS_THP=1``.
POLARS_DEFAULTS = "dirty_decay_ms:500,muzzy_decay_ms:1000"
POLARS_THP = "thp:always,metadata_thp:always"
NO_DECAY = "dirty_decay_ms:0,muzzy_decay_ms:0"


def users_part(value: str) -> str:
    """``value`` less the defaults a parent's ``import polars`` put in front of it (any number of times: each process
    that imported polars added them again)."""
    rest = value
    while True:
        stripped = rest.removeprefix(POLARS_DEFAULTS).lstrip(",").removeprefix(POLARS_THP).lstrip(",")
        if stripped == rest:
            return rest
        rest = stripped


def no_decay(environ: MutableMapping[str, str] | None = None) -> str:
    """Set ``_RJEM_MALLOC_CONF`` in ``environ`` (default ``os.environ``) to give freed pages back at once, unless the user's
    part of it (``users_part``) sets a decay; returns the value set."""
    env = os.environ if environ is None else environ
    mine = users_part(env.get(VARIABLE, ""))
    env[VARIABLE] = mine if "decay_ms" in mine else ",".join(p for p in (mine, NO_DECAY) if p)
    return env[VARIABLE]
