"""A user's own cluster traces: their ingest from ``raw/clusters/``, one ``own_trace`` partition per trace of yours, a
partition space of their own (the public traces are none of its partitions; the sensor that makes each one a partition
is ``pipelines.defs.clusters.sensors``). What whatif reports on them:
``defs/clusters/own_cluster_summary.py`` and ``defs/figures/own_cluster_report.py``.

Thin wrappers: the readers are ``pipelines.ingest.slurm`` / ``joblog``, the files
``pipelines.clusters.tracefiles``.
"""

import functools
import operator
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import cast

import dagster as dg
import polars as pl

from pipelines.clusters import tracefiles
from pipelines.contracts.registry import quarantine_key
from pipelines.defs.clusters.partitions import own_trace_partitions
from pipelines.defs.shared import quarantine
from pipelines.defs.shared.io_manager import PARTITIONS_STAND_ALONE, PathsResource, partition_tables
from pipelines.defs.shared.metadata import contract_metadata
from pipelines.defs.shared.table_assets import FOLLOW, ONE_RUN
from pipelines.ingest.common import IngestError, empty_quarantine
from pipelines.ingest.own_cluster import OwnTraceResult
from pipelines.terminal import printable
from pipelines.vocabulary import CLUSTER_TRACES

TABLE = "own_cluster_jobs"
QUARANTINE = dg.AssetKey.from_user_string(quarantine_key(TABLE))
#: Above this share of quarantined rows a trace is flagged (a warning: a real export has some bad rows, the run goes on).
WARN_QUARANTINE_SHARE = 0.01


#: The own-trace tables: one partition per trace of yours, each standing alone (that of a trace that could not be read
#: may be absent; `materialize` ingests each trace in a run of its own).
OWN_TABLE = {PARTITIONS_STAND_ALONE: True}
#: A trace's replays: by trace (its jobs, cluster size and knob grid, in one run), then by trace x GPU (history, summary,
#: power and power summary, in one run: a run holds one partitions definition). What reads one of these, or the own-trace
#: tables, reads every trace.
TRACE_STAGE = ("cluster_workload_jobs", "cluster_capacity", "zeus_knob_grid")
TRACE_GPU_STAGE = ("zeus_cluster_history", "zeus_cluster_summary", "cluster_power", "cluster_power_summary")
TRACE_TABLES = frozenset((TABLE, "own_cluster_traces", QUARANTINE.to_user_string(), *TRACE_STAGE, *TRACE_GPU_STAGE))


def _matches(keys: tuple[str, ...], condition: dg.AutomationCondition) -> dg.AutomationCondition:
    """True while ``condition`` holds for a partition of any of ``keys``."""
    return functools.reduce(operator.or_, (dg.AutomationCondition.asset_matches(key, condition) for key in keys))


#: A trace's replays under way: a stage running, or one that has just ended (updated since the last evaluation), whose next
#: stage the automation requests in this same evaluation (a run of another partitions definition, which ``will_be_requested``
#: does not see). Each stage's last assets stand for it: they are planned when its run starts and written last. What reads
#: every trace waits for them, so that after a drop-in it follows in one run once the replays are done, not in a run after
#: each stage (issue 40 item 8). Only runs and fresh updates hold it: a stage that failed, or a trace of yours that could not
#: be read, holds nothing back for longer than one evaluation.
REPLAYS_PENDING = (
    _matches((TABLE,), dg.AutomationCondition.newly_updated())
    | _matches(TRACE_STAGE[1:], dg.AutomationCondition.in_progress() | dg.AutomationCondition.newly_updated())
    | _matches(TRACE_GPU_STAGE[-1:], dg.AutomationCondition.in_progress())
).with_label("a trace's replays pending")
#: What reads every trace: eager, except that a partition of the own-trace tables never materialized (a trace of yours that
#: could not be read) does not hold it back (it reads the partitions present), and not while a trace's replays are pending.
FOLLOW_ALL_TRACES = (dg.AutomationCondition.eager().replace(
    "any_deps_missing",
    dg.AutomationCondition.any_deps_missing().ignore(dg.AssetSelection.assets(TABLE, "own_cluster_traces", QUARANTINE)),
) & ~REPLAYS_PENDING).with_label("eager, once the replays are done")


def follow(inputs: Iterable[str]) -> dg.AutomationCondition:
    """How an unpartitioned asset reading ``inputs`` follows them: ``FOLLOW_ALL_TRACES`` when it reads every trace, else
    eager (``FOLLOW``)."""
    return FOLLOW_ALL_TRACES if TRACE_TABLES & set(inputs) else FOLLOW


def refused_partition(key: str, raw: Path) -> str:
    """Why the own-trace partition ``key`` has nothing to ingest (one line): a public trace's name, or no usable file."""
    if key in CLUSTER_TRACES:
        return (f"own trace {printable(key)}: a public trace, not one of yours (its tables are ingested from raw/ by the "
                "public traces' assets); this partition has no file to read: delete it")
    return (f"own trace {printable(key)}: no usable file {raw / 'clusters' / printable(key)}.sacct or .csv (see the 'not used' "
            f"lines; `python -m pipelines clusters add {printable(key)} FILE` adds one, `clusters remove` drops the trace)")


