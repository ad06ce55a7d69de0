-- Zeus's energy and time savings against Default and Grid Search, per trace and GPU (all workloads).
select
    trace,
    gpu,
    sum(jobs) as jobs,
    round(sum(energy_mwh_default), 2) as default_mwh,
    round(sum(energy_mwh_zeus), 2) as zeus_mwh,
    round(100 * (1 - sum(energy_j_zeus) / sum(energy_j_default)), 1) as energy_saved_vs_default_pct,
    round(100 * (1 - sum(time_s_zeus) / sum(time_s_default)), 1) as time_saved_vs_default_pct,
    round(100 * (1 - sum(energy_j_zeus) / sum(energy_j_grid_search)), 1) as energy_saved_vs_grid_search_pct
from zeus_cluster_summary
group by trace, gpu
order by trace, gpu;
