-- Zeus² on A10 + T4: each method's batch split and power limits, under the published cost
-- (sum over GPUs) and the synchronous data-parallel model; time in s, energy and cost in J.
select workload, model, method,
       batch_split, power_limits,
       round(time_s, 3) as time_s,
       round(energy_j, 1) as energy_j,
       round(cost, 2) as cost,
       round(sync_cost, 2) as sync_cost
from hetero_allocations
order by workload, model, method;
