"""Runs launched from the UI's asset pages say so (issue 40 item 2): the data home's instance launches through
``LaunchedByRunLauncher``, which tags a run carrying dagster-webserver's ``dagster/from_ui=true`` with
``gpu_energy/launched_by=ui``."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import dagster as dg
import pytest

from pipelines.defs.shared.run_launcher import LaunchedByRunLauncher
from pipelines.home.init import LOCATION, write_dagster_yaml
from tests.cli.test_make_dev import _start_dev


def test_the_homes_instance_launches_through_the_tagging_launcher(tmp_path: Path) -> None:
    write_dagster_yaml(tmp_path)
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        assert type(instance.run_launcher) is LaunchedByRunLauncher


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_run_launched_as_the_ui_launches_it_is_tagged_ui(tmp_path: Path) -> None:
    """``make dev``'s webserver and daemon (the runs queue, as ``dagster.yaml`` caps them at 2): a run of the implicit asset
    job with the one tag the UI's Materialize button adds, launched by GraphQL as the button does, carries
    ``launched_by=ui``; a re-execution that inherited another origin gets ``ui`` as well."""
    from dagster_graphql import DagsterGraphQLClient

    dev, port = _start_dev(tmp_path, sigint_ignored=False)
    try:
        client = DagsterGraphQLClient("127.0.0.1", port_number=port)
        submitted = {
            origin: client.submit_job_execution(
                "__ASSET_JOB",
                repository_location_name=LOCATION,
                repository_name="__repository__",
                tags={"dagster/from_ui": "true", **origin_tags},
                asset_selection=["grid_intensity"],
            )
            for origin, origin_tags in {"button": {}, "re-execution": {"gpu_energy/launched_by": "materialize"}}.items()
        }
        with dg.DagsterInstance.from_config(str(tmp_path / "dagster_home")) as instance:
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline:
                runs = {origin: instance.get_run_by_id(run_id) for origin, run_id in submitted.items()}
                if all(r is not None and r.status in (dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE) for r in runs.values()):
                    break
                time.sleep(1)
            assert {origin: (r.status, r.tags.get("gpu_energy/launched_by")) for origin, r in runs.items() if r is not None} == {
                origin: (dg.DagsterRunStatus.SUCCESS, "ui") for origin in submitted
            }
    finally:
        os.killpg(dev.pid, signal.SIGTERM)
        dev.wait(timeout=60)
