"""Contracts of the Zeus group replay: the group table it reads and the runs it reports."""

from __future__ import annotations

import dataframely as dy
import polars as pl

from pipelines.contracts.sources import AlibabaGroups


class ZeusGroups(AlibabaGroups):
    """A group table the replay accepts (``python -m pipelines simulate groups``): the Alibaba groups' shape, one dataset per group.

    Columns and checks as ``AlibabaGroups`` (times in s, end not before start, runtime_ratio > 0,
    dataset one of the six Zeus workloads); each group's jobs are of a single dataset.
    """

    @dy.rule()
    def one_dataset_per_group(cls) -> pl.Expr:
        """every job of a group must have the same dataset"""
        return pl.col("dataset").n_unique().over("group") == 1


class ZeusGroupRuns(dy.Schema):
    """Reported runs of a group replay (``pipelines.zeus.groups.replay_groups``), in replay order.

    ``bs``, ``pl`` (power limit), ``energy``, ``time`` and ``reached`` keep the names of the artifact's output.
    """

    group = dy.String(description="group id")
    job = dy.Int64(min=0, description="trace job of the group this run serves (index by start time)")
    start_time = dy.Float64(description="run start (s; a retry starts when the run before it ended)")
    end_time = dy.Float64(description="run end (s)")
    bs = dy.Int64(min_exclusive=0, description="batch size (samples)")
    power_limit = dy.Int64(alias="pl", min_exclusive=0, description="GPU power limit (W)")
    energy = dy.Float64(min=0, description="energy of the run x runtime_ratio (J)")
    time = dy.Float64(min=0, description="time of the run x runtime_ratio (s)")
    reached = dy.Bool(description="the run reached the target metric")
