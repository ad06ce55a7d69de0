-- Generated from the table registry (pipelines/contracts/registry.py) and the code location's partitions by
-- pipelines/sql/generate.py: do not edit; refresh with
--   GPU_ENERGY_UPDATE_SNAPSHOT=1 .venv/bin/python -m pytest -q tests/sql/test_views_layout.py
-- One view per asset over its Parquet. `assets` is a DuckDB variable holding the absolute path of
-- the assets folder: the Python entry point (python -m pipelines sql) and `make sql` set it first
-- (set variable assets = '/path/to/home/assets').
-- In-memory DuckDB over Parquet: an ad-hoc session never holds a lock a materialization needs.

-- zeus_train_runs: summary_train.csv: the epoch at which each training run first reached each target metric.
create or replace view zeus_train_runs as select * from read_parquet(getvariable('assets') || '/zeus_train_runs.parquet');

-- zeus_power_profiles: summary_power_{gpu}.csv of every GPU (and measured profiles): one epoch per (batch size, power limit).
create or replace view zeus_power_profiles as select * from read_parquet(getvariable('assets') || '/zeus_power_profiles.parquet');

-- power_limit_profiles: Zeus's own profiles dropped in raw/measured (ZeusMonitor logs, saved JSON), one row per limit.
create or replace view power_limit_profiles as select * from read_parquet(getvariable('assets') || '/power_limit_profiles.parquet');

-- alibaba_groups: alibaba_groups.csv.xz from the Zeus artifact: recurring Alibaba jobs mapped to Zeus workloads.
create or replace view alibaba_groups as select * from read_parquet(getvariable('assets') || '/alibaba_groups.parquet');

-- itp_jobs: Microsoft ITP raw traces (cluster01..10.csv).
create or replace view itp_jobs as select * from read_parquet(getvariable('assets') || '/itp_jobs.parquet');

-- elasticflow_jobs: ElasticFlow traces: ITP jobs plus synthetic model/batch/iteration/deadline labels.
create or replace view elasticflow_jobs as select * from read_parquet(getvariable('assets') || '/elasticflow_jobs.parquet');

-- acme_jobs: AcmeTrace job traces, Seren and Kalos in one schema (Kalos-only columns null for Seren).
create or replace view acme_jobs as select * from read_parquet(getvariable('assets') || '/acme_jobs.parquet');

-- acme_cluster_summary: AcmeTrace cluster_summary.csv: the published per-cluster statistics (times in s, rates in [0, 1]).
create or replace view acme_cluster_summary as select * from read_parquet(getvariable('assets') || '/acme_cluster_summary.parquet');

-- hetero_gpu_profiles: Zeus² profiles (``trace_aws/{workload}_{gpu}.json``): one row per (gpu, workload, batch size, power limit), file order.
create or replace view hetero_gpu_profiles as select * from read_parquet(getvariable('assets') || '/hetero_gpu_profiles.parquet');

-- cluster_workload_jobs: every cluster trace's jobs as recurring groups of Zeus workloads (docs: Cluster traces and replay).
create or replace view cluster_workload_jobs as select * from read_parquet(getvariable('assets') || '/cluster_workload_jobs/*.parquet', union_by_name = true);

-- zeus_cluster_history: one row per simulated run of Zeus, Default and Grid Search replaying a trace on a GPU.
create or replace view zeus_cluster_history as select * from read_parquet(getvariable('assets') || '/zeus_cluster_history/*.parquet', union_by_name = true);

-- zeus_cluster_summary: per trace, workload and GPU, each policy's energy and time and Zeus's savings.
create or replace view zeus_cluster_summary as select * from read_parquet(getvariable('assets') || '/zeus_cluster_summary/*.parquet', union_by_name = true);

-- grid_intensity: the per-region carbon intensity of electricity shipped in the package (``pipelines.ingest.grid``).
create or replace view grid_intensity as select * from read_parquet(getvariable('assets') || '/grid_intensity.parquet');

-- zeus_cluster_co2e: the public traces' replay (``zeus_cluster_summary``, every workload) in CO2e at each region's yearly intensity: per trace, GPU and region.
create or replace view zeus_cluster_co2e as select * from read_parquet(getvariable('assets') || '/zeus_cluster_co2e.parquet');

-- zeus_single_job_sweep: single recurring jobs under each policy, one row per recurrence, vs the Oracle.
create or replace view zeus_single_job_sweep as select * from read_parquet(getvariable('assets') || '/zeus_single_job_sweep/*.parquet', union_by_name = true);

-- hetero_allocations: per workload, each method's batch split and power limits, under both cost models.
create or replace view hetero_allocations as select * from read_parquet(getvariable('assets') || '/hetero_allocations.parquet');

-- cluster_power: Cluster power drawn by every run of a replay history, averaged over fixed time bins.
create or replace view cluster_power as select * from read_parquet(getvariable('assets') || '/cluster_power/*.parquet', union_by_name = true);

-- cluster_power_summary: Peak, p99 and mean cluster power per policy, time near Default's peak, and GPU headroom.
create or replace view cluster_power_summary as select * from read_parquet(getvariable('assets') || '/cluster_power_summary/*.parquet', union_by_name = true);

-- cluster_capacity: each trace's cluster size (GPUs), where it comes from, and the trace's peak concurrent GPUs.
create or replace view cluster_capacity as select * from read_parquet(getvariable('assets') || '/cluster_capacity/*.parquet', union_by_name = true);

-- fleet_power_cdf: AcmeTrace's measured CDFs over GPU-time (or node-time), 15 s DCGM/IPMI samples pooled over a cluster.
create or replace view fleet_power_cdf as select * from read_parquet(getvariable('assets') || '/fleet_power_cdf.parquet');

-- power_model_vs_measured: measured fleets (Seren, Kalos) and simulated ones, as distributions of per-GPU draw in % TDP.
create or replace view power_model_vs_measured as select * from read_parquet(getvariable('assets') || '/power_model_vs_measured.parquet');

-- zeus_knob_grid: per trace, GPU and knob setting, each policy's cluster-wide energy and time, and its saving vs Default.
create or replace view zeus_knob_grid as select * from read_parquet(getvariable('assets') || '/zeus_knob_grid/*.parquet', union_by_name = true);

-- own_cluster_jobs: one row per allocation (Slurm job, array element or het-job component) of a user trace.
create or replace view own_cluster_jobs as select * from read_parquet(getvariable('assets') || '/own_cluster_jobs/*.parquet', union_by_name = true);

-- own_cluster_traces: one row per user trace file, with the account of every one of its lines.
create or replace view own_cluster_traces as select * from read_parquet(getvariable('assets') || '/own_cluster_traces/*.parquet', union_by_name = true);

-- own_cluster_summary: per user trace, what ``whatif`` reports: a row per exported GPU type (or GPU) and the cluster's.
create or replace view own_cluster_summary as select * from read_parquet(getvariable('assets') || '/own_cluster_summary.parquet');

-- every quarantined row of every table: table, source_file, line, column, reason, raw (a partitioned table's: one file per partition)
create or replace view quarantine as select * from read_parquet(getvariable('assets') || '/quarantine/**/*.parquet', union_by_name = true);
