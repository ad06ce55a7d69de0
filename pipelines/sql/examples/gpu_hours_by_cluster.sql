-- GPU-hours and jobs per ITP cluster (the README's total: 1,632,719.7 GPU-hours, 69,351 jobs).
with per_cluster as (
    select
        cluster,
        count(*) as jobs,
        sum(duration * num_gpu) / 3600.0 as gpu_hours
    from itp_jobs
    group by cluster
)

select
    cluster,
    jobs,
    round(gpu_hours, 1) as gpu_hours,
    round(100.0 * gpu_hours / sum(gpu_hours) over (), 2) as gpu_hours_pct
from per_cluster
order by gpu_hours desc;
