"""The home's ``dagster.yaml``: retention set, and ``init --postgres-url`` storage on PostgreSQL with no password in the file."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from pipelines.cli.init import cli as init_cli
from pipelines.home.init import write_dagster_yaml

URL = "postgresql://lab%40ops@db.example.org:6543/dagster%20lab?sslmode=require"


def _instance(home: Path) -> dict:
    return yaml.safe_load((home / ".dagster_home" / "dagster.yaml").read_text())


def test_the_written_dagster_yaml_purges_skipped_ticks_after_a_day(tmp_path: Path) -> None:
    write_dagster_yaml(tmp_path)
    settings = yaml.safe_load((tmp_path / "dagster.yaml").read_text())
    assert settings["retention"]["sensor"]["purge_after_days"]["skipped"] == 1
    assert settings["retention"]["schedule"]["purge_after_days"]["skipped"] == 1
    assert "storage" not in settings  # SQLite in the folder


def test_init_with_a_postgres_url_writes_its_storage_and_reads_the_password_from_the_environment(tmp_path: Path) -> None:
    done = CliRunner().invoke(init_cli, [str(tmp_path / "home"), "--postgres-url", URL])
    assert done.exit_code == 0, done.output
    assert _instance(tmp_path / "home")["storage"] == {"postgres": {"postgres_db": {
        "username": "lab@ops", "password": {"env": "DAGSTER_PG_PASSWORD"}, "hostname": "db.example.org", "db_name": "dagster lab",
        "port": 6543, "scheme": "postgresql+psycopg2", "params": {"sslmode": "require"}}}}
    assert _instance(tmp_path / "home")["run_launcher"]["class"] == "LaunchedByRunLauncher"  # the rest as on SQLite


def test_a_unix_socket_is_the_host_parameter(tmp_path: Path) -> None:
    write_dagster_yaml(tmp_path, "postgresql://postgres@/dagster?host=/var/run/postgresql&port=5433")
    db = yaml.safe_load((tmp_path / "dagster.yaml").read_text())["storage"]["postgres"]["postgres_db"]
    assert (db["hostname"], db["port"], db["params"]) == ("", 5433, {"host": "/var/run/postgresql"})


@pytest.mark.parametrize(("url", "error"), [
    ("postgresql://lab:s3cret@db/dagster", "carries a password"),
    ("mysql://lab@db/dagster", "not a PostgreSQL URL"),
    ("postgresql://db/dagster", "needs a user and a database"),
    ("postgresql://lab@db/", "needs a user and a database"),
    ("postgresql://lab@db:port/dagster", "bad port"),
])
def test_a_url_that_cannot_be_the_storage_is_refused_in_one_line_and_nothing_is_written(tmp_path: Path, url: str, error: str) -> None:
    done = CliRunner().invoke(init_cli, [str(tmp_path / "home"), "--postgres-url", url])
    assert done.exit_code == 2 and error in done.output, done.output
    assert "s3cret" not in done.output
    assert not (tmp_path / "home" / ".dagster_home" / "dagster.yaml").exists()


def test_an_existing_home_moves_to_postgres_and_stays_there_when_make_rewrites_its_settings(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert CliRunner().invoke(init_cli, [str(home)]).exit_code == 0
    assert "storage" not in _instance(home)
    again = CliRunner().invoke(init_cli, [str(home), "--postgres-url", "postgresql://lab@db/dagster"])
    assert again.output.splitlines() == ["created .dagster_home/dagster.yaml", f"data home: {home.resolve()}"]
    stored = _instance(home)["storage"]
    assert stored["postgres"]["postgres_db"]["hostname"] == "db"
    # What the Makefile does when pipelines/home/init.py changed: the rest rewritten, the storage kept (here laid out by hand).
    (home / ".dagster_home" / "dagster.yaml").write_text("telemetry:\n  enabled: true\n" + yaml.safe_dump({"storage": stored}))
    assert write_dagster_yaml(home / ".dagster_home") is True
    assert _instance(home)["storage"] == stored and _instance(home)["telemetry"] == {"enabled": False}
    assert write_dagster_yaml(home / ".dagster_home") is False  # unchanged: not written again
    assert CliRunner().invoke(init_cli, [str(home)]).output.endswith("(already complete)\n")
    assert _instance(home)["storage"] == stored
