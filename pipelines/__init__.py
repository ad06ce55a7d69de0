"""GPU-energy research pipelines: Zeus traces, cluster traces, energy simulation, NVML measurement.

Domain modules (``ingest``, ``zeus``, ``hetero``, ``measure``, ``figures``) import no Dagster;
``pipelines.defs`` wires them into assets, and ``pipelines.definitions`` is the code location.
"""
