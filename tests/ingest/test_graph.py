"""The whole ingest graph materialized in-process from the mirror: exact counts and sums."""

from __future__ import annotations

import polars as pl
import pytest

from pipelines.ingest.zeus import PUBLISHED_POWER_LIMITS_W


@pytest.fixture(scope="module")
def tables(ingested) -> dict[str, pl.DataFrame]:
    paths, _ = ingested
    return {p.stem: pl.read_parquet(p) for p in paths.assets.glob("*.parquet")}


INGESTED = ("zeus_train_runs", "zeus_power_profiles", "alibaba_groups", "itp_jobs", "elasticflow_jobs", "acme_jobs",
            "acme_cluster_summary", "hetero_gpu_profiles")  # fmt: skip


def test_every_check_passes_but_absent_optional_sources_warn_with_where_to_put_them(ingested) -> None:
    paths, result = ingested
    evaluations = {(e.asset_key.to_user_string(), e.check_name): e for e in result.get_asset_check_evaluations()}
    assert evaluations[("itp_jobs", "published_totals")].passed
    assert evaluations[("elasticflow_jobs", "elasticflow_same_jobs_as_itp")].passed
    assert evaluations[("zeus_power_profiles", "published_power_limits")].passed
    for table in INGESTED:  # every ingested table, the Zeus² profiles included, has both blocking checks
        assert evaluations[(table, "quarantine_share")].passed and evaluations[(table, "records_accounted")].passed
        clean = evaluations[(f"quarantine/{table}_bad_rows", "no_rows_quarantined")]  # the public traces quarantine no row
        assert (clean.passed, clean.description) == (True, "no row quarantined")
    # The optional tables are empty here (their files are not in the mirror): the default install, so the check fails as a
    # warning (never blocking), and its description and the materialization's metadata name each file and where it goes.
    optional = {k: e for k, e in evaluations.items() if k[1] == "optional_sources_usable"}
    assert sorted(optional) == [("acme_jobs", "optional_sources_usable"), ("alibaba_groups", "optional_sources_usable")]
    assert all(not e.passed and e.severity.value == "WARN" for e in optional.values())
    acme = optional[("acme_jobs", "optional_sources_usable")].description
    assert acme.startswith("acme_jobs is empty by design: optional source acme/trace_seren.csv is not available: put the file at ")
    assert str(paths.raw / "acme/trace_seren.csv") in acme and str(paths.raw / "acme/trace_kalos.csv") in acme
    assert str(paths.raw / "zeus/alibaba_groups.csv.xz") in optional[("alibaba_groups", "optional_sources_usable")].description
    stated = {e.asset_key.to_user_string(): e.materialization.metadata for e in result.get_asset_materialization_events()}
    assert f"| zeus/alibaba_groups.csv.xz | absent: put it at `{paths.raw / 'zeus/alibaba_groups.csv.xz'}`" in (
        stated["alibaba_groups"]["optional_sources"].value)
    assert "optional_sources" not in stated["itp_jobs"]
    others = {k: e for k, e in evaluations.items() if k not in optional}
    assert all(e.passed for e in others.values()), {k: e.description for k, e in others.items() if not e.passed}


def test_every_warn_check_says_when_it_warns(ingested) -> None:
    """A WARN check's description (the UI shows it beside the check) says when it is expected to warn."""
    from pipelines.definitions import defs

    _, result = ingested
    specs = {(s.asset_key.to_user_string(), s.name): s for a in defs().assets or [] for s in getattr(a, "check_specs", [])}
    warned = {(e.asset_key.to_user_string(), e.check_name) for e in result.get_asset_check_evaluations() if e.severity.value == "WARN"}
    assert warned >= {("acme_jobs", "duration_and_gpu_time_identities"), ("acme_jobs", "optional_sources_usable")}
    # and the WARN checks of assets downstream of ingest (not materialized here)
    for key in (*warned, ("power_model_vs_measured", "a100_idle_is_the_measured_low_mode"), ("own_cluster_jobs", "quarantine_share"),
                ("quarantine/itp_jobs_bad_rows", "no_rows_quarantined"), ("quarantine/own_cluster_jobs_bad_rows", "no_rows_quarantined"),
                ("figures/acme_queueing_delay_cdf", "drew_something"), ("figures/own_cluster_report", "wrote_reports")):
        assert "Warns when" in (specs[key].description or ""), key


def test_an_optional_source_present_but_unusable_warns(ingested, materialized, tmp_path) -> None:
    """alibaba_groups.csv.xz dropped in holding its header only: the table is empty, so the WARN check fails, naming the
    quarantine (where the file's one row says why; that share also fails the blocking quarantine check)."""
    import lzma
    import shutil

    import dagster as dg

    from tests.support.materialize import resources

    src, _ = ingested
    shutil.copytree(src.root, tmp_path, symlinks=True, dirs_exist_ok=True)
    (tmp_path / "raw/zeus/alibaba_groups.csv.xz").write_bytes(lzma.compress(b"group,start_time,end_time,dataset,runtime_ratio\n"))
    definitions = materialized.definitions()
    result = dg.materialize([*(definitions.assets or []), *(definitions.asset_checks or [])], resources=resources(tmp_path),
                            selection=dg.AssetSelection.assets("alibaba_groups", "quarantine/alibaba_groups_bad_rows"), raise_on_error=False)
    (check,) = [e for e in result.get_asset_check_evaluations() if e.check_name == "optional_sources_usable"]
    assert not check.passed and check.severity.value == "WARN"
    assert check.description == "alibaba_groups is empty although zeus/alibaba_groups.csv.xz is present: see quarantine/alibaba_groups_bad_rows"
    assert pl.read_parquet(tmp_path / "assets/quarantine/alibaba_groups_bad_rows.parquet")["reason"].to_list() == ["empty file: header but no data rows"]
    # The quarantine's own check warns, with the count and the most frequent reason (blocking nothing: quarantine_share blocks).
    (quarantined,) = [e for e in result.get_asset_check_evaluations() if e.check_name == "no_rows_quarantined"]
    assert (quarantined.asset_key.to_user_string(), quarantined.passed, quarantined.severity.value) == (
        "quarantine/alibaba_groups_bad_rows", False, "WARN")
    assert quarantined.description == "1 rows quarantined; most frequent reason (1 rows): empty file: header but no data rows"


