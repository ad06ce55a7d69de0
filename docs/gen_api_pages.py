"""The API pages (``api/*.md``), generated at each build by mkdocs-gen-files from the package itself.

One page per package of the domain layers, lowest layer first: the order of the import-linter layers in
pyproject.toml, less the Dagster wrappers, the orchestration and the commands (not an API). A page is the
package's docstring and members, rendered by mkdocstrings, after a link to its guide; ``api/index.md`` lists them with the first line of
each docstring, and ``api/SUMMARY.md`` is their nav (mkdocs-literate-nav). Nothing here imports the package: the
docstrings are read from the source.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

import mkdocs_gen_files

ROOT = Path(__file__).resolve().parent.parent
#: Packages of the layers that are not an API.
NOT_API = ("pipelines.cli", "pipelines.orchestration", "pipelines.definitions", "pipelines.defs")
#: The guide page of a package, linked from its API page.
GUIDES = {
    "pipelines.home": "getting-started.md#the-data-home", "pipelines.contracts": "tables.md", "pipelines.zeus": "simulator.md",
    "pipelines.sources": "sources.md", "pipelines.sql": "sql.md", "pipelines.ingest": "tables.md", "pipelines.clusters": "clusters.md",
    "pipelines.hetero": "hetero.md", "pipelines.measure": "measure.md", "pipelines.figures": "figures.md",
    "pipelines.report": "own-cluster.md", "pipelines.scaleout": "scaling.md#where-the-tasks-run",
}
#: mkdocstrings options of a page beyond mkdocs.yml's.
OPTIONS = {
    # a contract's columns are class attributes without docstrings: their description= is the doc
    "pipelines.contracts": ["    options:", "      show_if_no_docstring: true"],
}
INDEX_HEAD = """# API

Generated at each build from the docstrings of the domain packages (`docs/gen_api_pages.py`, rendered by
[mkdocstrings](https://mkdocstrings.github.io)), lowest layer first ([Architecture](../architecture.md#layers)).
Each package page shows the package and all its modules; names starting with `_` are left out. The Dagster
wrappers (`pipelines.defs`), the run orchestration (`pipelines.orchestration`) and the command modules
(`pipelines.cli`, see [Command line](../cli.md)) are not part of the API.

| package | what it holds |
|---|---|
"""


def packages() -> Iterator[str]:
    """The domain packages, lowest layer first (the import-linter layers of pyproject.toml, bottom up).

    The package-wide layers contract is the one without ``containers`` (a container's contract orders its modules).
    """
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    (layers,) = (c["layers"] for c in contracts if c["type"] == "layers" and "containers" not in c)
    for layer in reversed(layers):
        for name in (n.strip() for n in layer.split("|")):
            if name not in NOT_API:
                yield name


def first_line(package: str) -> str:
    """The first line of a package's (or module's) docstring, read from its source."""
    path = ROOT.joinpath(*package.split("."))
    source = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    doc = ast.get_docstring(ast.parse(source.read_text()))
    if not doc:
        raise ValueError(f"{source}: no docstring, which its API page starts from")
    return doc.splitlines()[0]


def main() -> None:
    index = [INDEX_HEAD]
    nav = ["* [Overview](index.md)"]
    for package in packages():
        short = package.removeprefix("pipelines.")
        guide = [f"Guide: [{GUIDES[package]}](../{GUIDES[package]})", ""] if package in GUIDES else []
        lines = [f"# {short}", "", *guide, f"::: {package}", *OPTIONS.get(package, [])]
        with mkdocs_gen_files.open(f"api/{short}.md", "w") as page:
            page.write("\n".join(lines) + "\n")
        index.append(f"| [{short}]({short}.md) | {first_line(package)} |\n")
        nav.append(f"* [{short}]({short}.md)")
    with mkdocs_gen_files.open("api/index.md", "w") as page:
        page.write("".join(index))
    with mkdocs_gen_files.open("api/SUMMARY.md", "w") as page:
        page.write("\n".join(nav) + "\n")


main()