@dg.multi_asset(
    name="ingest_own_cluster_jobs",
    partitions_def=own_trace_partitions,
    backfill_policy=ONE_RUN,  # one backfill policy per job (Dagster warns otherwise); `materialize` runs a trace each (OWN_TABLE)
    outs={
        TABLE: dg.AssetOut(key=dg.AssetKey(TABLE), group_name="ingest", kinds={"polars", "parquet"},
                           metadata={**contract_metadata(TABLE), **OWN_TABLE},
                           description="Every allocation of your own cluster traces (`raw/clusters/<name>.sacct` or `.csv`), times in UTC; "
                           "pending, running and CPU-only ones included (category). One partition per trace."),
        "quarantine": dg.AssetOut(key=QUARANTINE, group_name="quarantine", kinds={"polars", "parquet"},
                                  metadata={**contract_metadata(QUARANTINE.to_user_string()), **OWN_TABLE},
                                  description="Rows of your trace files that failed parsing or validation: file, line, column, reason."),
        "own_cluster_traces": dg.AssetOut(key=dg.AssetKey("own_cluster_traces"), group_name="ingest", kinds={"polars", "parquet"},
                                          metadata={**contract_metadata("own_cluster_traces"), **OWN_TABLE},
                                          description="One row per trace file: format, time zone, sha256 and where every line went."),
    },
    check_specs=[
        quarantine.spec(QUARANTINE),
        dg.AssetCheckSpec("every_line_accounted_for", asset=TABLE, blocking=True,
                          description="Per file: lines = header + allocations + steps skipped + quarantined."),
        dg.AssetCheckSpec("quarantine_share", asset=TABLE,
                          description=f"At most {WARN_QUARANTINE_SHARE:.0%} of a file's rows quarantined. Warns when more are "
                                      "(the file's other rows are used; see quarantine/own_cluster_jobs_bad_rows)."),
    ],
)
def ingest_own_cluster_jobs(context: dg.AssetExecutionContext, paths: PathsResource) -> Iterator[dg.Output | dg.AssetCheckResult]:
    """Each partition of the run reads its own trace's file only: one that cannot be read fails its run, not another trace's,
    and a partition with no file (a key added by hand in the UI's launch dialog) fails its run, saying so in one line."""
    traces, problems = tracefiles.user_traces(paths.paths().raw)
    by_name = {t.name: t for t in traces}
    for problem in problems:
        context.log.warning(f"raw/clusters: not used: {printable(problem)}")
    tables: dict[str, pl.DataFrame] = {}
    quarantines: dict[str, pl.DataFrame] = {}
    summaries: dict[str, pl.DataFrame] = {}
    results: list[OwnTraceResult] = []
    for key in context.partition_keys:
        trace = by_name.get(key)
        if trace is None:
            raise ValueError(refused_partition(key, paths.paths().raw))
        try:
            result = trace.read()
            tracefiles.check_recorded_sha256(trace, cast(str, result.sha256))  # read with its digest
        except (IngestError, tracefiles.TraceFileError, OSError) as exc:
            raise ValueError(f"trace {key}: {printable(' '.join(str(exc).split()))}") from exc  # one line: `materialize` prints its first
        context.log.info(f"{trace.source_file}: {result.counts}")
        tables[key], quarantines[key], summaries[key] = result.table, result.quarantine, result.summary_row()
        results.append(result)
    yield dg.Output(partition_tables(context, tables, dg.AssetKey(TABLE)), output_name=TABLE,
                    metadata={"traces": dg.MetadataValue.json([r.trace for r in results]), "not_used": dg.MetadataValue.json(problems)})
    yield dg.Output(partition_tables(context, quarantines, QUARANTINE), output_name="quarantine")
    yield quarantine.result(QUARANTINE, pl.concat(quarantines.values()) if quarantines else empty_quarantine())
    yield dg.Output(partition_tables(context, summaries, dg.AssetKey("own_cluster_traces")), output_name="own_cluster_traces")
    counts = {r.trace: vars(r.counts) for r in results}
    yield dg.AssetCheckResult(asset_key=TABLE, check_name="every_line_accounted_for", passed=all(r.counts.accounted for r in results),
                              metadata={"counts": dg.MetadataValue.json(counts)})
    shares = {r.trace: r.counts.quarantined / max(1, r.counts.lines - r.counts.header_lines) for r in results}
    yield dg.AssetCheckResult(asset_key=TABLE, check_name="quarantine_share", severity=dg.AssetCheckSeverity.WARN,
                              passed=all(s <= WARN_QUARANTINE_SHARE for s in shares.values()),
                              metadata={"share_by_trace": dg.MetadataValue.json(shares)})
