"""Helpers shared by the tests and the benchmarks (bench/*.py import them as ``tests.support.*``).

* ``zeus_peer``: the published Zeus simulator (zeus==0.16.0) driven as the artifact's scripts drive it;
  ``zeus_scripts``: those scripts as one command (the peer of ``python -m pipelines simulate``);
* ``hetero_peer``: the published Zeus² allocation code (curve_fit fits, nested loops) and its vectorised oracle;
* ``sacct_export``: the package's generated Slurm export (``pipelines.clusters.example_export``) with the truth about what is in it;
* ``measure_fakes``: a fake NVML backend; ``sweep_inputs``: the sweep's input tables;
* ``figures``: what every rendered figure must satisfy;
* ``materialize``: data homes materialized in-process (the ``materialized`` fixture of tests/conftest.py).

Importing this package imports nothing heavy; each module imports what it needs.
"""
