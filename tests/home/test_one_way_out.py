"""One way out (issue 54 item 2): every file a command writes goes through ``pipelines.home.outputs``, which creates a new
regular file or replaces an earlier output of its own kind, and refuses everything else in one line, touching nothing.

The reproductions of the issue, each on a scratch data home: ``--html /dev/stdout`` with stdout redirected to a file
(a link to a regular file: the link was replaced), ``--html victim.csv``, ``--html HOME/figures/...png``, ``sweep
--output HOME/figures/...parquet``, ``--html HOME/gpu-energy-home.toml``, ``--html important/`` and a hard link to the
input. ``-`` writes on stdout.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from pipelines.cli import cli
from pipelines.clusters.example_export import EXPORT_FILE, write_export
from pipelines.clusters.sweep import TABLE
from pipelines.contracts.sweep import ZeusKnobGrid
from pipelines.home.atomic import write_parquet_atomic
from pipelines.home.outputs import OutputKind, OutputRefused, check_output, write_output
from pipelines.measure.harness import PROFILE_FILE, write_profile
from pipelines.measure.zeus_json import ZEUS_PROFILE_FILE, write_zeus_profiles
from pipelines.report.html import REPORT
from tests.support.measured_profiles import profile_rows

#: A report's first line as every ``whatif --html`` page starts (typed here, not taken from the package).
REPORT_HEAD = ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" '
               "content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'\">")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    root = tmp_path / "home"
    for folder in ("assets", "raw/clusters", "figures"):
        (root / folder).mkdir(parents=True)
    (root / "gpu-energy-home.toml").write_text("# data home\n")
    (root / "figures" / "acme_cluster_stats.png").write_bytes(b"\x89PNG figure")
    (root / "figures" / "acme_cluster_stats.parquet").write_bytes(b"PAR1 figure data PAR1")
    return root


def _refused(path: str | Path, home: Path, kind: OutputKind = REPORT, **kw: object) -> str:
    with pytest.raises(OutputRefused) as refused:
        check_output(path, "--html", home, kind=kind, **kw)  # type: ignore[arg-type]  # inputs/allowed passed through
    message = str(refused.value)
    assert "\n" not in message
    return message


def test_the_issues_paths_are_refused_and_left_as_they_were(home: Path, tmp_path: Path) -> None:
    out_txt = tmp_path / "out.txt"
    out_txt.write_text("redirected stdout\n")
    stdout_link = tmp_path / "stdout"
    stdout_link.symlink_to(out_txt)  # what /dev/stdout is with `> out.txt`: a link to a regular file
    victim = tmp_path / "victim.csv"
    victim.write_text("a,b\n1,2\n")
    important = tmp_path / "important"
    important.write_text("keep me\n")
    export = tmp_path / "x.sacct"
    export.write_text("JobID|State\n")
    hard = tmp_path / "hard.html"
    os.link(export, hard)
    before = {p: p.read_bytes() for p in (out_txt, victim, important, export, *home.rglob("*")) if p.is_file()}

    assert "is a symbolic link" in _refused(stdout_link, home)
    assert "ends in /" in _refused(f"{important}/", home)
    assert "exists and is not a whatif HTML report" in _refused(victim, home)
    assert "only the pipeline writes" in _refused(home / "figures" / "acme_cluster_stats.png", home)
    assert "only the pipeline writes" in _refused(home / "figures" / "acme_cluster_stats.parquet", home, TABLE)
    assert "the data home's marker" in _refused(home / "gpu-energy-home.toml", home)
    assert "has 1 other hard link(s)" in _refused(hard, home, inputs=[export])
    assert "is an input of this command" in _refused(victim, home, inputs=[victim])
    dangling = tmp_path / "dangling.html"
    dangling.symlink_to(tmp_path / "nowhere.html")
    assert "is a symbolic link" in _refused(dangling, home)
    assert not (tmp_path / "nowhere.html").exists()
    assert stdout_link.is_symlink() and os.readlink(stdout_link) == str(out_txt)
    assert {p: p.read_bytes() for p in before} == before


def test_earlier_outputs_of_the_same_kind_are_recognised_by_content(home: Path, tmp_path: Path) -> None:
    report = tmp_path / "r.html"
    report.write_text(REPORT_HEAD + "<title>earlier</title>")
    assert check_output(report, "--html", home, kind=REPORT).path == report
    other_page = tmp_path / "page.html"
    other_page.write_text('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>mine</title>')
    assert "not a whatif HTML report" in _refused(other_page, home)

    columns = ZeusKnobGrid.column_names()
    sweep_table = write_parquet_atomic(pl.DataFrame({c: [1] for c in columns}), tmp_path / "grid.parquet")
    assert check_output(sweep_table, "--output", home, kind=TABLE).path == sweep_table
    other_table = write_parquet_atomic(pl.DataFrame({c: [1] for c in columns[:-1]}), tmp_path / "other.parquet")
    assert "not a sweep table" in _refused(other_table, home, TABLE)
    fake = tmp_path / "fake.parquet"
    fake.write_bytes(b"PAR1 not a footer")
    assert "not a sweep table" in _refused(fake, home, TABLE)

    for name, kw in (("lab.sacct", {}), ("lab.sacct.gz", {"energy": "measured", "parsable": True, "delimiter": ";"})):
        export = tmp_path / name
        write_export(export, 5, seed=1, **kw)  # type: ignore[arg-type]  # keyword options of write_export
        assert check_output(export, "FILE", home, kind=EXPORT_FILE).path == export
    not_generated = tmp_path / "real.sacct.gz"
    not_generated.write_bytes(gzip.compress(b"JobID|JobName|State\n1|x|COMPLETED\n"))
    assert "not a generated sacct export" in _refused(not_generated, home, EXPORT_FILE)

    rows = profile_rows()
    csv = write_profile(rows, tmp_path / "lab.csv")
    assert check_output(csv, "--out", home, kind=PROFILE_FILE).path == csv
    other_csv = tmp_path / "other.csv"
    other_csv.write_text("dataset,network\n")
    assert "not a measured profile" in _refused(other_csv, home, PROFILE_FILE)
    for zeus_json in write_zeus_profiles(rows, csv):
        assert check_output(zeus_json, "--out", home, kind=ZEUS_PROFILE_FILE).path == zeus_json
        assert "not a whatif HTML report" in _refused(zeus_json, home)


def test_a_link_put_in_place_after_the_check_is_refused_at_the_rename(home: Path, tmp_path: Path) -> None:
    target = tmp_path / "r.html"
    output = check_output(target, "--html", home, kind=REPORT)
    precious = tmp_path / "precious.txt"
    precious.write_text("mine\n")
    target.symlink_to(precious)
    with pytest.raises(OutputRefused, match="is a symbolic link"):
        write_output(output, (REPORT_HEAD + "new").encode())
    assert target.is_symlink() and precious.read_text() == "mine\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp_")] == []


def test_dash_is_stdout(home: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    output = check_output("-", "--html", home, kind=REPORT)
    assert output.is_stdout
    assert write_output(output, b"<page>") is None
    assert capsysbinary.readouterr().out == b"<page>"


def test_example_export_to_stdout_and_over_its_own_earlier_file_only(home: Path, tmp_path: Path) -> None:
    env = {"GPU_ENERGY_HOME": str(home)}
    runner = CliRunner()
    done = runner.invoke(cli, ["example-export", "-", "--allocations", "5", "--seed", "3"], env=env)
    assert done.exit_code == 0, done.output
    peer = tmp_path / "peer.sacct"
    truth = write_export(peer, 5, seed=3)
    assert done.stdout_bytes == peer.read_bytes()
    assert json.loads(done.stderr.splitlines()[0])["lines"] == truth.lines
    again = runner.invoke(cli, ["example-export", str(peer), "--allocations", "7"], env=env)
    assert again.exit_code == 0, again.output
    assert len(peer.read_text().splitlines()) > truth.lines  # the earlier export replaced
    victim = tmp_path / "victim.csv"
    victim.write_text("a,b\n")
    link = tmp_path / "stdout"
    link.symlink_to(victim)
    for path, why in ((victim, "exists and is not a generated sacct export"), (link, "is a symbolic link"),
                      (home / "figures" / "x.sacct", "only the pipeline writes")):
        refused = runner.invoke(cli, ["example-export", str(path), "--allocations", "5"], env=env)
        assert refused.exit_code == 2 and refused.stdout == "" and why in refused.stderr, refused.output
        assert len(refused.stderr.splitlines()) == 1
    assert victim.read_text() == "a,b\n" and link.is_symlink()
    assert not (home / "figures" / "x.sacct").exists()


def test_sweep_and_measure_refuse_a_link_and_a_trailing_slash_before_any_work(home: Path, tmp_path: Path) -> None:
    env = {"GPU_ENERGY_HOME": str(home)}
    out_txt = tmp_path / "out.txt"
    out_txt.write_text("kept\n")
    link = tmp_path / "stdout"
    link.symlink_to(out_txt)
    (tmp_path / "important").write_text("kept\n")
    cases = [
        (["sweep", "--scheduler", "none", "--output", str(link)], "is a symbolic link"),
        (["sweep", "--scheduler", "none", "--output", str(home / "figures" / "acme_cluster_stats.parquet")], "only the pipeline writes"),
        (["sweep", "--scheduler", "none", "--output", f"{tmp_path / 'important'}/"], "ends in /"),
        (["measure", "profile", "--workload", "cifar100", "--batch-sizes", "32", "--out", str(link)], "is a symbolic link"),
        (["measure", "profile", "--workload", "cifar100", "--batch-sizes", "32", "--out", str(out_txt)], "exists and is not a measured profile"),
    ]
    for args, why in cases:
        done = CliRunner().invoke(cli, args, env=env)
        assert done.exit_code == 2 and why in done.output, done.output
        assert done.output.strip().splitlines()[-1].startswith("Error: ")
    assert out_txt.read_text() == "kept\n" and (tmp_path / "important").read_text() == "kept\n" and link.is_symlink()
    assert (home / "figures" / "acme_cluster_stats.parquet").read_bytes() == b"PAR1 figure data PAR1"


def test_whatif_html_refusals_are_one_line_before_any_work(home: Path, tmp_path: Path) -> None:
    env = {"GPU_ENERGY_HOME": str(home)}
    export = tmp_path / "x.sacct"
    write_export(export, 5, seed=1)
    victim = tmp_path / "victim.csv"
    victim.write_text("a,b\n")
    link = tmp_path / "stdout"
    link.symlink_to(victim)
    hard = tmp_path / "hard.html"
    os.link(export, hard)
    for args, why in (([str(victim)], "exists and is not a whatif HTML report"), ([str(link)], "is a symbolic link"),
                      ([str(home / "gpu-energy-home.toml")], "the data home's marker"), ([f"{tmp_path}/important/"], "ends in /"),
                      ([str(hard)], "other hard link"), (["-", "--json"], "--html - and --json both print on stdout")):
        done = CliRunner().invoke(cli, ["whatif", str(export), "--html", *args], env=env)
        assert done.exit_code == 2 and done.stdout == "" and len(done.stderr.splitlines()) == 1 and why in done.stderr, done.output
    assert victim.read_text() == "a,b\n" and link.is_symlink() and (home / "gpu-energy-home.toml").read_text() == "# data home\n"


@pytest.mark.slow
def test_whatif_html_to_stdout_and_over_an_earlier_report(home: Path, tmp_path: Path, mirror: Path) -> None:
    env = {"GPU_ENERGY_HOME": str(home)}
    export = tmp_path / "x.sacct"
    write_export(export, 60, seed=2, span_days=1)
    common = ["whatif", str(export), "--trace-dir", str(mirror / "zeus"), "--samples", "1", "--no-progress", "--scheduler", "none"]
    to_stdout = CliRunner().invoke(cli, [*common, "--html", "-"], env=env)
    assert to_stdout.exit_code == 0, to_stdout.output
    assert to_stdout.stdout.startswith(REPORT_HEAD) and to_stdout.stdout.rstrip().endswith("</html>")
    assert f"What if Zeus had tuned {export.name}" in to_stdout.stderr  # the text report moved to stderr
    earlier = tmp_path / "r.html"
    earlier.write_text(REPORT_HEAD + "<title>earlier</title>")
    again = CliRunner().invoke(cli, [*common, "--html", str(earlier)], env=env)
    assert again.exit_code == 0, again.output
    assert earlier.read_text().startswith(REPORT_HEAD) and "<title>earlier</title>" not in earlier.read_text()
