-- Peak and p99 cluster power (kW) of Default vs Zeus per trace and GPU, and the GPUs each frees under Default's peak.
select
    d.trace,
    d.gpu,
    round(d.peak_kw, 0) as default_peak_kw,
    round(z.peak_kw, 0) as zeus_peak_kw,
    round(z.peak_vs_default_pct, 1) as zeus_peak_cut_pct,
    round(d.p99_kw, 0) as default_p99_kw,
    round(z.p99_kw, 0) as zeus_p99_kw,
    d.headroom_gpus as headroom_gpus_default_at_p99,
    z.headroom_gpus as headroom_gpus_zeus,
    z.headroom_gpus - d.headroom_gpus as added_by_zeus
from cluster_power_summary d
join cluster_power_summary z on z.trace = d.trace and z.gpu = d.gpu and z.policy = 'zeus'
where d.policy = 'default'
order by d.trace, d.gpu;
