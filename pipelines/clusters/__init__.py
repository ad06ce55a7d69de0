"""Cluster traces joined to Zeus workloads (recurring groups, workload, runtime_ratio). No Dagster here."""
