"""Readers: upstream files -> (typed table, quarantine). No Dagster here."""
