"""Raw and ingest assets of every trace family, built the same way (the per-family modules call these).

A raw asset fetches a family's upstream files (mirror or URL, sha256-verified). An ingest asset
writes one validated table and its quarantine. Every ingest first verifies what it reads
(``pipelines.sources.fetch``: the pinned hashes, and every unpacked tarball member against its
manifest, restoring what differs), then carries blocking checks: the quarantined share, every
source record accounted for, and the published facts a trace has (``TableCheck``). A failed
blocking check fails the step and keeps everything downstream from running on the table.
"""

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg
import polars as pl

from pipelines.contracts.registry import quarantine_key
from pipelines.defs.shared import quarantine
from pipelines.defs.shared.io_manager import PathsResource
from pipelines.defs.shared.metadata import column_schema, contract_metadata
from pipelines.defs.shared.table_assets import FOLLOW
from pipelines.home.paths import ProjectPaths, default_mirror
from pipelines.ingest.common import IngestResult, TableSpec, empty_quarantine, empty_table
from pipelines.sources.fetch import FetchResult, fetch, missing_message
from pipelines.sources.manifest import SOURCES, SOURCES_BY_NAME, Source

#: A table is blocked from flowing downstream when more than this share of its rows is quarantined.
MAX_QUARANTINE_SHARE = 0.001


def raw_asset(name: str, family: str, description: str) -> dg.AssetsDefinition:
    sources = [s for s in SOURCES if s.name.startswith(f"{family}/")]

    @dg.asset(name=name, group_name="raw", description=description, kinds={"file"})
    def _fetch(context: dg.AssetExecutionContext, paths: PathsResource) -> dg.MaterializeResult:
        results: list[FetchResult] = []
        for source in sources:
            result = fetch(source, paths.paths(), default_mirror(), warn=context.log.warning)
            if not result.available:
                context.log.warning(result.message)
            else:
                context.log.info(f"{source.name}: {result.status.value} (sha256 {result.sha256})")
            results.append(result)
        table = "\n".join(
            f"| {r.source.name} | {r.status.value} | {r.sha256 or '-'} | {r.source.license} |" for r in results
        )
        return dg.MaterializeResult(
            metadata={
                "files": dg.MetadataValue.md("| file | status | sha256 | license |\n|---|---|---|---|\n" + table),
                "missing": dg.MetadataValue.json([r.source.name for r in results if not r.available]),
                "replaced_or_restored": dg.MetadataValue.json([n for r in results for n in r.notes]),
            }
        )

    return _fetch


@dataclass(frozen=True)
class CheckOutcome:
    passed: bool
    description: str
    metadata: dict[str, Any]


@dataclass(frozen=True)
class TableCheck:
    """A published invariant of one table, evaluated on the ingested frame."""

    name: str
    description: str
    evaluate: Callable[[pl.DataFrame], CheckOutcome]
    severity: dg.AssetCheckSeverity = dg.AssetCheckSeverity.ERROR
    #: A failure keeps the assets downstream of the table from running (ERROR severity only).
    blocking: bool = False


def _missing_optional(paths: ProjectPaths, names: Sequence[str]) -> list[Source]:
    return [s for s in SOURCES if s.name in names and not s.raw_path(paths).exists()]


def verify_sources(context: dg.AssetExecutionContext, project: ProjectPaths, names: Sequence[str]) -> list[str]:
    """Re-verify the files a table reads before it reads them (pinned sha256, unpacked members against their
    manifest), restoring what differs from the mirror or the archive; returns what was replaced or restored."""
    notes: list[str] = []
    for name in names:
        notes.extend(fetch(SOURCES_BY_NAME[name], project, default_mirror(), download=False, warn=context.log.warning).notes)
    return notes


