"""The sensor that purges the automation evaluations older than ``EVALUATIONS_KEPT_S``, on from the start.

The automation sensor (``automation.py``) stores an evaluation of each asset whose condition changed at every tick, 10 s
apart; Dagster purges them after 30 days, a constant no ``dagster.yaml`` setting changes (its ``retention`` section, which
the home's ``dagster.yaml`` sets, covers the sensors' ticks). Idle, they made most of a home's growth (docs/benchmarks.md,
"A home left running"); this sensor deletes them through the instance's schedule storage (SQLite or PostgreSQL alike).
"""

import time

import dagster as dg

#: Seconds an automation evaluation is kept: the asset's Automation tab in the UI lists those of the last hour, 360 ticks.
EVALUATIONS_KEPT_S = 3600
#: Seconds between two purges (each a single DELETE on the evaluations' indexed timestamp).
PURGE_INTERVAL_S = 600


@dg.sensor(
    name="retention_sensor",
    minimum_interval_seconds=PURGE_INTERVAL_S,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description=f"Deletes the automation evaluations older than {EVALUATIONS_KEPT_S // 60} min (Dagster keeps them 30 days), "
    f"every {PURGE_INTERVAL_S // 60} min; launches nothing.",
)
def retention_sensor(context: dg.SensorEvaluationContext) -> dg.SkipReason:
    storage = context.instance.schedule_storage
    if storage is None or not storage.supports_auto_materialize_asset_evaluations:
        return dg.SkipReason("this instance stores no automation evaluations")
    storage.purge_asset_evaluations(before=time.time() - EVALUATIONS_KEPT_S)
    return dg.SkipReason(f"deleted the automation evaluations older than {EVALUATIONS_KEPT_S // 60} min")
