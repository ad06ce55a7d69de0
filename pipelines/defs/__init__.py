"""Thin Dagster wrappers, one module per stage; every module here is loaded by pipelines.definitions."""
