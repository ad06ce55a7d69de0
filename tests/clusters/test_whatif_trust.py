"""``whatif`` as an operator trusts it: the export's own GPUs, a measured profile, error bars, measured energy, units, bad input.

The exports are generated (tests/support/sacct_export.py: a mixed A100/V100/A40/H100 cluster with Slurm's
energy accounting); the H100 profile is a schema-true synthetic fixture (tests/clusters/h100_profile.csv,
written by the measurement harness's writer, cifar100 and imagenet only; no GPU measured it).
"""

from __future__ import annotations

import csv
import json
import statistics
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import zstandard

from pipelines.clusters import mapping, simulate, tracefiles, whatif
from pipelines.clusters.anchoring import RUNTIME_RATIO
from pipelines.clusters.profiles import profile_key, profiles_of, with_measured
from pipelines.clusters.workloads import workloads_by_default_tta
from pipelines.contracts.base import validate
from pipelines.contracts.owncluster import OwnClusterSummary
from pipelines.home.paths import REPO_ROOT
from pipelines.ingest.common import IngestError
from pipelines.ingest.simulator_inputs import read_trace_dir
from pipelines.report.text import energy_text, render
from pipelines.scaleout.schedulers import connect
from pipelines.zeus.traces import Traces
from tests.support import anchoring_peer
from tests.support.sacct_export import write_export

H100 = Path(__file__).with_name("h100_profile.csv")


@pytest.fixture(scope="module")
def traces(mirror: Path) -> Traces:
    return read_trace_dir(mirror / "zeus")


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("mixed") / "mixed.sacct"
    truth = write_export(path, 1200, seed=3, energy="measured", span_days=20)
    return path, truth, tracefiles.read_trace(path, "mixed", "sacct", "Europe/Berlin", source_file=path.name)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pipelines", "whatif", *args], capture_output=True, text=True, check=False, cwd=REPO_ROOT)


def test_gpu_names_match_across_vendors_forms_and_memory_sizes() -> None:
    assert {profile_key(n) for n in ("v100", "Tesla_V100-SXM2-32GB", "nvidia_v100_16g", "V100-PCIE")} == {"v100"}
    assert profile_key("h100-80gb-hbm3") == profile_key("h100_80gb") == "h100"
    assert profile_key("quadro_rtx_6000") == "rtx6000"
    assert profile_key("v100s") != "v100" and profile_key("rtx6000_ada") != "rtx6000"  # other GPUs stay other GPUs


def test_as_exported_replays_each_type_on_its_own_profile_else_the_fallback(mixed, traces: Traces) -> None:
    _, truth, result = mixed
    profiles = with_measured(traces, [H100], None)
    report = whatif.run(result, profiles, whatif.Options(samples=2))[0]
    assert report["gpu_mode"] == "as-exported"
    assert report["replayed_on"] == {"a100": "v100", "untyped": "v100", "v100": "v100", "a40": "a40", "h100": "h100"}
    candidates = mapping.own_replay_candidates(result.table)
    by_type = dict(candidates.group_by(pl.col("gpu_type").fill_null("untyped")).len().iter_rows())
    assert report["gpu_types"] == by_type and sum(by_type.values()) == report["simulated_jobs"] == truth.completed_gpu_allocations
    assert report["fallback_jobs"] == by_type["a100"] + by_type["untyped"]
    assert [report["gpus"][t]["own_profile"] for t in ("a100", "v100", "a40", "h100", "untyped")] == [False, True, True, True, False]
    # the measured H100 replays only the workloads it measured, and the report says which
    assert report["measured_workloads"] == {"h100": ["cifar100", "imagenet"]}
    assert set(report["gpus"]["h100"]["jobs_by_workload"]) <= {"cifar100", "imagenet"}
    assert report["gpus"]["h100"]["profile_source"] == "h100_profile.csv"
    total = report["total"]
    assert total["jobs"] == report["simulated_jobs"]
    # one cluster: the total's energy is the rows' (per draw; so their medians bracket it only loosely, but draw by draw it adds up)
    one = whatif.run(result, profiles, whatif.Options(samples=1))[0]
    assert one["total"]["default_kwh"] == pytest.approx(sum(g["default_kwh"] for g in one["gpus"].values()), rel=1e-12)
    assert one["total"]["default_peak_kw"] <= sum(g["default_peak_kw"] for g in one["gpus"].values())
    text = render(report)
    assert "h100 (its own profile, measured: h100_profile.csv; workloads cifar100, imagenet only)" in text
    assert "v100 (fallback: no profile of this GPU)" in text


