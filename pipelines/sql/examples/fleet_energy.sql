-- Energy of Default vs Zeus per trace and GPU: the jobs alone and the fleet (jobs + the idle draw of the cluster's GPUs
-- without a job over the trace's window), and Zeus's saving on each basis (MWh, %).
select
    d.trace,
    d.gpu,
    d.cluster_gpus,
    d.gpu_idle_w,
    round(d.energy_j / 3.6e9, 1) as default_jobs_mwh,
    round(z.energy_j / 3.6e9, 1) as zeus_jobs_mwh,
    round(d.fleet_energy_j / 3.6e9, 1) as default_fleet_mwh,
    round(z.fleet_energy_j / 3.6e9, 1) as zeus_fleet_mwh,
    round(z.energy_saved_pct, 1) as zeus_saved_jobs_pct,
    round(z.fleet_energy_saved_pct, 1) as zeus_saved_fleet_pct
from cluster_power_summary d
join cluster_power_summary z on z.trace = d.trace and z.gpu = d.gpu and z.policy = 'zeus'
where d.policy = 'default'
order by d.trace, d.gpu;
