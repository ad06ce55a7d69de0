"""Measuring GPU (and CPU) energy of training: an NVML energy monitor, a RAPL reader, a torch profiling harness.

Nothing here imports Dagster, torch or pynvml at module import time: ``pynvml`` is imported by
``nvml.PynvmlBackend.init`` and torch by the harness functions, so the code location loads fast
on machines without either.

- ``nvml``: the NVML calls behind a small ``NvmlBackend`` protocol (real backend: pynvml).
- ``monitor``: named measurement windows over GPUs (energy counter, else polled power).
- ``polling``: the background power sampler and its trapezoid integral.
- ``counters``: deltas of wrapping / resetting energy counters (shared by NVML and RAPL).
- ``power_limit_scope``: set a GPU power limit for a block and restore the previous one.
- ``rapl``: CPU package energy from /sys/class/powercap.
- ``workloads``, ``networks``, ``harness``, ``cli``: the profiling harness (``python -m pipelines measure``).
- ``zeus_json``: a measured profile as the JSON Zeus's GlobalPowerLimitOptimizer loads (``profile_path``).
"""
