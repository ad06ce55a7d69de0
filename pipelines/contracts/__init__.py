"""Table contracts: every stored table (ingested, derived, figure data) declared once, as a dataframely Schema.

Each column has its type, constraints and a ``description=`` with its unit. Modules, one per layer:

* ``sources``: the ingested tables (Zeus traces, Alibaba groups, ITP, ElasticFlow, AcmeTrace,
  Zeus² profiles) and ``Quarantine``;
* ``clusters``: ``cluster_workload_jobs``, ``zeus_cluster_history``, ``zeus_cluster_summary``,
  ``zeus_single_job_sweep``;
* ``hetero``: ``hetero_allocations``;
* ``owncluster``: a user's own cluster traces, ``own_cluster_jobs`` and ``own_cluster_traces``;
* ``zeus``: the group table the replay reads and the runs it reports;
* ``measure``: a measured power profile (``raw/measured/*.csv``);
* ``figures``: the data written next to each figure;
* ``limits``: the physically sane bounds and text lengths the ingested and measured tables declare;
* ``base``: ``polars_schema``, ``empty``, ``descriptions``, ``conform``, ``split_valid``,
  ``validate``, ``one_of``, ``ContractError``;
* ``registry``: asset key -> contract (``table_contract``), figure name -> contract (``figure_contract``).

No module here imports Dagster or pandas.
"""