def test_the_description_of_an_optional_table_names_its_sources() -> None:
    from pipelines.definitions import defs

    specs = {s.key.to_user_string(): s for s in defs().resolve_all_asset_specs()}
    assert "Optional sources, not in the mirror: acme/trace_seren.csv, acme/trace_kalos.csv (under raw/)" in specs["acme_jobs"].description
    assert "Optional sources" not in specs["itp_jobs"].description


def test_ingest_checks_that_guard_downstream_are_blocking() -> None:
    from pipelines.definitions import defs

    specs = {(s.asset_key.to_user_string(), s.name): s for a in defs().assets or [] for s in getattr(a, "check_specs", [])}
    specs |= {(s.asset_key.to_user_string(), s.name): s for c in defs().asset_checks or [] for s in c.check_specs}
    for table in INGESTED:
        assert specs[(table, "quarantine_share")].blocking and specs[(table, "records_accounted")].blocking
    assert specs[("itp_jobs", "published_totals")].blocking
    assert specs[("elasticflow_jobs", "elasticflow_same_jobs_as_itp")].blocking


def test_itp_published_totals(tables) -> None:
    itp = tables["itp_jobs"]
    assert itp.height == 69_351
    assert round(float((itp["duration"] * itp["num_gpu"]).sum()) / 3600, 1) == 1_632_719.7
    assert itp["cluster"].n_unique() == 10
    per_cluster = dict(itp.group_by("cluster").len().iter_rows())
    assert per_cluster["cluster04"] == 15_802 and per_cluster["cluster10"] == 260
    assert itp.schema == {"cluster": pl.String, "job_id": pl.String, "submission_time": pl.Int64, "duration": pl.Int64, "num_gpu": pl.Int64}


def test_elasticflow_has_itp_jobs_and_testbed(tables) -> None:
    ef = tables["elasticflow_jobs"]
    assert ef.height == 69_351 + 195
    assert ef.filter(pl.col("cluster") == "testbed").height == 195
    assert set(ef["model_name"].unique()) == {"resnet50", "vgg16", "inception3", "gpt2", "bert", "deepspeech2"}
    assert ef.filter(pl.col("cluster") != "testbed").join(tables["itp_jobs"], on=["cluster", "job_id", "duration"]).height == 69_351


def test_zeus_traces(tables) -> None:
    train = tables["zeus_train_runs"]
    assert train.height == 3_759
    assert train["target_epoch"].null_count() == 849  # runs that never reached that target ("nan" upstream)
    power = tables["zeus_power_profiles"]
    assert dict(power.group_by("gpu").len().iter_rows()) == {"a40": 453, "p100": 270, "rtx6000": 410, "v100": 476}
    for gpu, limits in PUBLISHED_POWER_LIMITS_W.items():
        assert set(power.filter(pl.col("gpu") == gpu)["power_limit"]) == limits
    row = power.filter((pl.col("gpu") == "v100") & (pl.col("dataset") == "cifar100") & (pl.col("batch_size") == 1024)
                       & (pl.col("optimizer") == "adadelta") & (pl.col("power_limit") == 100))
    assert row["time_per_epoch"].item() == pytest.approx(11.276666666666666, rel=1e-15)


def test_acme_summary_and_optional_sources(tables, ingested) -> None:
    summary = tables["acme_cluster_summary"]
    assert summary["cluster"].to_list() == ["Seren", "Kalos", "Philly", "Helios", "PAI"]
    assert summary.filter(pl.col("cluster") == "Seren")["job_num"].item() == 1_031_550
    assert summary.filter(pl.col("cluster") == "PAI")["complete_rate_gpu"].is_null().all()
    # Not in the mirror: written empty with their full schema, so SQL and downstream assets still work.
    assert tables["acme_jobs"].height == 0 and "gpu_time" in tables["acme_jobs"].columns
    assert tables["alibaba_groups"].height == 0 and "runtime_ratio" in tables["alibaba_groups"].columns
    paths, _ = ingested
    quarantine = pl.concat([pl.read_parquet(p) for p in (paths.assets / "quarantine").glob("*.parquet")])
    assert quarantine.height == 0


def test_tarballs_unpack_into_separate_folders(ingested) -> None:
    paths, _ = ingested
    raw_header = (paths.raw / "itp/raw-traces/cluster01.csv").read_text().splitlines()[0]
    ef_header = (paths.raw / "itp/elasticflow-traces/cluster01.csv").read_text().splitlines()[0]
    assert raw_header == "job_id,submission_time,duration,num_gpu"
    assert ef_header.startswith("job_id,submission_time,num_iteration,model_name")


def test_hetero_profiles(tables) -> None:
    profiles = tables["hetero_gpu_profiles"]
    counts = {(g, w): n for g, w, n in profiles.group_by("gpu", "workload").len().iter_rows()}
    assert counts == {("a10", "cifar100"): 30, ("a10", "imagenet"): 25, ("t4", "cifar100"): 18, ("t4", "imagenet"): 15}
    first = profiles.row(0, named=True)
    assert (first["batch_size"], first["power_limit"], first["energy_j"]) == (32, 300, 23.417000000015832)
