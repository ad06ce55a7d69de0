"""The asset of a table computed from other tables: the ``@dg.asset`` arguments every one of them shares, in one place.

A table asset is named after its function and stored under that name; its group is the folder of ``pipelines/defs/``
that defines it (``defs/clusters/power.py``: group ``clusters``), so that folders and groups match one to one; its
definition metadata is its contract's column schema; it is a polars table stored as Parquet; it follows its inputs
(``FOLLOW``); and a partitioned one materializes any set of its partitions in one run (``ONE_RUN``).
"""

from collections.abc import Callable, Iterable
from typing import Any

import dagster as dg

from pipelines.defs.shared.metadata import contract_metadata

#: A table follows its inputs: materialized when an upstream partition updates or one of its partitions is new (the
#: tables downstream of the raw files; an ingest follows its raw asset, so a fetch in the UI re-ingests).
FOLLOW = dg.AutomationCondition.eager()
#: Every partitioned asset materializes any set of its partitions in one run (one step, one process: a backfill of all
#: trace x GPU partitions is one run, not one run process each); the step returns {partition key: frame} and the IO
#: manager writes one file per partition.
ONE_RUN = dg.BackfillPolicy.single_run()
#: The tag of an asset whose step replays with the compiled kernel (``pipelines.zeus.fast``): ``materialize`` compiles the
#: kernel in the background first, on a core its start leaves idle.
COMPILED_REPLAY = {"gpu_energy/replay": "compiled"}
#: What every table asset is: a polars frame stored as Parquet (more kinds are added per asset: ``dask``).
TABLE_KINDS = ("polars", "parquet")


def group_of(module: str) -> str:
    """The group of the assets defined in ``module`` (``pipelines.defs.<folder>.<name>``): its folder."""
    parts = module.split(".")
    if parts[:2] != ["pipelines", "defs"] or len(parts) < 4:
        raise ValueError(f"{module}: a table asset is defined in a module of a folder of pipelines/defs/")
    return parts[2]


def table_asset(
    *,
    description: str,
    partitions_def: dg.PartitionsDefinition | None = None,
    automation_condition: dg.AutomationCondition = FOLLOW,
    kinds: Iterable[str] = (),
    **asset_args: Any,
) -> Callable[[Callable[..., Any]], dg.AssetsDefinition]:
    """``@dg.asset`` for the table the decorated function computes (see the module docstring); ``kinds`` adds to
    ``TABLE_KINDS``, ``asset_args`` are passed on (``check_specs``, ``resource_defs``, ``op_tags``, ``ins``)."""

    def decorate(compute: Callable[..., Any]) -> dg.AssetsDefinition:
        return dg.asset(
            name=compute.__name__,
            group_name=group_of(compute.__module__),
            partitions_def=partitions_def,
            backfill_policy=ONE_RUN if partitions_def is not None else None,
            automation_condition=automation_condition,
            kinds={*TABLE_KINDS, *kinds},
            metadata=contract_metadata(compute.__name__),
            description=description,
            **asset_args,
        )(compute)

    return decorate
