"""The table contracts: every column described, light imports, and the reasons failing rows get."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import dataframely as dy
import polars as pl
import pytest

import pipelines.contracts
import pipelines.zeus
from pipelines.contracts import registry
from pipelines.contracts.base import ContractError, descriptions, one_of, split_valid, validate
from pipelines.home.paths import REPO_ROOT

#: The CLI's simulate path and the contracts must load without these (the CLI answers in well under a second).
HEAVY = ("pandas", "pandera", "dagster")


def test_every_contract_column_has_a_description() -> None:
    from pipelines.figures import catalog

    contracts = {*registry.TABLES.values(), *catalog.FIGURE_DATA.values()}
    undescribed = {c.__name__: [n for n, d in descriptions(c).items() if not d] for c in contracts}
    assert {k: v for k, v in undescribed.items() if v} == {}


@pytest.mark.parametrize("package", [pipelines.zeus, pipelines.contracts], ids=["zeus", "contracts"])
def test_modules_import_without_pandas_pandera_or_dagster(package: object) -> None:
    names = [m.name for m in pkgutil.iter_modules(package.__path__, f"{package.__name__}.")]
    code = f"import sys, importlib\nfor m in {names!r}: importlib.import_module(m)\nprint(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO_ROOT)
    assert len(names) > 3 and out.stdout.strip() == ""


class Runs(dy.Schema):
    """A small contract with a column rule of each kind and a row rule."""

    run = dy.Int64(primary_key=True, description="run id")
    kind = one_of(("a", "b"), nullable=True, description="kind")
    start = dy.Float64(min=0, description="start (s)")
    end = dy.Float64(max_exclusive=100, description="end (s)")
    note = dy.String(nullable=True, description="free text")

    @dy.rule()
    def end_after_start(cls) -> pl.Expr:
        """end must come after start"""
        return pl.col("end") > pl.col("start")


def test_failing_rows_get_every_reason_and_keep_their_extra_columns() -> None:
    frame = pl.DataFrame(
        {
            "run": [1, 2, 3, 4, 5],
            "kind": ["a", "c", "b", "b", None],
            "start": [1.0, 2.0, -3.0, 4.0, float("nan")],
            "end": [2.0, 3.0, 1.0, 100.0, 2.0],
            "note": [None, "x", None, None, None],
            "_line": [2, 3, 4, 5, 6],
        }
    )
    good, bad = split_valid(frame, Runs)
    assert good.to_dicts() == [{"run": 1, "kind": "a", "start": 1.0, "end": 2.0, "note": None, "_line": 2}]
    assert bad.to_dicts() == [
        {"_line": 3, "column": "kind", "reason": "kind: must be one of a, b (value c)"},
        {"_line": 4, "column": "start", "reason": "start: must be >= 0 (value -3.0)"},
        {"_line": 5, "column": "end", "reason": "end: must be < 100 (value 100.0)"},
        {"_line": 6, "column": "start", "reason": "start: must not be NaN; end_after_start: end must come after start"},
    ]
    twice = pl.DataFrame({"run": [7, 7], "kind": ["a", None], "start": [5.0, 1.0], "end": [4.0, 2.0], "note": ["", ""]})
    _, bad = split_valid(twice, Runs)
    assert bad["reason"].to_list() == [
        "duplicate key (run); end_after_start: end must come after start",
        "duplicate key (run)",
    ]
    assert bad["column"].to_list() == ["run", "run"]


def test_validate_names_the_table_column_and_check() -> None:
    ok = pl.DataFrame({"run": [1], "kind": ["a"], "start": [0.0], "end": [1.0], "note": [None]}, schema_overrides={"note": pl.String})
    assert validate(ok, Runs, name="runs") is ok
    with pytest.raises(ContractError, match=r"^runs: column 'end' is missing \(Runs has run, kind, start, end, note\)$"):
        validate(ok.drop("end"), Runs, name="runs")
    with pytest.raises(ContractError, match=r"^runs: column 'extra' is not in the contract Runs"):
        validate(ok.with_columns(extra=pl.lit(1)), Runs, name="runs")
    with pytest.raises(ContractError, match=r"^runs: start: must be >= 0 \(value -1.0\); 1 of 1 rows fail Runs \(first: row 0\)$"):
        validate(ok.with_columns(start=pl.lit(-1.0)), Runs, name="runs")


def test_every_figure_of_the_catalog_has_a_data_contract() -> None:
    from pipelines.figures import catalog

    names = [
        "energy_eta_vs_tta_v100", "energy_savings_vs_default", "energy_eta_sensitivity", "energy_power_limit_response_cifar100",
        "energy_convergence_a40", "measured_profiles", "clusters_savings_by_trace", "clusters_timeline_energy",
        "traces_job_duration_cdf", "traces_gpu_count_cdf", "traces_submissions", "acme_final_states", "acme_queueing_delay_cdf",
        "acme_cluster_stats", "hetero_cost_split", "hetero_methods", "clusters_timeline_power", "clusters_power_load_duration",
        "knob_grid_savings", "clusters_fleet_power_cdf", "power_limit_choice",
    ]
    assert all(catalog.figure_contract(n) for n in names)
    assert len(catalog.FAMILIES) == 10
    with pytest.raises(KeyError, match="no data contract"):
        catalog.figure_contract("made_up")
    with pytest.raises(KeyError, match="no data contract"):
        catalog.figure_contract("energy_savings_vs_default_v100")  # one figure, no panels


def test_figure_data_read_from_the_catalog_is_the_mapping_it_replaced() -> None:
    """FIGURE_DATA, once written out in pipelines/contracts/registry.py, is now read from the catalog's assets: the same
    mapping, name for name and contract for contract (issue 38)."""
    from pipelines.contracts import figures, fleet, grid, measure, power, sources, sweep
    from pipelines.figures import catalog

    assert {
        "energy_eta_vs_tta_": figures.EtaVsTta, "energy_savings_vs_default": figures.SavingsVsDefault,
        "energy_eta_sensitivity": figures.EtaSweep, "energy_power_limit_response_": figures.PowerLimitResponse,
        "energy_convergence_": figures.ConvergenceRecurrences, "measured_profiles": sources.ZeusPowerProfiles,
        "power_limit_choice": measure.PowerLimitChoices, "clusters_savings_by_trace": figures.SavingsByTrace,
        "clusters_co2e_by_region": grid.ZeusClusterCo2e, "clusters_timeline_energy": figures.EnergyTimeline,
        "clusters_timeline_power": power.PowerTimeline, "clusters_power_load_duration": power.LoadDuration,
        "clusters_fleet_power_cdf": fleet.FleetPowerCdfFigure, "knob_grid_savings": sweep.KnobSavings,
        "traces_job_duration_cdf": figures.DurationCdf, "traces_gpu_count_cdf": figures.GpuCountCdf,
        "traces_submissions": figures.Submissions, "acme_final_states": figures.StateShares,
        "acme_queueing_delay_cdf": figures.QueueingDelayCdf, "acme_cluster_stats": figures.SummaryStatistics,
        "hetero_cost_split": figures.SplitCurves, "hetero_methods": figures.MethodBars,
    } == catalog.FIGURE_DATA


def test_contracts_load_without_dataframelys_optional_integrations_which_stay_importable() -> None:
    code = (
        "import sys\nimport pipelines.contracts.registry\n"
        "print(sorted(m for m in ('sqlalchemy', 'pydantic') if m in sys.modules))\n"
        "import sqlalchemy, pydantic, dagster\n"
        "from pipelines.contracts.sources import ItpJobs\n"
        "print(ItpJobs.validate(ItpJobs.create_empty()).height, sqlalchemy.__name__, pydantic.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["[]", "0 sqlalchemy pydantic"]
