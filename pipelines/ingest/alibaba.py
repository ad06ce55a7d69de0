"""The Zeus artifact's Alibaba recurring-job groups (alibaba_groups.csv.xz)."""

from __future__ import annotations

import lzma
from pathlib import Path

from pipelines.contracts.sources import AlibabaGroups
from pipelines.ingest.common import IngestError, IngestResult, TableSpec, ingest_files

ALIBABA_SPEC = TableSpec(
    "alibaba_groups", AlibabaGroups, {c: c for c in ("group", "start_time", "end_time", "dataset", "runtime_ratio")}
)


def read_compressed(path: Path) -> bytes:
    """The bytes of a file, decompressed when it ends in ``.xz``; a corrupt stream raises ``IngestError``."""
    if path.suffix != ".xz":
        return path.read_bytes()
    try:
        return lzma.decompress(path.read_bytes())
    except (lzma.LZMAError, EOFError) as exc:
        raise IngestError(path.name, f"truncated or corrupt xz stream: {exc}") from exc


def read_groups(path: Path) -> IngestResult:
    """alibaba_groups.csv(.xz) -> ``alibaba_groups``."""
    return ingest_files([(path, path.name)], ALIBABA_SPEC, reader=read_compressed)
