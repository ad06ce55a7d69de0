"""The sensor that makes every trace present a ``trace`` partition, and each of yours an ``own_trace`` partition too (and
removes those of traces gone), and materializes a new or changed one."""

import dagster as dg

from pipelines.clusters import tracefiles
from pipelines.defs.clusters.partitions import OWN_TRACE_DIMENSION, TRACE_DIMENSION, own_trace_partitions, trace_partitions
from pipelines.defs.shared.io_manager import PathsResource
from pipelines.defs.shared.run_tags import by_sensor, launched_by
from pipelines.home.init import LOCATION
from pipelines.home.paths import default_mirror
from pipelines.terminal import printable
from pipelines.vocabulary import CLUSTER_TRACES

NAME = "cluster_traces_sensor"
#: Seconds between two looks at raw/clusters/ (the sidecars only: a file is hashed when its trace is ingested).
SENSOR_INTERVAL_S = 10
#: The run tag naming the trace a sensor run is for (namespaced, as Dagster's own ``dagster/...`` tags are).
TRACE_TAG = f"{LOCATION}/trace"


def _materialized_at(instance: dg.DagsterInstance, trace: str) -> float | None:
    """When ``cluster_workload_jobs`` was last materialized for ``trace`` (s since 1970), or None."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey("cluster_workload_jobs"), asset_partitions=[trace]), limit=1
    ).records
    return records[0].timestamp if records else None


#: What the sensor's runs of a public trace may materialize (each run selects the assets of one trace, ``tracefiles.plan_tick``).
SENSOR_TARGET = dg.AssetSelection.assets(
    *{dg.AssetKey.from_user_string(a) for a in ("cluster_workload_jobs", "cluster_capacity", *tracefiles.PUBLIC_RAW.values(),
                                               *(t for tables in tracefiles.PUBLIC_TABLES.values() for t in tables))}
)
#: The sensor's runs are runs of these jobs, named in the Runs list and the timeline (not an anonymous asset job): a public
#: trace's, and one of yours (a run holds one partitions definition; its jobs and cluster size follow by automation).
TRACE_INGEST_JOB = dg.define_asset_job("trace_ingest", selection=SENSOR_TARGET, run_tags=launched_by("ui"),
                                       description="One public trace's files ingested and its cluster_workload_jobs and "
                                       "cluster_capacity partitions (the runs of cluster_traces_sensor).")
OWN_TRACE_INGEST_JOB = dg.define_asset_job(
    "own_trace_ingest", selection=dg.AssetSelection.assets(*(dg.AssetKey.from_user_string(a) for a in tracefiles.USER_TRACE_ASSETS)),
    run_tags=launched_by("ui"), description="One of your traces (raw/clusters/) ingested: its own-trace partitions (the runs of "
    "cluster_traces_sensor); its cluster_workload_jobs partition and what reads it follow by their automation conditions.")


@dg.sensor(
    name=NAME,
    jobs=[TRACE_INGEST_JOB, OWN_TRACE_INGEST_JOB],
    minimum_interval_seconds=SENSOR_INTERVAL_S,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Watches raw/clusters/ (and the public traces' files): registers each trace present as a `trace` partition, "
    "removes the partitions of traces gone, and materializes a new or changed one; history, summaries, power and figures follow "
    "by their automation conditions.",
)
def cluster_traces_sensor(context: dg.SensorEvaluationContext, paths: PathsResource) -> dg.SensorResult:
    root = paths.paths()
    registered = set(context.instance.get_dynamic_partitions(TRACE_DIMENSION))
    own_registered = set(context.instance.get_dynamic_partitions(OWN_TRACE_DIMENSION))
    plan = tracefiles.plan_tick(root.raw, default_mirror(root.root), registered, lambda t: _materialized_at(context.instance, t))
    for problem in plan.problems:
        context.log.warning(f"raw/clusters: not used: {printable(problem)}")
    for trace in plan.remove:
        context.log.warning(f"trace {trace}: its files are gone or not usable; its partition is removed "
                            f"(`clusters remove {trace}` removes its stored tables)")
    requests = [
        dg.RunRequest(run_key=key, partition_key=trace, asset_selection=[dg.AssetKey.from_user_string(a) for a in assets],
                      job_name=(OWN_TRACE_INGEST_JOB if assets == tracefiles.USER_TRACE_ASSETS else TRACE_INGEST_JOB).name,
                      tags={TRACE_TAG: trace, **by_sensor(NAME)})
        for trace, key, assets in plan.runs
    ]
    yours = {t for t in registered | set(plan.add) if t not in plan.remove and t not in CLUSTER_TRACES}
    own_add, own_remove = sorted(yours - own_registered), sorted(own_registered - yours)
    if not requests and not plan.add and not own_add and not own_remove:
        return dg.SensorResult(skip_reason=f"no new or changed trace: {len(registered)} registered "
                               f"({', '.join(sorted(registered)) or 'none'}), each materialized since its files last changed")
    return dg.SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=[*([trace_partitions.build_add_request(plan.add)] if plan.add else []),
                                     *([trace_partitions.build_delete_request(plan.remove)] if plan.remove else []),
                                     *([own_trace_partitions.build_add_request(own_add)] if own_add else []),
                                     *([own_trace_partitions.build_delete_request(own_remove)] if own_remove else [])],
    )