def ingest_asset(
    spec: TableSpec,
    *,
    description: str,
    raw: dg.AssetsDefinition,
    read: Callable[[ProjectPaths], IngestResult | None],
    sources: Sequence[str] = (),
    optional_sources: Sequence[str] = (),
    checks: Sequence[TableCheck] = (),
    extra_metadata: Callable[[ProjectPaths], dict[str, str]] | None = None,
    max_quarantine_share: float = MAX_QUARANTINE_SHARE,
) -> dg.AssetsDefinition:
    """A multi-asset writing ``<table>`` and its quarantine ``quarantine/<table>_bad_rows``, with blocking checks of the quarantined
    share and of the record accounting (table + quarantine = records counted in the files).

    ``extra_metadata`` adds to the table's materialization what it returns for the data home (read
    before the files are, so it describes no newer state than the table's). ``max_quarantine_share``
    is the share of quarantined records the blocking check allows (0: any quarantined record blocks).

    ``sources`` (names in ``pipelines.sources.SOURCES``) are verified, and restored if need be,
    before ``read`` runs. ``read`` returns None when its optional sources are missing: the table is
    then written empty. An absent optional source is the default install's state, not a fault, but
    the table lacks its rows: the asset's description names the files, each materialization's
    ``optional_sources`` metadata says which are absent and where to put them, and the check
    ``optional_sources_usable`` fails with WARN severity (never blocking) while one is absent, or
    when one is present but the table still has no row, and says which and why.
    """
    table = spec.table
    quarantined = dg.AssetKey.from_user_string(quarantine_key(table))
    check_specs = [
        quarantine.spec(quarantined),
        dg.AssetCheckSpec(
            "quarantine_share",
            asset=table,
            blocking=True,
            description=f"At most {max_quarantine_share:.1%} of the source rows are quarantined.",
        ),
        dg.AssetCheckSpec(
            "records_accounted",
            asset=table,
            blocking=True,
            description="Every record of the source files (counted from their bytes) is in the table or the quarantine.",
        ),
        *[dg.AssetCheckSpec(c.name, asset=table, blocking=c.blocking, description=c.description) for c in checks],
    ]
    if optional_sources:
        names = ", ".join(optional_sources)
        description += (f" Optional sources, not in the mirror: {names} (under raw/); while they are absent the table is empty "
                        "by design, and the materialization's optional_sources metadata says where to put them.")
        check_specs.append(
            dg.AssetCheckSpec(
                "optional_sources_usable",
                asset=table,
                description=f"Every optional source ({names}) is present and {table} has rows. Warns when one is absent, as in "
                "the default install (the mirror has none of them: the table lacks their rows until they are supplied), or "
                "present but yielding no row.",
            )
        )

    @dg.multi_asset(
        name=f"ingest_{table}",
        outs={
            table: dg.AssetOut(
                key=dg.AssetKey(table),
                group_name="ingest",
                description=description,
                metadata={"dagster/column_schema": column_schema(spec.model)},
                kinds={"polars", "parquet"},
                automation_condition=FOLLOW,
            ),
            "quarantine": dg.AssetOut(
                key=quarantined,
                group_name="quarantine",
                description=f"Rows of {table}'s sources that failed parsing or validation: file, line, column, reason, raw line.",
                metadata=contract_metadata(quarantine_key(table)),
                kinds={"polars", "parquet"},
                automation_condition=FOLLOW,
            ),
        },
        deps=[raw],
        check_specs=check_specs,
    )
    def _ingest(context: dg.AssetExecutionContext, paths: PathsResource) -> Iterator[dg.Output | dg.AssetCheckResult]:
        project = paths.paths()
        extra = extra_metadata(project) if extra_metadata else {}
        restored = verify_sources(context, project, [*sources, *optional_sources])
        result = read(project)
        missing = _missing_optional(project, optional_sources)
        for source in missing:
            context.log.info(f"{table}: optional source {source.name} absent; put it at {source.raw_path(project)} ({source.url})")
        if result is None:
            result = IngestResult(empty_table(spec), empty_quarantine())
        share = result.quarantined_share
        if result.quarantine.height:
            context.log.warning(f"{table}: {result.quarantine.height} rows quarantined ({share:.4%})")
        yield dg.Output(
            result.table,
            output_name=table,
            metadata={
                "quarantined_rows": result.quarantine.height,
                "quarantined_share": float(share),
                "source_files": dg.MetadataValue.json(result.files),
                "source_records": result.lines_in,
                **({"optional_sources": dg.MetadataValue.md(_optional_sources_table(project, optional_sources, missing))}
                   if optional_sources else {}),
                "replaced_or_restored_before_reading": dg.MetadataValue.json(restored),
                **extra,
            },
        )
        yield dg.Output(result.quarantine, output_name="quarantine")
        yield quarantine.result(quarantined, result.quarantine)
        reasons = result.quarantine.group_by("reason").len().sort("len", descending=True).head(10)
        yield dg.AssetCheckResult(
            asset_key=table,
            check_name="quarantine_share",
            passed=share <= max_quarantine_share,
            metadata={
                "quarantined_rows": result.quarantine.height,
                "share": float(share),
                "top_reasons": dg.MetadataValue.json(dict(reasons.iter_rows())),
            },
        )
        yield dg.AssetCheckResult(
            asset_key=table,
            check_name="records_accounted",
            passed=result.unaccounted == 0,
            description=f"{result.lines_in} records in {len(result.files)} files; {result.table.height} in the table, "
            f"{result.quarantine.height} quarantined ({result.unaccounted:+d} unaccounted)",
            metadata={"records": result.lines_in, "table_rows": result.table.height, "quarantined_rows": result.quarantine.height},
        )
        if optional_sources:
            yield _optional_sources_check(table, project, optional_sources, missing, result)
        for check in checks:
            outcome = check.evaluate(result.table)
            yield dg.AssetCheckResult(
                asset_key=table,
                check_name=check.name,
                passed=outcome.passed,
                severity=check.severity,
                description=outcome.description,
                metadata={k: dg.MetadataValue.json(v) if isinstance(v, (dict, list)) else v for k, v in outcome.metadata.items()},
            )

    return _ingest


