"""DuckDB over the materialized Parquet: ``views.sql`` (one view per table), example queries, and the connection."""
