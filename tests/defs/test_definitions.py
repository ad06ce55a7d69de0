"""The Dagster code location as a whole: it loads light, every table asset has its DuckDB view."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import dagster as dg
import pytest

from pipelines.contracts.base import polars_schema
from pipelines.contracts.registry import table_contract
from pipelines.definitions import defs
from pipelines.home.paths import REPO_ROOT

#: Groups whose assets are tables (Parquet through the IO manager); raw and figures write files.
TABLE_GROUPS = {"ingest", "clusters", "zeus"}
HEAVY_MODULES = ("torch", "pynvml", "zeus", "matplotlib", "seaborn", "scipy", "numba")


def _graph() -> dg.AssetGraph:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return defs().resolve_asset_graph()


def test_code_location_imports_no_heavy_module() -> None:
    code = (
        "import sys, warnings; warnings.simplefilter('ignore');"
        "from pipelines.definitions import defs; defs().resolve_asset_graph();"
        f"print(','.join(m for m in {HEAVY_MODULES!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO_ROOT)
    assert out.stdout.strip() == ""


def test_every_asset_is_grouped_and_described() -> None:
    graph = _graph()
    groups = {graph.get(k).group_name for k in graph.materializable_asset_keys}
    assert groups == {"raw", "ingest", "quarantine", "clusters", "zeus", "figures"}  # no group of one asset
    undescribed = [k.to_user_string() for k in graph.materializable_asset_keys if not graph.get(k).description]
    assert undescribed == []


def test_every_job_says_what_it_materializes_and_when_it_runs() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        definitions = defs()
    jobs = {j.name: j.description or "" for j in definitions.jobs or []}
    assert sorted(jobs) == ["gpu_assets", "own_trace_assets", "own_trace_ingest", "trace_assets", "trace_gpu_assets", "trace_ingest",
                            "unpartitioned_assets"]
    assert [name for name, text in jobs.items() if len(text) < 60] == []
    # the jobs of materialize (`make figures`) say so; the ingest jobs say which sensor runs them
    assert all("make figures" in jobs[name] for name in ("unpartitioned_assets", "trace_assets", "trace_gpu_assets", "gpu_assets",
                                                         "own_trace_assets"))
    assert "own_trace_ingest" in jobs["own_trace_assets"]


def test_descriptions_show_as_written_and_groups_say_what_the_asset_is() -> None:
    """The UI renders descriptions as Markdown, where ``<trace>`` is an HTML tag and vanishes: outside a code span no
    ``<`` starts a tag. A key's folder is its group (``figures/``, ``quarantine/``), and a raw asset's prefix."""
    import re

    specs = list(defs().resolve_all_asset_specs())
    checks = [c for a in defs().assets or [] for c in getattr(a, "check_specs", [])]
    texts = {s.key.to_user_string(): s.description or "" for s in specs} | {c.name: c.description or "" for c in checks}
    tags = {name: re.findall(r"<[A-Za-z/!?]", re.sub(r"`[^`]*`", "", text)) for name, text in texts.items()}
    assert {name: found for name, found in tags.items() if found} == {}
    for spec in specs:
        head = spec.key.path[0]
        expected = head if len(spec.key.path) > 1 else "raw" if head.startswith("raw_") else None
        assert expected is None or spec.group_name == expected, (spec.key.to_user_string(), spec.group_name)


def test_every_run_says_who_launched_it() -> None:
    """A run of one of our jobs launched from the UI carries the jobs' tag ``ui``; the automation sensor's runs ``automation``
    (a sensor's own runs and materialize's replace the tag: tests/defs/test_automation.py, tests/orchestration/)."""
    from pipelines.defs.automation import automation_sensor

    definitions = defs()
    jobs = [j.name for j in definitions.jobs or []]
    assert sorted(jobs) == ["gpu_assets", "own_trace_assets", "own_trace_ingest", "trace_assets", "trace_gpu_assets", "trace_ingest",
                            "unpartitioned_assets"]
    assert {j: definitions.resolve_job_def(j).run_tags for j in jobs} == {j: {"gpu_energy/launched_by": "ui"} for j in jobs}
    assert automation_sensor.run_tags == {"gpu_energy/launched_by": "automation"}


def test_the_code_location_loads_without_a_warning() -> None:
    code = "from pipelines.definitions import defs; defs().resolve_asset_graph()"
    out = subprocess.run([sys.executable, "-W", "always", "-c", code], capture_output=True, text=True, check=True, cwd=REPO_ROOT)
    assert out.stderr == ""


def test_every_table_asset_publishes_its_contracts_column_schema_with_descriptions() -> None:
    graph = _graph()
    tables = [
        k for k in graph.materializable_asset_keys
        if graph.get(k).group_name in TABLE_GROUPS | {"quarantine"} and "matplotlib" not in graph.get(k).kinds
    ]
    assert len(tables) == 25 + 11  # 25 tables, 11 of them ingested with a quarantine table each
    for key in tables:
        name = key.to_user_string()
        schema = graph.get(key).metadata.get("dagster/column_schema")
        assert schema is not None, name
        columns = schema.columns
        contract = table_contract(name)
        assert contract is not None, name
        assert [(c.name, c.type) for c in columns] == [(n, str(t)) for n, t in polars_schema(contract).items()], name
        undescribed = [c.name for c in columns if not c.description]
        assert undescribed == [], name


def test_every_asset_has_owners_and_the_own_cluster_tables_a_freshness_window() -> None:
    from datetime import timedelta

    from pipelines.definitions import defs

    specs = {s.key.to_user_string(): s for s in defs().resolve_all_asset_specs()}
    assert {s.owners for s in specs.values()} == {("team:gpu-energy",)}
    fresh = {k: s.freshness_policy for k, s in specs.items() if s.freshness_policy is not None}
    assert set(fresh) == {"own_cluster_jobs", "own_cluster_traces", "own_cluster_summary"}
    policy = fresh["own_cluster_summary"]
    assert (policy.fail_window.to_timedelta(), policy.warn_window.to_timedelta()) == (timedelta(days=30), timedelta(days=7))


def test_the_trace_column_of_the_power_tables_names_user_traces_too() -> None:
    from pipelines.contracts.registry import table_contract

    for table in ("cluster_power", "cluster_power_summary", "cluster_capacity", "cluster_workload_jobs"):
        contract = table_contract(table)
        assert contract is not None
        assert "or a user trace (raw/clusters/<trace>.sacct or .csv)" in (contract.columns()["trace"].description or ""), table


def test_trace_x_gpu_keys_read_gpu_then_trace_as_the_docs_say() -> None:
    import dagster as dg

    from pipelines.defs.clusters.partitions import trace_gpu, trace_gpu_partitions
    from pipelines.home.paths import REPO_ROOT, table_path

    key = dg.MultiPartitionKey({"trace": "itp", "gpu": "v100"})
    assert str(key) == "v100|itp" and trace_gpu(str(key)) == ("itp", "v100")
    assert [d.name for d in trace_gpu_partitions.partitions_defs] == ["gpu", "trace"]  # Dagster orders dimensions by name
    assert table_path(REPO_ROOT / "assets", "zeus_cluster_history", str(key)).name == "v100__itp.parquet"
    docs = (REPO_ROOT / "docs/clusters.md").read_text()
    assert "a key reads `gpu|trace`:\n`v100|itp` is the ITP trace replayed on the V100 (its file `v100__itp.parquet`)" in docs


def test_no_group_holds_a_single_asset() -> None:
    from collections import Counter

    graph = _graph()
    sizes = Counter(graph.get(k).group_name for k in graph.materializable_asset_keys)
    assert min(sizes.values()) > 1, sizes
    assert {k.to_user_string() for k in graph.materializable_asset_keys if graph.get(k).group_name == "zeus"} == {
        "hetero_allocations", "zeus_single_job_sweep"}


@pytest.mark.slow
def test_steps_fork_from_a_forkserver_unless_the_run_config_says_otherwise(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The code location's executor: Dagster's multi_or_in_process_executor with the same run config, but the step
    processes of a run whose config names no start method (the UI's, the automation's) fork from a forkserver.
    (A start method in the run config is passed through: ``pipelines.defs.resources._forkserver_by_default``.)"""
    from tests.support import executor_job

    log = tmp_path / "steps.log"
    monkeypatch.setenv("EXECUTOR_JOB_LOG", str(log))
    configs = {"default": {}, "in_process": {"execution": {"config": {"in_process": {}}}}}
    parents: dict[str, set[tuple[bool, str]]] = {}
    with dg.instance_for_test() as instance:
        for name, config in configs.items():
            log.write_text("")
            assert dg.execute_job(dg.reconstructable(executor_job.job), instance, run_config=config).success
            rows = [line.split(" ", 2) for line in log.read_text().splitlines()]
            assert sorted(asset for asset, _, _ in rows) == ["first", "second"]
            parents[name] = {(int(pid) == os.getpid(), parent) for _, pid, parent in rows}
    assert all(not here and "multiprocessing.forkserver" in parent for here, parent in parents["default"]), parents
    assert all(here for here, _ in parents["in_process"]), parents


def test_folders_and_groups_match_one_to_one() -> None:
    """An asset computed from tables is in the group named after its folder of ``pipelines/defs/`` (``table_asset`` sets it;
    the figures are built in ``figures/``); the stage groups of the raw and ingest factories (raw, ingest, quarantine) hold
    every family's fetched and ingested files, whichever folder calls the factory."""
    from pipelines.defs.shared.table_assets import group_of

    stages = {"raw", "ingest", "quarantine"}
    folders: dict[str, set[str]] = {}
    for assets in defs().assets or []:
        assert isinstance(assets, dg.AssetsDefinition)
        module = assets.op.compute_fn.decorated_fn.__module__
        for key in assets.keys:
            group = assets.specs_by_key[key].group_name
            if group not in stages:
                folders.setdefault(group_of(module), set()).add(group)
    assert folders == {"clusters": {"clusters"}, "zeus": {"zeus"}, "figures": {"figures"}}
    with pytest.raises(ValueError, match="a folder of pipelines/defs/"):
        group_of("pipelines.defs.automation")  # a module of no folder names no group
