"""The commands of the README and of the docs pages work as written: every ``python -m pipelines`` line
parses, the cheap ones run.

Commands are read from the ``sh`` blocks of README.md and of every page under docs/ at test time,
so a new or changed command is checked without editing this file; a command shown on several
pages runs once. Each one is parsed by the real click command tree (options, types, choices);
those that need no GPU and no long materialization are also run, in a data home holding the
ingested tables plus one cluster partition, with the working directory at that home and its
``sql`` linked to the repository's, so relative paths (``raw/zeus2/...``, ``sql/examples/...``)
resolve as in a clone; the ``whatif`` examples read a small generated ``mycluster.sacct`` there.
A command naming a GPU that is not in the published traces (one you would measure first), or
needing Slurm (``--scheduler slurm``), is parsed only.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import click
import polars as pl
import pytest
from click.testing import CliRunner, Result

from pipelines.cli import cli
from pipelines.home.paths import REPO_ROOT, ProjectPaths
from pipelines.vocabulary import PUBLISHED_GPUS
from tests.support import grid_examples
from tests.support.materialize import INGEST, Homes, Step
from tests.support.sacct_export import write_export

README = REPO_ROOT / "README.md"
DOCS = REPO_ROOT / "docs"
#: Every page whose commands are checked: the README, then the docs pages in path order.
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
PREFIXES = (".venv/bin/python -m pipelines", "gpu-energy")
#: Subcommands run for real; the others (fetch, materialize, measure profile on a GPU, ...) are parsed only.
RUN = ("sql", "simulate single", "hetero", "measure devices", "whatif", "power-limit")
FORMATS = ("table", "csv", "json")
#: The Zeus log docs/measure.md's example copies into raw/measured (mirror as in tests/conftest.py).
ZEUS_LOG = REPO_ROOT.parent / "shared/traces/zeus/profile_data/V100+bert-base-uncased+gpu0.csv"
#: The README holds the quick start and links every page of docs/; the rest is in docs/ (issue 22).
README_MAX_LINES = 200


def page_commands(page: Path) -> list[list[str]]:
    """Every ``.venv/bin/python -m pipelines ...`` or ``gpu-energy ...`` command of the sh blocks of ``page``.

    Returned as argv after the program name; lines joined at ``\\``, split at ``&&``, leading
    ``VAR=value`` assignments dropped.
    """
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", page.read_text(), flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            for part in line.split("&&"):
                words = shlex.split(part, comments=True)
                while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
                    words = words[1:]
                text = " ".join(words)
                for prefix in PREFIXES:
                    if text == prefix or text.startswith(prefix + " "):
                        commands.append(words[len(prefix.split()):])
    return commands


def documented_commands() -> list[tuple[str, list[str]]]:
    """(page, argv) of every distinct command of the README and the docs pages, from the first page showing it."""
    seen: dict[tuple[str, ...], str] = {}
    for page in PAGES:
        for argv in page_commands(page):
            seen.setdefault(tuple(argv), page.relative_to(REPO_ROOT).as_posix())
    return [(page, list(argv)) for argv, page in seen.items()]


def _leaf(argv: list[str]) -> tuple[click.Command, list[str], str]:
    """The (sub)command ``argv`` names, the arguments left for it, and its path (``simulate single``)."""
    command: click.Command = cli
    ctx = click.Context(cli, info_name="pipelines")
    names: list[str] = []
    while isinstance(command, click.Group) and argv and not argv[0].startswith("-"):
        sub = command.get_command(ctx, argv[0])
        assert sub is not None, f"no such command: {' '.join([*names, argv[0]])}"
        names.append(argv[0])
        command, argv = sub, argv[1:]
    return command, argv, " ".join(names)


def _readme_files(paths: ProjectPaths) -> None:
    """What the README's commands read besides the assets: the repository's sql/, the whatif example's export, its grid and
    price files, and the Zeus log of docs/measure.md's power-limit example."""
    if not (paths.root / "sql").exists():
        (paths.root / "sql").symlink_to(REPO_ROOT / "sql")
    write_export(paths.root / "mycluster.sacct", 300, seed=1)  # the README's whatif example file
    grid_examples.write_all(paths.root)  # docs/own-cluster.md's grid and price files as downloaded
    paths.measured.mkdir(parents=True, exist_ok=True)
    shutil.copy(ZEUS_LOG, paths.measured / ZEUS_LOG.name)


