-- Final-state shares of AcmeTrace GPU jobs, by job count and by GPU time (TIMEOUT and NODE_FAIL count as failed).
with gpu_jobs as (
    select
        cluster,
        case when state in ('TIMEOUT', 'NODE_FAIL') then 'FAILED' else state end as final_state,
        gpu_time as gpu_time_s
    from acme_jobs
    where gpu_num > 0
)

select
    cluster,
    final_state,
    count(*) as jobs,
    round(count(*) / sum(count(*)) over (partition by cluster), 3) as share_of_jobs,
    round(sum(gpu_time_s) / sum(sum(gpu_time_s)) over (partition by cluster), 3) as share_of_gpu_time
from gpu_jobs
group by cluster, final_state
order by cluster, final_state;
