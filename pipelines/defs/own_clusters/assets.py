"""A user's own cluster traces: their ingest from ``raw/clusters/``, one ``trace`` partition per trace (the sensor
that makes each one a partition is ``pipelines.defs.clusters.sensors``), and the summaries over all of them.

Thin wrappers: the readers are ``pipelines.ingest.slurm`` / ``joblog``, the files
``pipelines.clusters.tracefiles``.
"""

import logging
from collections.abc import Iterator
from typing import Any, cast

import dagster as dg
import polars as pl

from pipelines.clusters import tracefiles, whatif
from pipelines.clusters.profiles import Profiles, profiles_of
from pipelines.clusters.whatif import DEFAULT_SAMPLES
from pipelines.contracts.base import empty
from pipelines.contracts.owncluster import OwnClusterJobs, OwnClusterSummary, OwnClusterTraces
from pipelines.contracts.registry import quarantine_key
from pipelines.defs.clusters.partitions import ONE_RUN, trace_partitions
from pipelines.defs.shared.dask import DaskResource
from pipelines.defs.shared.io_manager import PARTITIONS_STAND_ALONE, PathsResource, partition_tables
from pipelines.defs.shared.metadata import contract_metadata
from pipelines.ingest.common import IngestError, empty_quarantine
from pipelines.ingest.owntrace import OwnTraceResult
from pipelines.ingest.zeus import ZEUS_SOURCE
from pipelines.terminal import printable
from pipelines.vocabulary import CLUSTER_TRACES
from pipelines.zeus.traces import from_frames

TABLE = "own_cluster_jobs"
QUARANTINE = dg.AssetKey.from_user_string(quarantine_key(TABLE))
#: Above this share of quarantined rows a trace is flagged (a warning: a real export has some bad rows, the run goes on).
WARN_QUARANTINE_SHARE = 0.01


#: The own-trace tables: one partition per trace of yours, each standing alone (a public trace's partition has no rows, and
#: may be absent, as may that of a trace that could not be read; `materialize` ingests each trace in a run of its own).
OWN_TABLE = {PARTITIONS_STAND_ALONE: True}
#: Eager, except that a partition of the own-trace tables never materialized (a public trace's, or a trace of yours that
#: could not be read) does not hold back what reads them all: it reads the partitions present.
FOLLOW_OWN = dg.AutomationCondition.eager().replace(
    "any_deps_missing",
    dg.AutomationCondition.any_deps_missing().ignore(dg.AssetSelection.assets(TABLE, "own_cluster_traces", QUARANTINE)),
)


@dg.multi_asset(
    name="ingest_own_cluster_jobs",
    partitions_def=trace_partitions,
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
        dg.AssetCheckSpec("every_line_accounted_for", asset=TABLE, blocking=True,
                          description="Per file: lines = header + allocations + steps skipped + quarantined."),
        dg.AssetCheckSpec("quarantine_share", asset=TABLE,
                          description=f"At most {WARN_QUARANTINE_SHARE:.0%} of a file's rows quarantined. Warns when more are "
                                      "(the file's other rows are used; see quarantine/own_cluster_jobs_bad_rows)."),
    ],
)
def ingest_own_cluster_jobs(context: dg.AssetExecutionContext, paths: PathsResource) -> Iterator[dg.Output | dg.AssetCheckResult]:
    """Each trace partition of the run reads its own file only: one that cannot be read fails its run, not another trace's."""
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
            if key not in CLUSTER_TRACES:
                raise ValueError(f"trace {key}: no usable file in raw/clusters/ (see the 'not used' lines); "
                                 f"`clusters remove {key}` drops the trace")
            context.log.info(f"trace {key}: a public trace, no file of yours: no rows")
            tables[key], quarantines[key], summaries[key] = empty(OwnClusterJobs), empty_quarantine(), empty(OwnClusterTraces)
            continue
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
    yield dg.Output(partition_tables(context, summaries, dg.AssetKey("own_cluster_traces")), output_name="own_cluster_traces")
    counts = {r.trace: vars(r.counts) for r in results}
    yield dg.AssetCheckResult(asset_key=TABLE, check_name="every_line_accounted_for", passed=all(r.counts.accounted for r in results),
                              metadata={"counts": dg.MetadataValue.json(counts)})
    shares = {r.trace: r.counts.quarantined / max(1, r.counts.lines - r.counts.header_lines) for r in results}
    yield dg.AssetCheckResult(asset_key=TABLE, check_name="quarantine_share", severity=dg.AssetCheckSeverity.WARN,
                              passed=all(s <= WARN_QUARANTINE_SHARE for s in shares.values()),
                              metadata={"share_by_trace": dg.MetadataValue.json(shares)})


