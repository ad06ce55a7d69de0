"""The sensor that re-ingests ``zeus_power_profiles`` and ``power_limit_profiles`` when ``raw/measured/`` changes.

``zeus_power_profiles`` records the fingerprint of the profile files it read (a profile measured here,
a ZeusMonitor log or Zeus's profile JSON); when the folder's differs (a file added, replaced or
removed), the sensor requests both ingests, and the figures and
replays downstream follow by their automation conditions. Nothing happens before the table is
first materialized (``make materialize`` ingests raw/measured with everything else).
"""

import dagster as dg

from pipelines.contracts.registry import quarantine_key
from pipelines.defs.shared.io_manager import PathsResource
from pipelines.defs.shared.run_tags import by_sensor
from pipelines.defs.zeus.assets import MEASURED_FINGERPRINT
from pipelines.ingest.zeus import measured_fingerprint

TABLE = dg.AssetKey("zeus_power_profiles")
#: Each ingest writes its table and its quarantine together.
INGEST = [key for table in (TABLE.to_user_string(), "power_limit_profiles")
          for key in (dg.AssetKey(table), dg.AssetKey.from_user_string(quarantine_key(table)))]
NAME = "measured_profiles_sensor"
#: Seconds between two looks at raw/measured/.
INTERVAL_S = 30


@dg.sensor(
    name=NAME,
    asset_selection=INGEST,
    minimum_interval_seconds=INTERVAL_S,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Re-ingests zeus_power_profiles and power_limit_profiles when the files of raw/measured/ differ from those read.",
)
def measured_profiles_sensor(context: dg.SensorEvaluationContext, paths: PathsResource) -> dg.RunRequest | dg.SkipReason:
    current = measured_fingerprint(paths.paths().measured)
    event = context.instance.get_latest_materialization_event(TABLE)
    if event is None or event.asset_materialization is None:
        return dg.SkipReason("zeus_power_profiles is not materialized yet: its first materialization ingests raw/measured")
    recorded = event.asset_materialization.metadata.get(MEASURED_FINGERPRINT)
    if recorded is not None and recorded.value == current:
        return dg.SkipReason("raw/measured/ holds the files zeus_power_profiles was ingested from")
    return dg.RunRequest(run_key=f"measured-{current[:16]}", asset_selection=INGEST,
                         tags={"measured_fingerprint": current, **by_sensor(NAME)})
