"""Zeus's trace-driven energy-optimization simulator: identical results to the published one, ~100-400x faster.

The published simulator is ``zeus._legacy.simulate.Simulator`` (PyPI ``zeus==0.16.0``, the NSDI '23
artifact); this package reproduces its output bit for bit (same batch sizes, power limits, reached
flags, float64 energies and times) without importing it. See ``tests/zeus/``.

A leaf: frames in, frames out. It imports nothing of the package but ``pipelines.vocabulary`` (the
workloads, policies), no Dagster and no zeus; reading files is ``pipelines.ingest.simulator_inputs``'s.
Public API:

    from pipelines.vocabulary import WORKLOADS, WORKLOAD_BY_DATASET, Job, POLICIES
    from pipelines.zeus.traces import from_frames, build_table
    from pipelines.zeus.single import simulate_single, runs_frame
    from pipelines.zeus.groups import replay_groups, group_job_spec
    from pipelines.zeus.reference import replay_group, group_seed
    from pipelines.zeus.policies import oracle_config
    from pipelines.ingest.simulator_inputs import read_trace_dir, read_materialized, read_group_file

    traces = read_trace_dir(Path("raw/zeus"))          # or read_materialized(paths.assets), from_frames(train, power)
    table = build_table(traces, "v100", Job("librispeech", "deepspeech2", "adamw", 40.0, 16, 192))
    runs = simulate_single(table, eta=0.5, beta=2.0, seed=1)       # list[JobRun]; runs_frame(runs) -> polars
    runs = simulate_single(table, 0.5, 2.0, 1, policy="grid-search")  # or "default", "oracle"
    best = oracle_config(table, eta=0.5)                # OracleChoice: hindsight-best config, expected J / s / cost
    frame = replay_groups(groups, traces, "v100", eta=0.5, beta=2.0, policy="zeus")

* ``traces``: the train and power traces as polars frames (``Traces``), per-(job, GPU) lookup tables
  (``WorkloadTable``: batch sizes, per batch size the power limits, per-epoch time and energy,
  JIT-profiling numbers and the runs' target epochs in trace order).
* ``single.simulate_single``: one job recurring back to back (``simulate_one_job``);
  ``num_recurrence`` defaults to 2 x |B| x |P|. Returns ``JobRun(job, bs, pl, energy J, time s, reached)``; a run's
  trace-driven outcome is ``job_runs.RunSampler``'s.
* ``groups.replay_groups``: recurring-job groups of a cluster trace (``simulate_one_alibaba_group``):
  input columns group, start_time, end_time, dataset, runtime_ratio; one row per reported run with
  group, job (trace job index in its group), start_time, end_time, bs, pl, energy, time, reached.
  Per-dataset job specs and seed = adler32(group id) as in the artifact's run_alibaba.py.
* ``policies``: Zeus (pruning Gaussian Thompson Sampling + JIT power limits) and the baselines
  Default (b0 at its maximum limit), Grid Search (every config once, then the cheapest that reached)
  and Oracle (lowest expected cost in hindsight). Every policy runs through the same simulation
  loops, so per-run histories of Zeus and the baselines are directly comparable.
* ``fast`` and ``kernels``: the group replay compiled with numba, the same runs bit for bit and the same
  errors; ``replay_groups(..., engine="auto"|"fast"|"reference")`` or ``$GPU_ENERGY_REPLAY`` chooses
  (auto: compiled from 150,000 job replays or once loaded). numba is imported only when the compiled replay runs.
* ``power_limit``: the limit Zeus's shipped GlobalPowerLimitOptimizer chooses from a profile (ZeusCost, Energy, Time,
  MaxSlowdownConstraint, as zeus 0.16.0's selectors); ``power_limit_replay``: recurring jobs run power-limit-only
  under it (profiling on a group's first job, then the chosen limit), per-job time and energy.
* ``errors.SimulationError``: raised where the published simulator raises (same message) or would
  never finish; ``traces.TraceError`` / ``groups.GroupTableError``: unusable input, with its location.
* The command line (``python -m pipelines simulate single|groups``, the artifact's run_single.py /
  run_alibaba.py) is ``pipelines.cli.simulate``.
* ``exact``: the numpy/pandas random draws and reductions the published results depend on, emulated.

Units: energy J, time s, power W; cost = eta x energy + (1 - eta) x MaxPower x time, MaxPower the
largest power limit in the GPU's trace.
"""
