-- Energy Zeus would save on each ITP cluster on a V100, in MWh and %, against the Default configuration.
with per_cluster as (
    select
        cluster,
        sum(energy_j) filter (where policy = 'zeus') / 3.6e9 as zeus_mwh,
        sum(energy_j) filter (where policy = 'default') / 3.6e9 as default_mwh,
        sum(time_s) filter (where policy = 'zeus') / 3600 as zeus_hours,
        sum(time_s) filter (where policy = 'default') / 3600 as default_hours
    from zeus_cluster_history
    where trace = 'itp' and gpu = 'v100'
    group by cluster
)

select
    cluster,
    round(default_mwh, 3) as default_mwh,
    round(zeus_mwh, 3) as zeus_mwh,
    round(default_mwh - zeus_mwh, 3) as saved_mwh,
    round(100 * (1 - zeus_mwh / default_mwh), 1) as saved_pct,
    round(100 * (zeus_hours / default_hours - 1), 1) as time_change_pct
from per_cluster
order by saved_mwh desc;