def test_explicit_gpus_keep_their_meaning_every_job_on_each(mixed, traces: Traces) -> None:
    _, truth, result = mixed
    report = whatif.run(result, profiles_of(traces), whatif.Options(gpus=("v100", "a40"), samples=1))[0]
    assert report["gpu_mode"] == "every-gpu" and set(report["gpus"]) == {"v100", "a40"} and report.get("total") is None
    assert all(g["jobs"] == truth.completed_gpu_allocations for g in report["gpus"].values())


def test_one_sample_is_the_single_replay_and_intervals_bracket_the_medians(mixed, traces: Traces) -> None:
    _, _, result = mixed
    # the runtime rule for every group (the export has GPU utilisation: by default it picks those groups' workloads)
    one = whatif.run(result, profiles_of(traces), whatif.Options(gpus=("v100",), samples=1, energy_model=RUNTIME_RATIO,
                                                                 workloads_by="runtime"))[0]
    jobs = mapping.map_own(result.table, workloads_by_default_tta(traces), "mixed")
    history = simulate.simulate_trace(jobs, traces, "v100", policies=("default", "zeus"))
    default = history.filter(pl.col("policy") == "default")["energy_j"].to_numpy().sum() / 3.6e6
    assert one["gpus"]["v100"]["default_kwh"] == pytest.approx(default, rel=1e-12)
    # anchored (the default): the same replay, each job's runs sized to its exported elapsed time (tests/support/anchoring_peer.py:
    # the formula over the replay's runs, none of anchoring's helpers)
    anchored = whatif.run(result, profiles_of(traces), whatif.Options(gpus=("v100",), samples=1, workloads_by="runtime"))[0]
    runs = history.select("group", "job_id", "policy", "energy_j", "time_s").rows()
    elapsed = {(g, j): e - s for g, j, s, e in jobs.select("group", "job_id", "start_time_s", "end_time_s").iter_rows()}
    for policy in ("default", "zeus"):
        assert anchored["gpus"]["v100"][f"{policy}_kwh"] == pytest.approx(anchoring_peer.anchored_kwh(runs, elapsed, policy), rel=1e-12)
    assert one["gpus"]["v100"]["default_kwh_interval"] == [None, None]  # a single replay: no interval, never a zero-width one
    assert one["gpus"]["v100"]["interval_note"] == "a single replay (--samples 1): no interval"
    many = whatif.run(result, profiles_of(traces), whatif.Options(gpus=("v100",), samples=6, seed=4))[0]
    g = many["gpus"]["v100"]
    for name in ("default_kwh", "energy_saved_pct", "energy_saved_kwh", "time_saved_pct", "zeus_peak_kw"):
        low, high = g[f"{name}_interval"]
        assert low <= g[name] <= high, name
    assert g["energy_saved_pct_interval"][0] < g["energy_saved_pct_interval"][1]  # the draws differ
    assert many["samples"] == 6 and many["seed"] == 4


@pytest.mark.slow
def test_samples_on_dask_equal_samples_in_process_bit_for_bit(mixed, traces: Traces) -> None:
    _, _, result = mixed
    profiles = profiles_of(traces)
    options = whatif.Options(samples=3, seed=11)
    here = whatif.run(result, profiles, options)[0]
    with connect("local", workers=2) as runner:
        there = whatif.run(result, profiles, options, runner)[0]
    assert there["runner"] != here["runner"]
    assert json.dumps({**there, "runner": ""}) == json.dumps({**here, "runner": ""})  # the whole report, bit for bit


