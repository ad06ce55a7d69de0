"""``make dev`` listens on loopback only and ``make dev-read-only`` starts Dagster's webserver with ``--read-only`` (issue 25,
Medium 7: Dagster 1.13's webserver runs GraphQL mutations sent as GET from any origin; docs/getting-started.md)."""

from __future__ import annotations

import shlex
import subprocess

from pipelines.home.paths import REPO_ROOT


def planned(target: str) -> list[list[str]]:
    """The commands ``make TARGET`` would run (``make -n``), each split into words."""
    done = subprocess.run(["make", "-n", "-s", target], capture_output=True, text=True, cwd=REPO_ROOT, check=True)
    return [shlex.split(line) for line in done.stdout.splitlines() if line.strip()]


def option(words: list[str], *names: str) -> str | None:
    for i, word in enumerate(words[:-1]):
        if word in names:
            return words[i + 1]
    return None


def test_make_dev_binds_loopback_only() -> None:
    (dev,) = [c for c in planned("dev") if any(w.endswith("/dg") for w in c)]
    assert dev[dev.index(next(w for w in dev if w.endswith("/dg"))) + 1] == "dev"
    assert option(dev, "--host", "-h") == "127.0.0.1"


def test_make_dev_read_only_starts_the_webserver_read_only_on_loopback() -> None:
    (server,) = [c for c in planned("dev-read-only") if c and c[0].endswith("/dagster-webserver")]
    assert "--read-only" in server and option(server, "-h", "--host") == "127.0.0.1"
    assert option(server, "-w", "--workspace") == "workspace.yaml"
