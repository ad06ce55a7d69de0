"""The example Slurm export of the tests: the package's (``pipelines.clusters.example_export``, ``gpu-energy example-export``)."""

from pipelines.clusters.example_export import JOB_NAMES, Truth, write_export

__all__ = ["JOB_NAMES", "Truth", "write_export"]
