"""Thin Dagster wrappers, one module per stage; every module here is loaded by pipelines.definitions.

Some definitions use parameters Dagster marks as beta on purpose (``backfill_policy``: a backfill
of every partition in one run; ``resource_defs`` on an asset). The notice would print in every
process that imports these modules (the UI's code server, each run's workers), so these two
notices, and no other warning, are silenced.
"""

import warnings

import dagster as dg

warnings.filterwarnings(
    "ignore", message=r"Parameter `(backfill_policy|resource_defs)` of function `asset` is currently in beta", category=dg.BetaWarning
)
