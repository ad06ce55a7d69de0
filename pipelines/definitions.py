"""The Dagster code location: every module of ``pipelines/defs`` (assets, checks, resources, sensors).

Loaded by Dagster's defs-folder loader (``ComponentTree``, what ``dg.load_from_defs_folder`` uses),
with the project root given explicitly (this package's folder) instead of found through
pyproject.toml, so the same code location loads from an installed wheel, where there is none.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import dagster as dg

from pipelines import defs as defs_package


@dg.definitions
def defs() -> dg.Definitions:
    tree = dg.ComponentTree.from_module(defs_module=defs_package, project_root=Path(__file__).resolve().parent)
    with warnings.catch_warnings():
        # The loader calls Dagster's own preview module loaders; dg.load_from_defs_folder silences the same warnings.
        warnings.simplefilter("ignore", dg.PreviewWarning)
        return tree.build_defs()
