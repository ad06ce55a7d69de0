"""uv.lock agrees with pyproject.toml: `make setup` installs with `uv sync --locked`, which refuses a stale lock.

The check is decided from the two files alone, with no package cache and no network, so it holds on a fresh machine:
uv records the project's own requirements in the lock (`[package.metadata] requires-dist` and `provides-extras` of the
project's `[[package]]`, and the lock's top-level `requires-python`), which is what `uv lock --check` compares with
pyproject.toml before it resolves anything. A lock made from other requirements is stale; one made from these is the
one `uv lock` writes, since the lock is only rewritten when they change (tests/home/test_lock.py in the README).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from pipelines.home.paths import REPO_ROOT

# One requirement as uv records it: (normalized name, sorted extras, sorted specifiers, marker or "").
Entry = tuple[str, tuple[str, ...], tuple[str, ...], str]


def _entry(name: str, extras: list[str] | set[str], specifier: str, marker: str) -> Entry:
    specs = tuple(sorted(s.strip() for s in specifier.split(",") if s.strip()))
    return canonicalize_name(name), tuple(sorted(extras)), specs, marker


def _declared(pyproject: dict) -> tuple[set[Entry], set[str], str]:
    """The requirements pyproject.toml declares, each optional one with its extra folded into its marker."""
    project = pyproject["project"]
    entries: set[Entry] = set()
    groups: list[tuple[str | None, list[str]]] = [(None, project.get("dependencies", []))]
    groups += list(project.get("optional-dependencies", {}).items())
    for extra, requirements in groups:
        for text in requirements:
            req = Requirement(text)
            markers = [str(req.marker)] if req.marker else []
            if extra is not None:
                markers.append(f"extra == '{canonicalize_name(extra)}'")
            entries.add(_entry(req.name, req.extras, str(req.specifier), " and ".join(markers)))
    extras = {str(canonicalize_name(e)) for e in project.get("optional-dependencies", {})}
    return entries, extras, project["requires-python"]


def _locked(lock: dict, project_name: str) -> tuple[set[Entry], set[str], str]:
    """The requirements uv.lock was made from: the project's own package entry."""
    (package,) = [p for p in lock["package"] if canonicalize_name(p["name"]) == canonicalize_name(project_name)]
    metadata = package.get("metadata", {})
    entries = {_entry(r["name"], r.get("extras", []), r.get("specifier", ""), r.get("marker", ""))
               for r in metadata.get("requires-dist", [])}
    extras = {str(canonicalize_name(e)) for e in metadata.get("provides-extras", [])}
    return entries, extras, lock["requires-python"]


def stale_lock_reasons(pyproject_path: Path, lock_path: Path) -> list[str]:
    """Why uv.lock was not made from pyproject.toml's requirements: one line each, empty when it was."""
    pyproject = tomllib.loads(pyproject_path.read_text())
    declared, declared_extras, declared_python = _declared(pyproject)
    locked, locked_extras, locked_python = _locked(tomllib.loads(lock_path.read_text()), pyproject["project"]["name"])
    reasons = [f"pyproject.toml asks for {_show(e)}, uv.lock was made without it" for e in sorted(declared - locked)]
    reasons += [f"uv.lock was made with {_show(e)}, pyproject.toml no longer asks for it" for e in sorted(locked - declared)]
    if declared_extras != locked_extras:
        reasons.append(f"extras: pyproject.toml {sorted(declared_extras)}, uv.lock {sorted(locked_extras)}")
    if declared_python != locked_python:
        reasons.append(f"requires-python: pyproject.toml {declared_python!r}, uv.lock {locked_python!r}")
    return reasons


def _show(entry: Entry) -> str:
    name, extras, specs, marker = entry
    extra = f"[{','.join(extras)}]" if extras else ""
    return f"{name}{extra}{','.join(specs)}" + (f" ; {marker}" if marker else "")


def _stale_copy(tmp_path: Path, old: str, new: str) -> Path:
    text = (REPO_ROOT / "pyproject.toml").read_text()
    assert text.count(old) == 1, old
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(text.replace(old, new))
    return pyproject


def test_the_committed_lock_matches_pyproject() -> None:
    reasons = stale_lock_reasons(REPO_ROOT / "pyproject.toml", REPO_ROOT / "uv.lock")
    assert reasons == [], "uv.lock is out of date with pyproject.toml (run `.venv/bin/uv lock` and commit it):\n" + "\n".join(reasons)


def test_the_lock_records_every_requirement_of_pyproject() -> None:
    # The check compares something: the lock's record holds as many requirements as pyproject.toml declares (each
    # one once per group: ruff stands in two extras).
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    project = pyproject["project"]
    count = len(project["dependencies"]) + sum(len(v) for v in project["optional-dependencies"].values())
    locked, extras, _ = _locked(tomllib.loads((REPO_ROOT / "uv.lock").read_text()), project["name"])
    assert len(locked) == count >= 40
    assert extras == {"test", "slurm", "measure", "lint", "docs", "dev"}


@pytest.mark.parametrize(("old", "new", "expected"), [
    # A dependency dropped, a version changed, a bound widened, an extra's requirement added, an extra added.
    ('"seaborn==0.13.2",', "", "uv.lock was made with seaborn==0.13.2, pyproject.toml no longer asks for it"),
    ('"seaborn==0.13.2",', '"seaborn==0.13.1",', "pyproject.toml asks for seaborn==0.13.1, uv.lock was made without it"),
    ('"polars>=2.1,<3",', '"polars>=2.1,<4",', "pyproject.toml asks for polars<4,>=2.1, uv.lock was made without it"),
    ('slurm = ["dask-jobqueue==0.9.0"]', 'slurm = ["dask-jobqueue==0.9.0", "tqdm"]',
     "pyproject.toml asks for tqdm ; extra == 'slurm', uv.lock was made without it"),
    ('measure = ["torch==2.13.0"]', 'measure = ["torch==2.13.0"]\ngpu = []', "extras: pyproject.toml"),
    ('requires-python = ">=3.11"', 'requires-python = ">=3.12"', "requires-python: pyproject.toml '>=3.12'"),
])
def test_the_check_fails_for_a_stale_lock(tmp_path: Path, old: str, new: str, expected: str) -> None:
    reasons = stale_lock_reasons(_stale_copy(tmp_path, old, new), REPO_ROOT / "uv.lock")
    assert any(r.startswith(expected) for r in reasons), reasons


def test_the_check_ignores_what_does_not_change_the_requirements(tmp_path: Path) -> None:
    # Reordered bounds, spaces and a comment are the same requirement: no reason to relock.
    pyproject = _stale_copy(tmp_path, '"polars>=2.1,<3",', '"polars <3, >=2.1",  # reordered')
    assert stale_lock_reasons(pyproject, REPO_ROOT / "uv.lock") == []
