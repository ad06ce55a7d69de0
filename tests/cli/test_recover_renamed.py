"""``recover`` (and the start of ``materialize``) on a data home materialized under asset keys since renamed.

Such a home holds ``assets/quarantine/itp_jobs.parquet`` beside the new ``itp_jobs_bad_rows.parquet``
(the ``quarantine`` view would count each bad row twice), old figure files in figures/, and the old
keys in its Dagster instance (the UI's asset catalog would list them): all of it goes, each named
in one line, and nothing else is touched: a defined key's files, a file of the user's own, another code location's asset.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from pipelines.definitions import loaded
from pipelines.home.init import write_dagster_yaml
from pipelines.home.paths import REPO_ROOT, ProjectPaths
from pipelines.home.storage import write_parquet_atomic
from pipelines.orchestration.renamed import RENAMED, Forgotten, forget_renamed
from pipelines.sql.views import connect


def _bad_rows(n: int) -> pl.DataFrame:
    return pl.DataFrame({"table": ["itp_jobs"] * n, "source_file": ["itp/x.csv"] * n, "line": list(range(2, n + 2)),
                         "column": [None] * n, "reason": ["bad"] * n, "raw": ["x"] * n},
                        schema_overrides={"column": pl.String})


@pytest.mark.slow
def test_recover_removes_what_renamed_keys_wrote_and_nothing_else(tmp_path: Path) -> None:
    root, dagster_home = tmp_path / "home", tmp_path / "home" / ".dagster_home"
    paths = ProjectPaths(root)
    dagster_home.mkdir(parents=True)
    paths.figures.mkdir()
    write_dagster_yaml(dagster_home)
    old = {"assets/quarantine/itp_jobs.parquet": _bad_rows(3),  # the old key quarantine/itp_jobs
           "assets/quarantine/own_cluster_jobs/lab.parquet": _bad_rows(1)}  # a partition of the old quarantine/own_cluster_jobs
    kept = {"assets/quarantine/itp_jobs_bad_rows.parquet": _bad_rows(3), "assets/quarantine/own_cluster_jobs_bad_rows/lab.parquet": _bad_rows(1),
            "assets/cluster_power/v100__itp.parquet": _bad_rows(1)}  # a table's partition (its content does not matter here)
    for name, frame in {**old, **kept}.items():
        write_parquet_atomic(frame, root / name)
    old_figures = [f"figures/clusters_energy_timeline.{s}" for s in ("png", "pdf", "parquet")] + ["figures/acme_cluster_summary.png"]
    kept_figures = ["figures/clusters_timeline_energy.png", "figures/energy_eta_vs_tta_v100.pdf",  # one panel per GPU
                    "figures/own_cluster_report_lab.html", "figures/README.md", "assets/README.md",  # not an asset's file
                    "figures/my_plot.png", "assets/my_analysis.parquet"]  # the user's own: no asset writes them, and they stay
    for name in old_figures + kept_figures:
        (root / name).write_text("x")
    with connect(paths, quiet=True) as con:
        assert con.execute("select count(*) from quarantine").fetchall() == [(8,)]  # the old files counted beside the new ones
    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        for key in ("quarantine/itp_jobs", "figures/acme_cluster_summary", "itp_jobs", "other_location_table"):
            instance.report_runless_asset_event(dg.AssetMaterialization(dg.AssetKey.from_user_string(key)))

    env = {**os.environ, "DAGSTER_HOME": str(dagster_home), "GPU_ENERGY_HOME": str(root)}
    done = subprocess.run([sys.executable, "-m", "pipelines", "recover"], env=env, cwd=REPO_ROOT, capture_output=True, text=True,
                          check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert sorted(lines) == sorted([f"[recover] removed {name}: an asset key since renamed wrote it" for name in [*old, *old_figures]]
                                   + ["[recover] wiped asset figures/acme_cluster_summary from the Dagster instance: renamed to "
                                      "figures/acme_cluster_stats",
                                      "[recover] wiped asset quarantine/itp_jobs from the Dagster instance: renamed to "
                                      "quarantine/itp_jobs_bad_rows"])
    assert not any((root / name).exists() for name in [*old, *old_figures])
    assert not (root / "assets/quarantine/own_cluster_jobs").exists()  # the folder it left empty
    assert all((root / name).is_file() for name in [*kept, *kept_figures])
    with connect(paths, quiet=True) as con:
        assert con.execute("select count(*) from quarantine").fetchall() == [(4,)]  # each bad row once
    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        assert sorted(instance.get_asset_keys()) == [dg.AssetKey("itp_jobs"), dg.AssetKey("other_location_table")]
        assert forget_renamed(instance, paths) == Forgotten([], [])  # nothing left to do


def test_every_renamed_key_is_gone_and_its_new_key_defined() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Dagster's beta warnings of the definitions
        defined = {k.to_user_string() for k in loaded().resolve_asset_graph().get_all_asset_keys()}
    assert set(RENAMED.values()) <= defined and not set(RENAMED) & defined
    # every quarantine but those of tables added after the renaming (power_limit_profiles) had a key before it
    added_since = {"quarantine/power_limit_profiles_bad_rows"}
    assert {k for k in defined if k.startswith("quarantine/")} == {v for v in RENAMED.values() if v.startswith("quarantine/")} | added_since
