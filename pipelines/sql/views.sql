-- One view per asset over its Parquet. `assets` is a DuckDB variable holding the absolute path of
-- the assets folder: the Python entry point (python -m pipelines sql) and `make sql` set it first
-- (set variable assets = '/path/to/home/assets').
-- In-memory DuckDB over Parquet: an ad-hoc session never holds a lock a materialization needs.

-- ingest layer
create or replace view zeus_train_runs as select * from read_parquet(getvariable('assets') || '/zeus_train_runs.parquet');
create or replace view zeus_power_profiles as select * from read_parquet(getvariable('assets') || '/zeus_power_profiles.parquet');
-- Zeus's own profiles in raw/measured (ZeusMonitor logs, saved JSON): one row per file and power limit
create or replace view power_limit_profiles as select * from read_parquet(getvariable('assets') || '/power_limit_profiles.parquet');
create or replace view alibaba_groups as select * from read_parquet(getvariable('assets') || '/alibaba_groups.parquet');
create or replace view itp_jobs as select * from read_parquet(getvariable('assets') || '/itp_jobs.parquet');
create or replace view elasticflow_jobs as select * from read_parquet(getvariable('assets') || '/elasticflow_jobs.parquet');
create or replace view acme_jobs as select * from read_parquet(getvariable('assets') || '/acme_jobs.parquet');
create or replace view acme_cluster_summary as select * from read_parquet(getvariable('assets') || '/acme_cluster_summary.parquet');
create or replace view hetero_gpu_profiles as select * from read_parquet(getvariable('assets') || '/hetero_gpu_profiles.parquet');
-- AcmeTrace's measured distributions (CDF points: cluster, metric, point, x, cdf_pct)
create or replace view fleet_power_cdf as select * from read_parquet(getvariable('assets') || '/fleet_power_cdf.parquet');
-- your own cluster traces (raw/clusters/): every allocation, and one row per file with its line accounting
create or replace view own_cluster_jobs as select * from read_parquet(getvariable('assets') || '/own_cluster_jobs/*.parquet', union_by_name = true);
create or replace view own_cluster_traces as select * from read_parquet(getvariable('assets') || '/own_cluster_traces/*.parquet', union_by_name = true);
-- what whatif reports for each of them: a row per exported GPU type and the cluster's, medians with 90 % intervals
create or replace view own_cluster_summary as select * from read_parquet(getvariable('assets') || '/own_cluster_summary.parquet');

-- every quarantined row of every table: table, source_file, line, column, reason, raw (a partitioned table's: one file per partition)
create or replace view quarantine as select * from read_parquet(getvariable('assets') || '/quarantine/**/*.parquet', union_by_name = true);

-- cluster layer (partitioned assets: one Parquet file per partition)
create or replace view cluster_workload_jobs as select * from read_parquet(getvariable('assets') || '/cluster_workload_jobs/*.parquet', union_by_name = true);
create or replace view zeus_cluster_history as select * from read_parquet(getvariable('assets') || '/zeus_cluster_history/*.parquet', union_by_name = true);
create or replace view zeus_cluster_summary as select * from read_parquet(getvariable('assets') || '/zeus_cluster_summary/*.parquet', union_by_name = true);
create or replace view zeus_cluster_co2e as select * from read_parquet(getvariable('assets') || '/zeus_cluster_co2e.parquet');
create or replace view grid_intensity as select * from read_parquet(getvariable('assets') || '/grid_intensity.parquet');
create or replace view zeus_single_job_sweep as select * from read_parquet(getvariable('assets') || '/zeus_single_job_sweep/*.parquet', union_by_name = true);
create or replace view zeus_knob_grid as select * from read_parquet(getvariable('assets') || '/zeus_knob_grid/*.parquet', union_by_name = true);
create or replace view cluster_power as select * from read_parquet(getvariable('assets') || '/cluster_power/*.parquet', union_by_name = true);
create or replace view cluster_power_summary as select * from read_parquet(getvariable('assets') || '/cluster_power_summary/*.parquet', union_by_name = true);
create or replace view cluster_capacity as select * from read_parquet(getvariable('assets') || '/cluster_capacity/*.parquet', union_by_name = true);
-- simulated fleets against the measured ones: per-GPU draw in % TDP over GPU-time
create or replace view power_model_vs_measured as select * from read_parquet(getvariable('assets') || '/power_model_vs_measured.parquet');

-- hetero layer (Zeus²): one row per workload, method and cost model
create or replace view hetero_allocations as select * from read_parquet(getvariable('assets') || '/hetero_allocations.parquet');
