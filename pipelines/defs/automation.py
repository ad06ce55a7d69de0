"""The sensor that evaluates the assets' automation conditions, on from the start.

Dagster's own ``default_automation_condition_sensor`` is created stopped; this one, over every
asset, replaces it and is running by default, so that under ``make dev`` a new or changed trace's
history, summaries, power and figures follow without a click (``AutomationCondition.eager()`` on
those assets, ``pipelines/defs/clusters/``, ``power/`` and ``figures/``).
"""

import dagster as dg

from pipelines.defs.shared.run_tags import launched_by

#: Seconds between two evaluations of the automation conditions. A new trace passes through three (its jobs, its replays
#: per GPU, then what reads every trace), after the sensor's own tick: each waits half of this on average. One evaluation
#: of this code location costs about 2 s of CPU here (20 % of a core while `make dev` runs; Dagster's default, 30 s, 7 %).
INTERVAL_S = 10

automation_sensor = dg.AutomationConditionSensorDefinition(
    "automation_sensor",
    target=dg.AssetSelection.all(),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=INTERVAL_S,
    run_tags=launched_by("automation"),
    description="Runs what the automation conditions ask for (eager: downstream of a new or updated partition).",
)
