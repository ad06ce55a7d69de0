"""The run tag that says who launched a run, ``gpu_energy/launched_by`` (namespaced as the code location's other tags).

Its values: ``materialize`` (``python -m pipelines materialize``, ``make figures``), ``ui`` (a run of an asset job
launched from the Dagster UI: the jobs' own tag, which the tags of any other launcher replace), ``automation`` (the
automation sensor's runs) and ``sensor:<name>`` (a sensor's runs). The Runs page filters on it.
A run launched from an asset's page or the lineage is a run of Dagster's implicit asset job, which no definition can tag
(docs/architecture.md, "Run tags"): the home's run launcher (``run_launcher.LaunchedByRunLauncher``) tags it ``ui``.
"""

from pipelines.home.init import LOCATION

LAUNCHED_BY = f"{LOCATION}/launched_by"


def launched_by(origin: str) -> dict[str, str]:
    """The tag of a run launched by ``origin`` (``materialize``, ``ui``, ``automation``)."""
    return {LAUNCHED_BY: origin}


def by_sensor(name: str) -> dict[str, str]:
    """The tag of a run requested by the sensor ``name``."""
    return launched_by(f"sensor:{name}")
