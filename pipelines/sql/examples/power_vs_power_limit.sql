-- Average power draw against the power limit, per GPU and workload (optimizer and batch size averaged).
select
    gpu,
    dataset,
    power_limit as power_limit_w,
    round(avg(average_power), 1) as mean_power_w,
    round(avg(average_power / power_limit), 3) as mean_power_over_limit,
    round(avg(time_per_epoch), 1) as mean_time_per_epoch_s
from zeus_power_profiles
group by gpu, dataset, power_limit
order by gpu, dataset, power_limit;
