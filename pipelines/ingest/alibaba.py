"""The Zeus artifact's Alibaba recurring-job groups (alibaba_groups.csv.xz)."""

from __future__ import annotations

from pathlib import Path

from pipelines.contracts.sources import AlibabaGroups
from pipelines.ingest.common import IngestResult, TableSpec, ingest_files

__all__ = ["ALIBABA_SPEC", "read_groups"]

ALIBABA_SPEC = TableSpec(
    "alibaba_groups", AlibabaGroups, {c: c for c in ("group", "start_time", "end_time", "dataset", "runtime_ratio")}
)


def read_groups(path: Path) -> IngestResult:
    """alibaba_groups.csv(.xz) -> ``alibaba_groups`` (xz streamed under the bound on a table read whole:
    ``pipelines.ingest.text_reader.read_bytes``)."""
    return ingest_files([(path, path.name)], ALIBABA_SPEC)
