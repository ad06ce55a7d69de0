"""Where the project's files live (the data home), atomic writes, the checks of a file a command writes, and ``gpu-energy init``."""