def stored_profiles(zeus_train_runs: pl.DataFrame, zeus_power_profiles: pl.DataFrame) -> Profiles:
    """The GPU profiles of the stored Zeus tables, the measured ones (raw/measured) named so, as ``whatif --profiles`` reads them."""
    return profiles_of(from_frames(zeus_train_runs, zeus_power_profiles),
                       {g: "measured" for g in zeus_power_profiles.filter(pl.col("source") != ZEUS_SOURCE)["gpu"].unique()})


def replayable(own_cluster_traces: pl.DataFrame, own_cluster_jobs: pl.DataFrame,
               log: logging.Logger) -> Iterator[tuple[dict[str, Any], OwnTraceResult]]:
    """(``own_cluster_traces`` row, the trace as read) of every trace with a COMPLETED GPU job; the others named in ``log``."""
    for trace in own_cluster_traces.iter_rows(named=True):
        result = whatif.result_of(trace, own_cluster_jobs)
        if result.counts.completed_gpu_allocations == 0:
            log.warning(f"trace {trace['trace']}: no COMPLETED GPU job to replay")
            continue
        yield trace, result


#: Draws behind the summaries' medians and intervals (whatif's default), and their base seed.
SUMMARY_SAMPLES = DEFAULT_SAMPLES
SUMMARY_SEED = 0


@dg.asset(
    group_name="clusters",
    automation_condition=FOLLOW_OWN,
    kinds={"polars", "parquet", "dask"},
    metadata=contract_metadata("own_cluster_summary"),
    # In the step's process by default (the samples of a trace are quick); configure the run's resource
    # (resources: samples_dask: config: scheduler: local, or tcp://...) for a large trace. A key of its own: the
    # knob grid's "dask" defaults to a LocalCluster.
    resource_defs={"samples_dask": DaskResource(scheduler="none")},
    description=f"What `whatif` reports for each of your traces, as exported: a row per exported GPU type (its own profile, "
    f"else the V100) and the cluster's; medians over {SUMMARY_SAMPLES} samples of the workload assignment and the optimizer's "
    "seeds with 90 % intervals, and the scheduler's measured energy against the model where exported.",
)
def own_cluster_summary(
    context: dg.AssetExecutionContext,
    samples_dask: DaskResource,
    own_cluster_jobs: pl.DataFrame,
    own_cluster_traces: pl.DataFrame,
    zeus_train_runs: pl.DataFrame,
    zeus_power_profiles: pl.DataFrame,
) -> dg.Output[pl.DataFrame]:
    profiles = stored_profiles(zeus_train_runs, zeus_power_profiles)
    options = whatif.Options(samples=SUMMARY_SAMPLES, seed=SUMMARY_SEED)
    frames = []
    preview: dict[str, dict[str, object]] = {}
    with samples_dask.runner() as runner:
        for trace, result in replayable(own_cluster_traces, own_cluster_jobs, context.log):
            report, _ = whatif.run(result, profiles, options, runner)
            frames.append(whatif.summary_frame(report))
            total = report.get("total") or next(iter(report["gpus"].values()))
            preview[trace["trace"]] = {k: total.get(k) for k in ("energy_saved_pct", "energy_saved_pct_interval", "energy_saved_kwh",
                                                                 "energy_saved_kwh_interval")}
    table = pl.concat(frames) if frames else empty(OwnClusterSummary)
    return dg.Output(table, metadata={"energy_saved": dg.MetadataValue.json(preview), "rows": table.height})
