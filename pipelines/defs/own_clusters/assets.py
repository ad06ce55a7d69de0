"""A user's own cluster traces: their ingest from ``raw/clusters/`` (the sensor that makes each one a
partition is ``pipelines.defs.clusters.sensors``).

Thin wrappers: the readers are ``pipelines.ingest.slurm`` / ``joblog``, the files
``pipelines.clusters.tracefiles``.
"""

from collections.abc import Iterator

import dagster as dg
import polars as pl

from pipelines.clusters import tracefiles
from pipelines.contracts.base import empty
from pipelines.contracts.owncluster import OwnClusterJobs, OwnClusterTraces
from pipelines.defs.shared.io_manager import PathsResource
from pipelines.defs.shared.metadata import contract_metadata
from pipelines.ingest.common import empty_quarantine
from pipelines.ingest.owntrace import OwnTraceResult

TABLE = "own_cluster_jobs"
#: Above this share of quarantined rows a trace is flagged (a warning: a real export has some bad rows, the run goes on).
WARN_QUARANTINE_SHARE = 0.01


@dg.multi_asset(
    name="ingest_own_cluster_jobs",
    outs={
        TABLE: dg.AssetOut(key=dg.AssetKey(TABLE), group_name="ingest", kinds={"polars", "parquet"}, metadata=contract_metadata(TABLE),
                           description="Every allocation of your own cluster traces (raw/clusters/<name>.sacct or .csv), times in UTC; "
                           "pending, running and CPU-only ones included (category)."),
        "quarantine": dg.AssetOut(key=dg.AssetKey(["quarantine", TABLE]), group_name="quarantine", kinds={"polars", "parquet"},
                                  metadata=contract_metadata(f"quarantine/{TABLE}"),
                                  description="Rows of your trace files that failed parsing or validation: file, line, column, reason."),
        "own_cluster_traces": dg.AssetOut(key=dg.AssetKey("own_cluster_traces"), group_name="ingest", kinds={"polars", "parquet"},
                                          metadata=contract_metadata("own_cluster_traces"),
                                          description="One row per trace file: format, time zone, sha256 and where every line went."),
    },
    check_specs=[
        dg.AssetCheckSpec("every_line_accounted_for", asset=TABLE, blocking=True,
                          description="Per file: lines = header + allocations + steps skipped + quarantined."),
        dg.AssetCheckSpec("quarantine_share", asset=TABLE,
                          description=f"At most {WARN_QUARANTINE_SHARE:.0%} of a file's rows quarantined (a warning)."),
    ],
)
def ingest_own_cluster_jobs(context: dg.AssetExecutionContext, paths: PathsResource) -> Iterator[dg.Output | dg.AssetCheckResult]:
    traces, problems = tracefiles.user_traces(paths.paths().raw)
    for problem in problems:
        context.log.warning(f"raw/clusters: not used: {problem}")
    results: list[OwnTraceResult] = []
    for trace in traces:
        result = trace.read()
        if trace.recorded_sha256 and trace.recorded_sha256 != result.sha256:
            context.log.warning(f"{trace.source_file}: sha256 {result.sha256} differs from the one recorded by `clusters add` "
                                f"({trace.recorded_sha256}): the file was replaced by hand")
        context.log.info(f"{trace.source_file}: {result.counts}")
        results.append(result)
    summary = pl.concat([r.summary_row() for r in results]) if results else empty(OwnClusterTraces)
    table = pl.concat([r.table for r in results]) if results else empty(OwnClusterJobs)
    quarantine = pl.concat([r.quarantine for r in results]) if results else empty_quarantine()
    yield dg.Output(table, output_name=TABLE, metadata={"traces": dg.MetadataValue.json([t.name for t in traces]),
                                                       "not_used": dg.MetadataValue.json(problems)})
    yield dg.Output(quarantine, output_name="quarantine")
    yield dg.Output(summary, output_name="own_cluster_traces")
    counts = {r.trace: vars(r.counts) for r in results}
    yield dg.AssetCheckResult(asset_key=TABLE, check_name="every_line_accounted_for", passed=all(r.counts.accounted for r in results),
                              metadata={"counts": dg.MetadataValue.json(counts)})
    shares = {r.trace: r.counts.quarantined / max(1, r.counts.lines - r.counts.header_lines) for r in results}
    yield dg.AssetCheckResult(asset_key=TABLE, check_name="quarantine_share", severity=dg.AssetCheckSeverity.WARN,
                              passed=all(s <= WARN_QUARANTINE_SHARE for s in shares.values()),
                              metadata={"share_by_trace": dg.MetadataValue.json(shares)})