@pytest.fixture(scope="module")
def home(materialized: Homes) -> ProjectPaths:
    """The ingested data home plus hetero allocations and the ITP x V100 cluster partition (replay, summary, power)."""
    built = materialized(
        Step(["hetero_allocations"]),
        Step(["cluster_workload_jobs", "cluster_capacity"], "itp"),
        Step(["zeus_cluster_history", "zeus_cluster_summary", "cluster_power", "cluster_power_summary"], "v100|itp"),
        base=materialized(INGEST), prepare=_readme_files, traces=["itp"], name="readme",
    )
    assert all(result.success for result in built.results)
    return built.paths


def run(home: ProjectPaths, argv: list[str]) -> Result:
    """``python -m pipelines ARGV`` in the data home, in this process: the same command objects as the console's, without
    a Python start-up each (the commands that must run as their own process have tests of their own)."""
    with contextlib.chdir(home.root):
        return CliRunner().invoke(cli, argv, prog_name="python -m pipelines", env={"GPU_ENERGY_HOME": str(home.root)},
                                  catch_exceptions=False)


def test_the_docs_have_commands_of_every_kind() -> None:
    paths = {_leaf(argv)[2] for _, argv in documented_commands()}
    assert {"sql", "simulate single", "simulate groups", "hetero", "measure profile", "whatif", "sweep", "materialize"} <= paths
    assert {page for page, _ in documented_commands()} >= {"README.md", "docs/sql.md", "docs/own-cluster.md"}


def test_the_readme_is_short_and_links_every_docs_page() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= README_MAX_LINES
    linked = set(re.findall(r"\]\((docs/[^)#]+\.md)", text))
    pages = {p.relative_to(REPO_ROOT).as_posix() for p in DOCS.glob("*.md")}
    assert pages <= linked, f"pages the README does not link: {sorted(pages - linked)}"


@pytest.mark.parametrize(("page", "argv"), documented_commands(), ids=lambda v: v if isinstance(v, str) else " ".join(v)[:60])
def test_documented_command_parses_and_the_cheap_ones_run(home: ProjectPaths, page: str, argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    command, args, path = _leaf(list(argv))
    monkeypatch.chdir(home.root)  # relative paths are checked where the command runs
    command.make_context(path, list(args))  # raises on an unknown option, a bad value or a missing file
    gpus = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--gpu"]
    slurm = "slurm" in [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--scheduler"]  # no Slurm here: parsed only
    if path in RUN and set(gpus) <= set(PUBLISHED_GPUS) and not slurm:
        if path == "whatif" and "--samples" not in args:  # the draws' count only lengthens the run: 20 by default, 2 s each
            argv = [*argv, "--samples", "2"]
        done = run(home, argv)
        assert done.exit_code == 0, f"{page}: {' '.join(argv)}: {done.stderr}"
        assert done.stdout.strip(), f"{page}: {' '.join(argv)} printed nothing"


def _help_paths(command: click.Command, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [path]
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None
            out += _help_paths(sub, (*path, name))
    return out


@pytest.mark.parametrize("path", _help_paths(cli), ids=lambda p: " ".join(p) or "(top)")
def test_every_help_page(home: ProjectPaths, path: tuple[str, ...]) -> None:
    done = run(home, [*path, "--help"])
    assert done.exit_code == 0, done.stderr
    assert done.stdout.startswith(f"Usage: python -m pipelines {' '.join(path)}".rstrip())


@pytest.mark.parametrize("example", sorted((REPO_ROOT / "sql" / "examples").glob("*.sql")), ids=lambda p: p.stem)
def test_every_sql_example_in_every_format(home: ProjectPaths, example: Path) -> None:
    rows = {}
    for fmt in FORMATS:
        done = run(home, ["sql", "--format", fmt, "--file", str(example)])
        assert done.exit_code == 0, f"{example.name} --format {fmt}: {done.stderr}"
        rows[fmt] = done.stdout
    csv = pl.read_csv(rows["csv"].encode()) if rows["csv"].strip() else pl.DataFrame()
    data = pl.read_json(rows["json"].encode()) if rows["json"].strip() != "[]" else pl.DataFrame()
    assert csv.height == data.height
    assert csv.columns == data.columns or csv.height == 0


@pytest.mark.slow
def test_make_sql_takes_a_here_doc(home: ProjectPaths) -> None:
    env = {**os.environ, "GPU_ENERGY_HOME": str(home.root)}
    done = subprocess.run(
        ["make", "-s", "sql"], input="select count(*) as n from itp_jobs;\n", capture_output=True, text=True, env=env,
        cwd=REPO_ROOT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "69351" in done.stdout
