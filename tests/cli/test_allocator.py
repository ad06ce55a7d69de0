"""``python -m pipelines`` sets polars' allocator to give freed pages back at once (``pipelines.allocator``), also when
started by a Python process that imported polars, whose defaults it then inherits."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pipelines.allocator import NO_DECAY, VARIABLE, no_decay, users_part
from pipelines.home.paths import REPO_ROOT

POLARS = "dirty_decay_ms:500,muzzy_decay_ms:1000"  # polars/__init__.py's defaults, written here from its source


@pytest.mark.parametrize(("inherited", "expected"), [
    (None, "dirty_decay_ms:0,muzzy_decay_ms:0"),
    (POLARS, "dirty_decay_ms:0,muzzy_decay_ms:0"),  # a parent that imported polars: its defaults are not the user's
    (f"{POLARS},{POLARS}", "dirty_decay_ms:0,muzzy_decay_ms:0"),  # a grandparent too
    (f"{POLARS},thp:always,metadata_thp:always", "dirty_decay_ms:0,muzzy_decay_ms:0"),  # POLARS_THP=1's addition
    ("dirty_decay_ms:200", "dirty_decay_ms:200"),  # the user's decay is kept
    (f"{POLARS},muzzy_decay_ms:50", "muzzy_decay_ms:50"),  # ... also behind a parent's polars defaults
    ("narenas:2", "narenas:2,dirty_decay_ms:0,muzzy_decay_ms:0"),  # another option of the user's, the decay added
])
def test_the_decay_is_zero_unless_the_user_set_one(inherited: str | None, expected: str) -> None:
    env = {} if inherited is None else {VARIABLE: inherited}
    assert no_decay(env) == expected and env[VARIABLE] == expected


def test_the_users_part_is_what_follows_polars_defaults() -> None:
    assert users_part(f"{POLARS},{POLARS},narenas:4") == "narenas:4" and users_part("") == "" and NO_DECAY not in POLARS


def test_a_command_started_by_a_process_that_imported_polars_runs_without_decay() -> None:
    """The child's jemalloc setting, as polars reads it once loaded, ends with no decay (the last value of an option wins);
    importing the setter imports no polars (it must run first)."""
    import polars  # noqa: F401 - writes its defaults into this process's environment, which the child inherits

    assert os.environ[VARIABLE].startswith(POLARS)
    code = ("import sys\nfrom pipelines.allocator import no_decay\nassert 'polars' not in sys.modules\nno_decay()\n"
            "import os, polars\nprint(os.environ['_RJEM_MALLOC_CONF'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO_ROOT, env=dict(os.environ))
    assert out.stdout.strip() == f"{POLARS},dirty_decay_ms:0,muzzy_decay_ms:0"
