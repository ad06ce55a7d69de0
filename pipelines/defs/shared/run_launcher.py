"""The run launcher of the data home's Dagster instance: Dagster's default one, which also says that a run came from the UI.

A run started from an asset's page or the lineage ("Materialize", "Materialize selected") is a run of Dagster's implicit
asset job, whose tags no definition can set (dagster-io/dagster#14820, #8979); dagster-webserver tags every run it
launches ``dagster/from_ui=true``. Before launching such a run, this launcher tags it ``gpu_energy/launched_by=ui``
(replacing what a re-executed run inherited from its parent), so that every run says who launched it
(``pipelines.defs.shared.run_tags``). Named in the home's ``.dagster_home/dagster.yaml`` (``pipelines.home.init``).
"""

from __future__ import annotations

from typing import Any

import dagster as dg

from pipelines.defs.shared.run_tags import LAUNCHED_BY, launched_by

#: The tag dagster-webserver puts on every run launched from the UI.
FROM_UI = "dagster/from_ui"


class LaunchedByRunLauncher(dg.DefaultRunLauncher):
    """``DefaultRunLauncher`` (each run in a process of its own, started by the code server), tagging the UI's runs."""

    def launch_run(self, context: Any) -> None:  # Any: its context class is not in Dagster's public API
        run = context.dagster_run
        if run.tags.get(FROM_UI) == "true" and run.tags.get(LAUNCHED_BY) != "ui":
            # The run worker and the UI read the run's tags from storage, so they see this one.
            with dg.DagsterInstance.get() as instance:  # the daemon's or the webserver's ($DAGSTER_HOME)
                instance.add_run_tags(run.run_id, launched_by("ui"))
        super().launch_run(context)
