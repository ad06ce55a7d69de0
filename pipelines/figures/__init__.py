"""Paper figures: plain functions ``frames -> (matplotlib Figure, data plotted)``, one theme, one writer.

Modules (no Dagster; matplotlib/seaborn load only when a figure is drawn):

* ``style``: the theme (seaborn whitegrid / paper / colorblind, print-size fonts), log-axis labels,
  and ``save_figure(fig, data, name, folder)`` writing ``<name>.png`` (200 dpi), ``.pdf`` and
  ``.parquet`` atomically. Every figure goes through it.
* ``energy_data``: expected TTA / ETA of every (batch size, power limit) per workload and GPU,
  Pareto front, Default, least-cost configurations vs eta (``config_expectations``,
  ``eta_sweep``, ``savings_vs_default``). ``energy``: the figures drawn from them.
* ``convergence``: Zeus vs Default vs Grid Search over recurrences, vs Oracle
  (runs ``pipelines.zeus``).
* ``trace_data`` / ``traces``: ITP, ElasticFlow, AcmeTrace and Alibaba jobs in one frame, their
  CDFs and submissions, AcmeTrace's published summary beside our own.
* ``cluster_power``: cluster power over time and its load-duration curve; ``fleet_power``: the
  measured fleets (AcmeTrace) beside the simulated ones, per-GPU draw in % TDP.
* ``catalog``: every figure, the tables it reads and the files it writes; ``pipelines/defs/figures/assets.py``
  turns it into Dagster assets (group ``figures``). Add new figures there.
* ``errors.NoData``: raised by a figure function with nothing to draw; the figure is then skipped
  with its reason, never drawn empty.
"""
