"""A two-asset job on the code location's executor (``pipelines.defs.resources.MULTI_OR_IN_PROCESS``), for tests/defs/.

Each asset appends ``<asset> <its pid> <its parent's command line>`` to the file ``$EXECUTOR_JOB_LOG``. Loaded by
``dg.reconstructable(job)`` in each step process, so it is a module of its own.
"""

from __future__ import annotations

import os

import dagster as dg
import psutil

from pipelines.defs.resources import MULTI_OR_IN_PROCESS


def _record(name: str) -> None:
    parent = " ".join(psutil.Process(os.getppid()).cmdline())
    with open(os.environ["EXECUTOR_JOB_LOG"], "a", encoding="utf-8") as log:
        log.write(f"{name} {os.getpid()} {parent}\n")


@dg.asset
def first() -> None:
    _record("first")


@dg.asset
def second() -> None:
    _record("second")


def job() -> dg.JobDefinition:
    defs = dg.Definitions(assets=[first, second], jobs=[dg.define_asset_job("both", selection=[first, second])],
                          executor=MULTI_OR_IN_PROCESS)
    return defs.resolve_job_def("both")
