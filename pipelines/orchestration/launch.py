"""Launch runs like the Dagster UI does, from a command: through the workspace and the instance's run launcher.

The runs are created by Dagster's own GraphQL ``launchRun`` mutation, executed in-process
against the workspace (``workspace.yaml``), so they carry their asset selection, checks,
partition tags and code-location origin exactly as UI runs do (the UI's Runs page shows their
target, the Overview timeline shows them). They are launched at once by ``DefaultRunLauncher``
(one run worker process each, started by the code server), not queued: this command schedules
them itself, at most N at a time. Canceling goes through ``run_coordinator.cancel_run`` (the
run worker is interrupted and the run marked CANCELED).

Dagster has no public API for a workspace outside its CLIs and webserver; the three private
imports below are the ones its own ``dagster-graphql`` CLI uses.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

import dagster as dg

from pipelines.home.paths import find_home

REPOSITORY = "__repository__"
ASSET_JOB = "__ASSET_JOB"
_IMMEDIATE_COORDINATOR = {"module": "dagster.core.run_coordinator", "class": "DefaultRunCoordinator"}

LAUNCH_RUN = """
mutation LaunchRun($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on RunConfigValidationInvalid { errors { message } }
    ... on Error { message }
  }
}
"""


class LaunchError(RuntimeError):
    """Dagster refused to launch a run (invalid selection or config, code location not loading)."""


class Launcher:
    """A workspace (its code server started) and an instance that launches runs at once."""

    def __init__(self, instance: dg.DagsterInstance, context: object, location: str) -> None:
        self.instance = instance
        self._context = context
        self.location = location

    def launch(self, assets: tuple[str, ...], run_config: Mapping[str, object], tags: Mapping[str, str]) -> str:
        """Launch one run of ``__ASSET_JOB`` over ``assets`` (and all their checks); returns its run id."""
        from dagster_graphql.cli import execute_query

        params = {
            "selector": {
                "repositoryLocationName": self.location,
                "repositoryName": REPOSITORY,
                "pipelineName": ASSET_JOB,
                "assetSelection": [{"path": dg.AssetKey.from_user_string(a).path} for a in assets],
                "assetCheckSelection": None,  # every check of the selected assets
            },
            "runConfigData": dict(run_config),
            "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in tags.items()]},
        }
        result = execute_query(self._context, LAUNCH_RUN, {"params": params})  # type: ignore[arg-type]  # _context is the WorkspaceProcessContext (dagster-private type)
        data = (result.get("data") or {}).get("launchRun") or {}
        if data.get("__typename") == "LaunchRunSuccess":
            return str(data["run"]["runId"])
        detail = data.get("message") or "; ".join(e["message"] for e in data.get("errors", [])) or str(result.get("errors"))
        raise LaunchError(f"launching {', '.join(assets)}: {data.get('__typename', 'error')}: {detail}")

    def cancel(self, run_id: str) -> bool:
        """Ask the run's worker to stop; the run ends CANCELED. False if it was not running."""
        return bool(self.instance.run_coordinator.cancel_run(run_id))


@contextlib.contextmanager
def _workspace(home: Path) -> Iterator[Path]:
    """The data home's ``workspace.yaml`` (a clone's, or the one ``gpu-energy init`` wrote), else a temporary one.

    The temporary one is the same code location (``pipelines.definitions``, run from the home), so
    a home made by hand materializes as well.
    """
    own = home / "workspace.yaml"
    if own.is_file():
        yield own
        return
    from pipelines.home.init import WORKSPACE_YAML

    with tempfile.TemporaryDirectory(prefix="gpu-energy-workspace-") as folder:
        path = Path(folder) / "workspace.yaml"
        path.write_text(WORKSPACE_YAML.replace("working_directory: .", f"working_directory: {json.dumps(str(home))}"))
        yield path


@contextlib.contextmanager
def launcher(workspace: Path | None = None) -> Iterator[Launcher]:
    """The instance of ``$DAGSTER_HOME`` with an immediate run coordinator, and the workspace's code server.

    ``workspace`` defaults to the data home's (``_workspace``).
    """
    from dagster._core.instance.ref import InstanceRef
    from dagster._core.workspace.context import WorkspaceProcessContext
    from dagster._core.workspace.load_target import WorkspaceFileTarget

    ref = InstanceRef.from_dir(os.environ["DAGSTER_HOME"], overrides={"run_coordinator": _IMMEDIATE_COORDINATOR})
    with (
        _workspace(find_home()) if workspace is None else contextlib.nullcontext(workspace) as target,
        dg.DagsterInstance.from_ref(ref) as instance,
        WorkspaceProcessContext(instance, WorkspaceFileTarget([str(target)])) as context,
    ):
        entries = context.create_request_context().get_code_location_entries()
        errors = [e.load_error for e in entries.values() if e.load_error is not None]
        if errors or len(entries) != 1:
            raise LaunchError(f"{target}: expected one code location that loads; got {list(entries)}: {errors[:1]}")
        yield Launcher(instance, context, next(iter(entries)))