def _optional_sources_table(project: ProjectPaths, optional: Sequence[str], missing: Sequence[Source]) -> str:
    """Markdown: each optional source, present or absent, and where an absent one goes."""
    absent = {s.name: s for s in missing}
    rows = [f"| {name} | absent: put it at `{absent[name].raw_path(project)}` ({absent[name].url}) |" if name in absent
            else f"| {name} | present |" for name in optional]
    return "| optional source | state |\n|---|---|\n" + "\n".join(rows)


def _optional_sources_check(
    table: str, project: ProjectPaths, optional: Sequence[str], missing: Sequence[Source], result: IngestResult
) -> dg.AssetCheckResult:
    """Passes when every optional source is present and the table has rows; fails with WARN severity, saying why, while one is
    absent (the default install: the table lacks its rows) or when they are present but the table is empty (every row
    quarantined, or a file holding none)."""
    present = [name for name in optional if name not in {s.name for s in missing}]
    absent = " / ".join(missing_message(s, project) for s in missing)
    if result.table.height:
        text = f"{table}: {result.table.height} rows from {', '.join(result.files)}" + (f"; without {absent}" if missing else "")
    elif not present:
        text = f"{table} is empty by design: {absent}"
    else:
        text = f"{table} is empty although {', '.join(present)} {'is' if len(present) == 1 else 'are'} present: see {quarantine_key(table)}"
    return dg.AssetCheckResult(
        asset_key=table,
        check_name="optional_sources_usable",
        passed=result.table.height > 0 and not missing,
        severity=dg.AssetCheckSeverity.WARN,
        description=text,
        metadata={"absent": dg.MetadataValue.json({s.name: str(s.raw_path(project)) for s in missing}),
                  "present": dg.MetadataValue.json(present)},
    )
