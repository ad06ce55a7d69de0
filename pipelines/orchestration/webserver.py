"""The Dagster webserver ``materialize`` launches its runs through: the home's storage, runs launched at once (no daemon).
No Dagster import here: the server starts first, and Dagster loads in the orchestrator while it loads."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from pipelines.home.init import WORKSPACE_YAML
from pipelines.orchestration.dagster_storage import configured_storage, create_storage

if TYPE_CHECKING:
    from dagster_graphql import DagsterGraphQLClient

#: The instance of our webserver: the home's storage, runs launched at once (Dagster's documented config keys). The storage:
#: the home's SQLite files, or the section its dagster.yaml names (PostgreSQL: ``init --postgres-url``).
SQLITE_STORAGE = 'storage: {{sqlite: {{base_dir: "{home}"}}}}\n'
INSTANCE_YAML = """\
local_artifact_storage: {{module: dagster.core.storage.root, class: LocalArtifactStorage, config: {{base_dir: "{home}"}}}}
compute_logs: {{module: dagster.core.storage.local_compute_log_manager, class: LocalComputeLogManager, config: {{base_dir: "{home}/storage"}}}}
run_coordinator: {{module: dagster.core.run_coordinator, class: DefaultRunCoordinator}}
telemetry: {{enabled: false}}
"""
POLL_S = 0.5


@contextlib.contextmanager
def webserver(home: Path, dagster_home: Path) -> Iterator[Callable[[], DagsterGraphQLClient]]:
    """A Dagster webserver on a free loopback port over ``home``'s workspace, started at once; what it yields waits until it serves."""
    with tempfile.TemporaryDirectory(prefix="gpu-energy-materialize-") as folder:
        storage = configured_storage(dagster_home) or SQLITE_STORAGE.format(home=dagster_home)
        (Path(folder) / "dagster.yaml").write_text(INSTANCE_YAML.format(home=dagster_home) + storage)
        create_storage(dagster_home, Path(folder))
        workspace = home / "workspace.yaml"
        if not workspace.is_file():  # a home made by hand: the same code location, run from the home
            workspace = Path(folder) / "workspace.yaml"
            workspace.write_text(WORKSPACE_YAML.replace("working_directory: .", f'working_directory: "{home}"'))
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        server = subprocess.Popen([sys.executable, "-m", "dagster_webserver", "-w", str(workspace), "-h", "127.0.0.1", "-p", str(port),
                                   "--log-level", "warning", "--dagster-log-level", "warning", "--code-server-log-level", "warning"],
                                  env={**os.environ, "DAGSTER_HOME": folder}, cwd=home, stdin=subprocess.DEVNULL)

        def connect() -> DagsterGraphQLClient:
            while True:  # it serves once the code location has loaded
                if server.poll() is not None:
                    raise RuntimeError(f"the Dagster webserver over {workspace} exited with code {server.returncode}")
                with contextlib.suppress(OSError):
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=1).close()
                    from dagster_graphql import DagsterGraphQLClient  # imported once the server runs (see the module's docstring)

                    return DagsterGraphQLClient("127.0.0.1", port_number=port)
                time.sleep(POLL_S)

        try:
            yield connect
        finally:  # its runs have ended: it and its code server are killed (SIGTERM would make a starting one print "Aborted!")
            with contextlib.suppress(psutil.NoSuchProcess):
                for process in [*psutil.Process(server.pid).children(recursive=True), psutil.Process(server.pid)]:
                    with contextlib.suppress(psutil.NoSuchProcess):
                        process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                server.wait(timeout=20)
