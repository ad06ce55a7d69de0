"""The operator's report of ``whatif`` (the numbers are ``pipelines.clusters.whatif``'s), in its three forms.

* ``text``: the report for a terminal (what ``gpu-energy whatif`` prints), and the unit-fitting
  energy and CO2e texts the other forms share.
* ``figures``: its figures (energy saved per GPU with its interval, sample 1's cluster power), each
  ``(Figure, data)`` in the package's theme.
* ``html``: the report as one self-contained HTML page (``whatif --html``, ``figures/own_cluster_report_<trace>.html``).

No Dagster here; matplotlib loads only when a figure is drawn.
"""