def test_the_measured_section_compares_the_clusters_meter_with_the_model(mixed, traces: Traces) -> None:
    path, truth, result = mixed
    report = whatif.run(result, profiles_of(traces), whatif.Options(samples=2))[0]
    m = report["measured"]
    with open(path, newline="") as fh:
        rows = [r for r in csv.DictReader(fh, delimiter="|") if "." not in r["JobID"]]
    meter_j = sum(float(r["ConsumedEnergyRaw"]) for r in rows if r["State"] == "COMPLETED" and "gres/gpu" in r["AllocTRES"])
    assert m["jobs"] == truth.completed_gpu_allocations and m["source"] == "ConsumedEnergyRaw"
    assert m["measured_kwh"] == pytest.approx(meter_j / 3.6e6, rel=1e-12)
    assert m["ratio_p25"] <= m["ratio_median"] <= m["ratio_p75"] and m["modelled_default_kwh"] > 0
    assert "rapl: CPU packages and DRAM only" in m["caption"] and 0 < m["gpu_util_median_pct"] < 100
    # the median utilisation of the jobs compared, from the read table by the rule written out here: COMPLETED GPU
    # allocations with end > start and a measured energy, none of them idle (below --min-gpu-util's default 10 %)
    t = result.table
    compared = t.filter((pl.col("category") == "gpu") & (pl.col("state") == "COMPLETED") & (pl.col("end_time") > pl.col("start_time"))
                        & pl.col("measured_energy_j").is_not_null() & ~(pl.col("gpu_util_pct") < 10).fill_null(False))
    utils = [u for u in compared["gpu_util_pct"].to_list() if u is not None]
    assert len(utils) > 100 and m["gpu_util_median_pct"] == pytest.approx(statistics.median(utils), rel=1e-12)
    assert "Measured energy (ConsumedEnergyRaw)" in render(report)


def test_an_export_of_zeros_says_no_energy_was_collected(tmp_path: Path, traces: Traces) -> None:
    path = tmp_path / "zeros.sacct"
    write_export(path, 300, seed=8, energy="zero", span_days=5)
    result = tracefiles.read_trace(path, "zeros", "sacct", "UTC", source_file=path.name)
    report = whatif.run(result, profiles_of(traces), whatif.Options(samples=1))[0]
    assert report["measured"] is None
    accounting = report["energy_accounting"]
    assert (accounting["zero_allocations"], accounting["measured_allocations"]) == (result.counts.allocations, 0)
    assert accounting["replayed_jobs_zero"] == report["simulated_jobs"] > 0
    assert "0 is not a measurement" in report["energy_accounting"]["note"] and "0 is not a measurement" in render(report)


def test_energy_reads_in_a_unit_that_fits_and_json_has_kwh_beside_every_mwh(mixed, traces: Traces) -> None:
    assert [energy_text(v) for v in (0.000054, 0.00042, 0.42, 614.0, 5_220.0, 1_310_000.0)] == [
        "0.0000540 kWh", "0.000420 kWh", "0.420 kWh", "614 kWh", "5.22 MWh", "1.31 GWh"]  # three significant digits, no exponent
    _, _, result = mixed
    report = whatif.run(result, profiles_of(traces), whatif.Options(samples=1, price_per_kwh=0.3))[0]
    for section in [*report["gpus"].values(), report["total"], *report["top_groups"], report["measured"]]:
        mwh = {k for k in section if k.endswith("_mwh")}
        assert mwh and {k.removesuffix("_mwh") + "_kwh" for k in mwh} <= set(section)
    assert " 0.00 " not in render(report)


