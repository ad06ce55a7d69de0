"""Cluster traces as Zeus workloads: mapping, replay, cluster power, the knob-grid sweep and ``whatif``. No Dagster here."""