def test_the_pipeline_summary_is_whatifs_report(mixed, traces: Traces) -> None:
    _, _, result = mixed
    options = whatif.Options(samples=2)
    report = whatif.run(result, profiles_of(traces), options)[0]
    stored = whatif.result_of(result.summary_row().row(0, named=True), result.table)  # what own_cluster_summary reads
    again = whatif.run(stored, profiles_of(traces), options)[0]
    assert json.dumps(again["gpus"]) == json.dumps(report["gpus"]) and json.dumps(again["measured"]) == json.dumps(report["measured"])
    frame = validate(whatif.summary_frame(report), OwnClusterSummary, name="own_cluster_summary")
    total = frame.filter(pl.col("row") == "all").row(0, named=True)
    assert total["energy_saved_pct"] == report["total"]["energy_saved_pct"]
    assert [total["energy_saved_pct_p05"], total["energy_saved_pct_p95"]] == report["total"]["energy_saved_pct_interval"]
    assert total["measured_kwh"] == report["measured"]["measured_kwh"] and frame.height == len(report["gpus"]) + 1


@pytest.mark.slow
def test_bad_input_is_one_line_and_exit_code_2(mixed, tmp_path: Path, mirror: Path) -> None:
    path = str(mixed[0])
    wrong = tmp_path / "wrong.csv"
    wrong.write_text("gpu,dataset,watts\nh100,cifar100,300\n")
    named_v100 = tmp_path / "v100.csv"
    named_v100.write_text(H100.read_text().replace(",h100,", ",v100,"))
    truncated = tmp_path / "cut.sacct.zst"
    data = zstandard.ZstdCompressor().compress(Path(path).read_bytes())
    truncated.write_bytes(data[: len(data) // 3])
    cases = [
        ([path, "--samples", "0"], "--samples"),
        ([path, "--delimiter", "ab"], "--delimiter"),
        ([path, "--delimiter", "\n"], "--delimiter"),
        ([path, "--profiles", str(wrong)], "wrong.csv"),
        ([path, "--profiles", str(named_v100)], "v100.csv:2: column 'gpu': gpu 'v100' is a GPU of the published trace"),
        ([str(truncated)], "cut.sacct.zst: truncated or corrupt zstd stream"),
        ([path, "--gpu", "h200"], "unknown GPU 'h200'"),
    ]
    for args, message in cases:
        done = cli(*args, "--trace-dir", str(mirror / "zeus"), "--no-progress")
        assert done.returncode == 2 and done.stdout == "", (args, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and message in done.stderr, done.stderr


def test_profile_files_go_through_the_measured_ingest(traces: Traces, tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="published trace"):
        with_measured(traces, [_renamed(tmp_path, "a40")], None)
    folder = tmp_path / "measured"
    folder.mkdir()
    (folder / "h100.csv").write_text(H100.read_text())
    (folder / "bad.csv").write_text(H100.read_text().replace(",h100,", ",p100,", 1))
    profiles = with_measured(traces, [], folder, source_name="measured")
    assert "h100" in profiles.names() and profiles.workloads["h100"] == ("cifar100", "imagenet")
    assert any("measured/bad.csv:2" in note and "published trace" in note for note in profiles.notes)


def _renamed(tmp_path: Path, gpu: str) -> Path:
    path = tmp_path / f"{gpu}.csv"
    path.write_text(H100.read_text().replace(",h100,", f",{gpu},"))
    return path


def test_a_draw_is_the_same_on_the_compiled_and_the_reference_replay(mixed, traces: Traces) -> None:
    from dataclasses import replace

    from pipelines.clusters import samples

    _, _, result = mixed
    the_plan, _, _ = whatif.plan(result, profiles_of(traces), whatif.Options())
    for draw in (0, 3):
        fast = samples.run_draw(draw, plan=replace(the_plan, engine="fast"), traces=traces, base_seed=2)
        reference = samples.run_draw(draw, plan=replace(the_plan, engine="reference"), traces=traces, base_seed=2)
        assert json.dumps(fast) == json.dumps(reference)
